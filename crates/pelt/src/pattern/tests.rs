use super::*;
use expect_test::{Expect, expect};

fn check_err(input: &str, expect: Expect) {
    let err = parse_duration_ns(input).unwrap_err();
    expect.assert_eq(&err.to_string());
}

fn check_pattern_err(input: &str, expect: Expect) {
    let err = input.parse::<Pattern>().unwrap_err();
    expect.assert_eq(&err.to_string());
}

#[test]
fn durations() {
    assert_eq!(parse_duration_ns("4ms"), Ok(4_000_000));
    assert_eq!(parse_duration_ns("1s"), Ok(1_000_000_000));
    assert_eq!(parse_duration_ns("250us"), Ok(250_000));
    assert_eq!(parse_duration_ns("1024ns"), Ok(1024));
    assert_eq!(parse_duration_ns(" 12 ms "), Ok(12_000_000));
    assert_eq!(parse_duration_ns("1.5ms"), Ok(1_500_000));
    assert_eq!(parse_duration_ns("0.000001s"), Ok(1_000));
    assert_eq!(parse_duration_ns("2.500us"), Ok(2_500));
    assert_eq!(parse_duration_ns("3.ms"), Ok(3_000_000));
    assert_eq!(parse_duration_ns("0ms"), Ok(0));
    assert_eq!(parse_duration_ns("18446744073709551615ns"), Ok(u64::MAX));
}

#[test]
fn duration_errors() {
    check_err(
        "",
        expect!["empty duration (expected a number with a unit: ns, us, ms or s)"],
    );
    check_err(
        "ms",
        expect!["`ms` is not a duration (expected a number with a unit: ns, us, ms or s)"],
    );
    check_err(
        "-4ms",
        expect!["`-4ms` is not a duration (expected a number with a unit: ns, us, ms or s)"],
    );
    check_err(
        "1.2.3ms",
        expect!["`1.2.3ms` is not a duration (expected a number with a unit: ns, us, ms or s)"],
    );
    check_err("12", expect!["`12` has no unit (use ns, us, ms or s)"]);
    check_err(
        "12min",
        expect!["`12min` has unknown unit `min` (use ns, us, ms or s)"],
    );
    check_err(
        "1.5ns",
        expect!["`1.5ns` is not a whole number of nanoseconds"],
    );
    check_err(
        "1.0001us",
        expect!["`1.0001us` is not a whole number of nanoseconds"],
    );
    check_err(
        "18446744073709551616ns",
        expect!["`18446744073709551616ns` is too long (more than 2^64 - 1 ns)"],
    );
    check_err(
        "18446744074s",
        expect!["`18446744074s` is too long (more than 2^64 - 1 ns)"],
    );
}

#[test]
fn patterns() {
    assert_eq!("always".parse::<Pattern>(), Ok(Pattern::Always));
    let p: Pattern = "run=4ms,sleep=12ms".parse().unwrap();
    assert_eq!(
        p,
        Pattern::Cycle(vec![
            PatternItem {
                phase: Phase::Run,
                duration_ns: 4_000_000
            },
            PatternItem {
                phase: Phase::Sleep,
                duration_ns: 12_000_000
            },
        ])
    );
    assert_eq!(p.to_string(), "run=4ms,sleep=12ms");
    let p: Pattern = " sleep = 1500us , run=1s,run=7ns".parse().unwrap();
    assert_eq!(p.to_string(), "sleep=1500us,run=1s,run=7ns");
}

#[test]
fn pattern_errors() {
    check_pattern_err(
        "",
        expect!["empty pattern (expected `always` or a list like `run=4ms,sleep=12ms`)"],
    );
    check_pattern_err(
        "run=4ms,nap=2ms",
        expect!["item 2 `nap=2ms` is not `run=DURATION` or `sleep=DURATION`"],
    );
    check_pattern_err(
        "run4ms",
        expect!["item 1 `run4ms` is not `run=DURATION` or `sleep=DURATION`"],
    );
    check_pattern_err(
        "run=4ms,",
        expect!["item 2 `` is not `run=DURATION` or `sleep=DURATION`"],
    );
    check_pattern_err(
        "run=4,sleep=1ms",
        expect!["item 1 `run=4`: `4` has no unit (use ns, us, ms or s)"],
    );
    check_pattern_err(
        "run=4ms,sleep=0s",
        expect!["item 2 `sleep=0s`: the duration must be greater than zero"],
    );
    check_pattern_err(
        "Always",
        expect!["item 1 `Always` is not `run=DURATION` or `sleep=DURATION`"],
    );
}

#[test]
fn cursor_walks_phase_changes() {
    let p: Pattern = "run=1ms,run=2ms,sleep=3ms,run=4ms".parse().unwrap();
    let mut c = PhaseCursor::new(&p);
    assert_eq!((c.phase, c.next_change), (Phase::Run, 3_000_000));
    c.advance();
    assert_eq!((c.phase, c.next_change), (Phase::Sleep, 6_000_000));
    c.advance();
    // run=4ms, then the cycle restarts with run=1ms,run=2ms: 7 ms of running.
    assert_eq!((c.phase, c.next_change), (Phase::Run, 13_000_000));
    c.advance();
    assert_eq!((c.phase, c.next_change), (Phase::Sleep, 16_000_000));

    let always = PhaseCursor::new(&Pattern::Always);
    assert_eq!((always.phase, always.next_change), (Phase::Run, u64::MAX));
    let p: Pattern = "sleep=1ms,sleep=2ms".parse().unwrap();
    let c = PhaseCursor::new(&p);
    assert_eq!((c.phase, c.next_change), (Phase::Sleep, u64::MAX));
}

#[test]
fn format_durations() {
    assert_eq!(format_duration_ns(0), "0ns");
    assert_eq!(format_duration_ns(1_500_000), "1500us");
    assert_eq!(format_duration_ns(2_000_000_000), "2s");
    assert_eq!(format_duration_ns(1024), "1024ns");
}
