use super::*;

fn s(median: f64) -> Summary {
    Summary::of(&[median]).unwrap()
}

fn measured() -> Measured {
    Measured {
        local_wake_syscall: s(400.0),
        pinned_round_trip: s(6_000.0),
        cross_busy_round_trip: Some(s(36_000.0)),
        cross_idle_round_trip: Some(s(10_000.0)),
        idle_entries: Some((900, 100)),
    }
}

fn value(d: &[Derived], param: &str) -> Option<u64> {
    d.iter().find(|x| x.param == param).map(|x| x.value_ns)
}

#[test]
fn summary_uses_nearest_rank_and_drops_non_finite() {
    let v: Vec<f64> = (1..=100).rev().map(f64::from).chain([f64::NAN]).collect();
    let m = Summary::of(&v).unwrap();
    assert_eq!(m.samples, 100);
    assert_eq!(
        (m.min, m.p10, m.median, m.p90, m.p99, m.max),
        (1.0, 10.0, 50.0, 90.0, 99.0, 100.0)
    );
    assert_eq!(m.mean, 50.5);
    let one = Summary::of(&[7.0]).unwrap();
    assert_eq!((one.p10, one.median, one.p99), (7.0, 7.0, 7.0));
    assert_eq!(Summary::of(&[f64::INFINITY]), None);
    assert_eq!(Summary::of(&[]), None);
}

#[test]
fn each_parameter_makes_the_models_round_trip_equal_the_median() {
    let (d, missing) = derive(&measured());
    let wake = value(&d, "cost_wakeup_ns").unwrap();
    let switch = value(&d, "cost_context_switch_ns").unwrap();
    let ipi = value(&d, "cost_ipi_ns").unwrap();
    let poll = value(&d, "cost_poll_wake_ns").unwrap();
    assert_eq!((wake, switch, ipi, poll), (400, 2_600, 15_000, 2_000));
    // The model's expressions give back the medians.
    assert_eq!(2 * (wake + switch), 6_000);
    assert_eq!(2 * (wake + ipi + switch), 36_000);
    assert_eq!(2 * (wake + poll + switch), 10_000);
    // Balancing work is never derived; every cost parameter is one or the other.
    assert_eq!(missing.len(), 5);
    let mut all: Vec<&str> = d
        .iter()
        .map(|x| x.param)
        .chain(missing.iter().map(|m| m.param))
        .collect();
    all.sort_unstable();
    let mut defs: Vec<&str> = crate::cost::COST_PARAMS.iter().map(|p| p.name).collect();
    defs.sort_unstable();
    assert_eq!(all, defs);
    assert!(d.iter().all(|x| x.note.is_none()));
}

#[test]
fn negative_results_are_zero_with_a_note() {
    let m = Measured {
        pinned_round_trip: s(600.0),
        ..measured()
    };
    let (d, _) = derive(&m);
    assert_eq!(value(&d, "cost_context_switch_ns"), Some(0));
    let note = d
        .iter()
        .find(|x| x.param == "cost_context_switch_ns")
        .unwrap()
        .note
        .clone()
        .unwrap();
    assert!(note.contains("-100 ns, below 0"), "{note}");
}

#[test]
fn poll_wake_needs_a_target_that_polled() {
    let why = |entries| {
        let (d, missing) = derive(&Measured {
            idle_entries: entries,
            ..measured()
        });
        assert_eq!(value(&d, "cost_poll_wake_ns"), None);
        missing
            .into_iter()
            .find(|m| m.param == "cost_poll_wake_ns")
            .unwrap()
            .why
    };
    assert!(why(Some((0, 0))).contains("entered no idle state"));
    assert!(why(Some((10, 90))).contains("90 of 100 entries"));
    assert!(why(None).contains("not readable"));
    let one_cpu = Measured {
        cross_busy_round_trip: None,
        cross_idle_round_trip: None,
        ..measured()
    };
    let (d, missing) = derive(&one_cpu);
    assert_eq!(d.len(), 2);
    assert!(
        missing
            .iter()
            .any(|m| m.param == "cost_ipi_ns" && m.why.contains("one CPU"))
    );
}
