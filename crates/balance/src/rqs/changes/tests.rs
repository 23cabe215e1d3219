use super::{CHANGE_LOG_LEN, ChangeLog, ChangePos};

/// The flag a runqueue's mark sets in these tests, beside another bit that flush() keeps.
const FLAG: u8 = 8;
const OTHER: u8 = 1;

/// Marks `cpus` (as the runqueues' mutable borrows do) and flushes them into the log.
fn log_cpus(
    log: &mut ChangeLog,
    flags: &mut [u8],
    cpus: impl IntoIterator<Item = u32>,
) -> ChangePos {
    for c in cpus {
        flags[c as usize] |= FLAG;
        log.marked.push(c);
    }
    log.flush(flags, FLAG)
}

/// What `between(from, to)` reports: the CPUs logged, or `None` if it cannot tell.
fn between(log: &ChangeLog, from: ChangePos, to: ChangePos) -> Option<Vec<u32>> {
    let mut seen = Vec::new();
    log.between(from, to, |c| seen.push(c)).then_some(seen)
}

/// Invariant (rqs/changes.rs): between two positions the log gives back every CPU logged,
/// in order and with repeats, while the ring still holds them all (exactly
/// [`CHANGE_LOG_LEN`] entries back at most), and says it cannot otherwise: a position that
/// fell out of the ring, positions in the wrong order, or one past the log's end.
#[test]
fn between_holds_the_last_ring_of_changes_and_no_more() {
    let mut log = ChangeLog::default();
    let mut flags = vec![OTHER; 1000];
    let p0 = log_cpus(&mut log, &mut flags, []);
    assert_eq!(between(&log, p0, p0), Some(vec![]));

    let ring: Vec<u32> = (0..CHANGE_LOG_LEN as u32).map(|i| i % 7).collect();
    let p1 = log_cpus(&mut log, &mut flags, ring.iter().copied());
    assert!(
        flags.iter().all(|&f| f == OTHER),
        "flush() clears the flag only"
    );
    assert_eq!(
        between(&log, p0, p1),
        Some(ring),
        "a whole ring back, with repeats"
    );

    let p2 = log_cpus(&mut log, &mut flags, [999]);
    assert_eq!(between(&log, p0, p2), None, "p0 fell out of the ring");
    assert_eq!(between(&log, p0, p1), None, "p0 fell out of the ring");
    assert_eq!(between(&log, p1, p2), Some(vec![999]));

    let p3 = log_cpus(&mut log, &mut flags, 0..600);
    assert_eq!(between(&log, p2, p3), None, "600 changes overflow the ring");
    assert_eq!(between(&log, p3, p3), Some(vec![]));
    assert_eq!(between(&log, p3, p2), None, "positions in the wrong order");
    assert_eq!(
        between(&log, p3, ChangePos(p3.0 + 1)),
        None,
        "a position past the end"
    );
}
