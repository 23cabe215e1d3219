use super::*;
use crate::cost::derive::{Measured, derive};

fn profile() -> CostProfile {
    let s = |x: f64| Summary::of(&[x, x + 10.0, x + 20.0]).unwrap();
    let (derived, not_derived) = derive(&Measured {
        local_wake_syscall: s(400.0),
        pinned_round_trip: s(6_000.0),
        cross_busy_round_trip: Some(s(36_000.0)),
        cross_idle_round_trip: Some(s(10_000.0)),
        idle_entries: Some((0, 0)),
    });
    CostProfile {
        notes: vec!["a \"quoted\" note".to_owned()],
        derived,
        not_derived,
        machine: vec![
            ("cpu_model", toml::Value::String("AMD EPYC".to_owned())),
            ("load_1min", toml::Value::Float(7.25)),
        ],
        figures: vec![Figure {
            key: "pinned_round_trip",
            what: "round trip".to_owned(),
            method: "futex ping-pong".to_owned(),
            summary: s(6_000.0),
            extra: vec![("cpus", toml::Value::Array(vec![toml::Value::Integer(0)]))],
        }],
        cpuidle_states: vec![vec![("name", toml::Value::String("POLL".to_owned()))]],
    }
}

#[test]
fn what_calibrate_writes_loads_back() {
    let text = profile().to_toml();
    let loaded = parse(&text).unwrap();
    assert_eq!(
        loaded.values,
        [
            ("cost_context_switch_ns", 2_595),
            ("cost_ipi_ns", 15_000),
            ("cost_wakeup_ns", 410),
        ]
    );
    let mut c = CostModel::default();
    loaded.apply(&mut c);
    assert_eq!(
        (c.wakeup_ns, c.context_switch_ns, c.ipi_ns),
        (410, 2_595, 15_000)
    );
    assert_eq!(c.poll_wake_ns, CostModel::default().poll_wake_ns);
    assert!(
        text.contains("[derivations.cost_poll_wake_ns]\nnot_derived = "),
        "{text}"
    );
    assert!(
        text.contains(
            "# = pinned_round_trip / 2 - cost_wakeup_ns\ncost_context_switch_ns = 2595\n"
        )
    );
}

fn check_err(text: &str, expected: &str) {
    assert_eq!(parse(text).unwrap_err().to_string(), expected);
}

#[test]
fn refusals_name_the_line_and_the_key() {
    check_err(
        "[cost]\ncost_ipi_ns = 1\ncost_bogus = 3\n",
        "line 3: key `cost.cost_bogus`: unknown parameter `cost_bogus`; did you mean `cost_ipi_ns` or `cost_lb_cpu_ns`?",
    );
    check_err(
        "[cost]\n\ncost_ipi_ns = -4\n",
        "line 3: key `cost.cost_ipi_ns`: invalid value `-4` for `cost_ipi_ns`: expected an integer (0..=1000000000 ns)",
    );
    check_err(
        "[cost]\ncost_ipi_ns = 1e3\n",
        "line 2: key `cost.cost_ipi_ns`: expected an integer number of ns, found a float",
    );
    check_err(
        "[cost]\ncost_ipi_ns = 2000000000\n",
        "line 2: key `cost.cost_ipi_ns`: `cost_ipi_ns=2000000000` is out of range: expected 0..=1000000000 ns",
    );
    check_err(
        "format = 2\n[cost]\n",
        "line 1: key `format`: expected 1 (the format this lbsim reads)",
    );
    check_err(
        "[machine]\ncpu = \"x\"\n",
        "line 1: key `cost`: missing: a cost profile needs a [cost] table of cost-model parameters",
    );
    check_err(
        "cost = 3\n",
        "line 1: key `cost`: expected a table, found an integer",
    );
    check_err(
        "[cost]\n[figures]\nx = 1\n",
        "line 3: key `figures.x`: expected a table, found an integer",
    );
    check_err(
        "[cost]\n\n[extra]\n",
        "line 3: key `extra`: unknown key (valid: format, notes, cost, machine, derivations, figures, cpuidle_states)",
    );
    check_err(
        "[cost]\ncost_ipi_ns = \n",
        "line 2: not valid TOML: string values must be quoted, expected literal string",
    );
    check_err(
        "cpuidle_states = [1]\n[cost]\n",
        "line 1: key `cpuidle_states`: expected an array of tables",
    );
    assert_eq!(parse("[cost]\n").unwrap().values, []);
}
