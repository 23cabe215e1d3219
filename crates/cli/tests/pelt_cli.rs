//! `lbsim pelt` end to end: output snapshots and error handling.

use std::process::{Command, Output};

use expect_test::{Expect, expect};

fn lbsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lbsim"))
        .args(args)
        .output()
        .expect("run lbsim")
}

fn check_ok(args: &[&str], expect: Expect) {
    let out = lbsim(args);
    assert!(
        out.status.success(),
        "lbsim {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stderr.is_empty());
    expect.assert_eq(&String::from_utf8(out.stdout).unwrap());
}

fn check_err(args: &[&str], expect: Expect) {
    let out = lbsim(args);
    assert_eq!(out.status.code(), Some(2), "lbsim {args:?} must exit 2");
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    expect.assert_eq(&stderr);
}

#[test]
fn quarter_duty_cycle_csv() {
    check_ok(
        &[
            "pelt",
            "--pattern",
            "run=4ms,sleep=12ms",
            "--duration",
            "40ms",
            "--step",
            "2ms",
        ],
        expect![[r#"
            time_ns,util_avg,runnable_avg,load_avg,util_sum,runnable_sum,load_sum,period_contrib,util_est
            0,0,0,0,0,0,0,0,0
            2000000,41,41,41,1977344,1977344,1931,929,0
            4000000,81,81,81,3864711,3864711,3774,834,41
            6000000,77,77,77,3700859,3700859,3613,739,41
            8000000,74,74,74,3543954,3543954,3459,644,41
            10000000,71,71,71,3393701,3393701,3312,549,41
            12000000,68,68,68,3249819,3249819,3171,454,41
            14000000,66,66,66,3112037,3112037,3036,359,41
            16000000,63,63,63,2980096,2980096,2907,265,41
            18000000,102,102,102,4796277,4796277,4680,170,41
            20000000,139,139,139,6531362,6531362,6374,75,102
            22000000,133,133,133,6391408,6391408,6237,1004,102
            24000000,128,128,128,6120433,6120433,5972,909,102
            26000000,123,123,123,5860946,5860946,5718,814,102
            28000000,118,118,118,5612461,5612461,5475,719,102
            30000000,113,113,113,5374511,5374511,5242,624,102
            32000000,108,108,108,5146649,5146649,5019,530,102
            34000000,145,145,145,6883263,6883263,6715,435,102
            36000000,181,181,181,8542155,8542155,8335,340,145
            38000000,174,174,174,8179995,8179995,7981,245,145
            40000000,167,167,166,7833190,7833190,7642,150,145
        "#]],
    );
}

#[test]
fn new_task_json() {
    check_ok(
        &[
            "pelt",
            "--pattern",
            "run=1ms,sleep=1ms",
            "--duration",
            "3ms",
            "--format",
            "json",
            "--new-task",
        ],
        expect![[r#"
            [
            {"time_ns":0,"util_avg":512,"runnable_avg":512,"load_avg":1024,"util_sum":23919616,"runnable_sum":23919616,"load_sum":46718,"period_contrib":0,"util_est":0},
            {"time_ns":1000000,"util_avg":512,"runnable_avg":512,"load_avg":1024,"util_sum":24919040,"runnable_sum":24919040,"load_sum":47694,"period_contrib":976,"util_est":512},
            {"time_ns":2000000,"util_avg":511,"runnable_avg":511,"load_avg":1003,"util_sum":24385076,"runnable_sum":24385076,"load_sum":46672,"period_contrib":929,"util_est":512},
            {"time_ns":3000000,"util_avg":522,"runnable_avg":522,"load_avg":1003,"util_sum":24858906,"runnable_sum":24858906,"load_sum":46644,"period_contrib":881,"util_est":512}
            ]
        "#]],
    );
}

#[test]
fn little_cpu_light_task() {
    check_ok(
        &[
            "pelt",
            "--pattern",
            "always",
            "--duration",
            "5ms",
            "--capacity",
            "512",
            "--weight",
            "15",
        ],
        expect![[r#"
            time_ns,util_avg,runnable_avg,load_avg,util_sum,runnable_sum,load_sum,period_contrib,util_est
            0,0,0,0,0,0,0,0,0
            1000000,0,0,0,499712,499712,488,488,0
            2000000,0,0,0,999424,999424,976,976,0
            3000000,31,31,0,1475672,1475672,1441,440,0
            4000000,31,31,0,1976408,1976408,1930,929,0
            5000000,51,51,0,2430697,2430697,2373,393,0
        "#]],
    );
}

#[test]
fn errors_name_the_bad_part() {
    check_err(
        &["pelt", "--pattern", "run=4,sleep=1ms", "--duration", "1ms"],
        expect![[r#"
            lbsim: error: --pattern `run=4,sleep=1ms`: item 1 `run=4`: `4` has no unit (use ns, us, ms or s)
        "#]],
    );
    check_err(
        &["pelt", "--pattern", "always", "--duration", "1h"],
        expect![[r#"
        lbsim: error: --duration `1h`: `1h` has unknown unit `h` (use ns, us, ms or s)
    "#]],
    );
    check_err(
        &[
            "pelt",
            "--pattern",
            "always",
            "--duration",
            "1ms",
            "--step",
            "0ms",
        ],
        expect![[r#"
        lbsim: error: --step `0ms`: the step must be greater than zero
    "#]],
    );
    check_err(
        &[
            "pelt",
            "--pattern",
            "always",
            "--duration",
            "1ms",
            "--weight",
            "0",
        ],
        expect![[r#"
        lbsim: error: --weight: weight 0 is out of range (expected 1 to 1048576)
    "#]],
    );
    check_err(
        &[
            "pelt",
            "--pattern",
            "always",
            "--duration",
            "1ms",
            "--capacity",
            "2048",
        ],
        expect![[r#"
        lbsim: error: --capacity: capacity 2048 is out of range (expected 1 to 1024)
    "#]],
    );
    check_err(
        &[
            "pelt",
            "--pattern",
            "always",
            "--duration",
            "1ms",
            "--format",
            "xml",
        ],
        expect![[r#"
        lbsim: error: --format `xml`: expected csv or json
    "#]],
    );
    check_err(
        &["pelt", "--pattern", "run=1ms,nap=2ms", "--duration", "1ms"],
        expect![[r#"
        lbsim: error: --pattern `run=1ms,nap=2ms`: item 2 `nap=2ms` is not `run=DURATION` or `sleep=DURATION`
    "#]],
    );
    check_err(
        &[
            "pelt",
            "--pattern",
            "run=0ms,sleep=1ms",
            "--duration",
            "1ms",
        ],
        expect![[r#"
        lbsim: error: --pattern `run=0ms,sleep=1ms`: item 1 `run=0ms`: the duration must be greater than zero
    "#]],
    );
}
