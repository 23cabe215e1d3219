use std::path::Path;

use super::*;
use crate::driver::corpus;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The seed corpus is what it says: every hand-written seed parses (so a mutation starts from
/// valid input, and a parser that starts refusing valid input fails here), and some of the
/// `sim` target's byte seeds draw a scenario that runs.
#[test]
fn every_target_accepts_its_seeds() {
    for t in TARGETS {
        let seeds = corpus::load(root(), t.name).unwrap();
        assert!(seeds.len() >= 2, "{}: too few seeds", t.name);
        let accepted = seeds.iter().filter(|s| (t.run)(s)).count();
        if t.name == "sim" {
            assert!(accepted >= 1, "sim: no seed ran");
        } else {
            assert_eq!(accepted, seeds.len(), "{}: a seed was refused", t.name);
        }
    }
}

/// Inputs that would open files are skipped, not parsed.
#[test]
fn paths_are_not_opened() {
    assert!(!topology(b"/dev/stdin"));
    assert!(!topology(b"machine.toml"));
    assert!(!workload(b"rtapp:/dev/stdin"));
    assert!(!workload(b"trace:/dev/stdin"));
    assert!(!scenario(b"topology = \"/dev/stdin\""));
    assert!(!scenario(b"cost = \"costs\""));
}

#[test]
fn names_are_unique_and_found() {
    for t in TARGETS {
        assert_eq!(target(t.name).map(|f| f.name), Some(t.name));
    }
    assert!(target("nope").is_none());
}

/// A workload within the default budget but over the fuzz budget is refused before any task
/// is built (found as a 30 s "timeout" of the debug driver: 695,536 periodic threads).
#[test]
fn workloads_over_the_fuzz_budget_are_refused_at_once() {
    assert!(!workload(b"periodic:threads=695536,run=1ms,period=8ms"));
    assert!(!scenario(
        b"topology = \"hikey\"\nworkloads = [\"periodic:threads=695536,run=1ms,period=8ms\"]\n"
    ));
    assert!(workload(b"periodic:threads=20000,run=1ms,period=8ms"));
}
