//! The runqueues' summaries across the writes that do not mark a CPU.

use lbsim_topology::CpuId;

use super::{Rqs, SpanSums};
use crate::lb::harness::World;

/// Every domain span of `w`'s machine with its sums, read through `rqs`.
fn all_sums(w: &World, rqs: &Rqs) -> Vec<SpanSums> {
    let mut v = Vec::new();
    for c in 0..w.topo.nr_cpus() {
        for sd in w.topo.domains(CpuId(c as u32)) {
            v.extend(rqs.span_sums(&w.topo, &w.tasks, sd.span, false));
        }
    }
    v
}

/// The sums of `w`'s runqueues built afresh, from a copy that has never been read.
fn fresh_sums(w: &World) -> Vec<SpanSums> {
    let copy = Rqs::new(w.rqs.iter().cloned().collect());
    all_sums(w, &copy)
}

/// Invariant (rqs.rs): the writes that do not mark a CPU (its clocks, `next_balance`,
/// `max_idle_balance_cost`, a capacity written again unchanged) leave the group sums equal to
/// sums built afresh and log no change; a changed capacity reaches the sums and the log.
#[test]
fn unmarked_writes_leave_the_sums_as_built_afresh() {
    let mut w = World::new("nodes=2,cores=8,threads=2");
    for c in [0, 1, 1, 5, 17, 17, 17] {
        w.spawn(c, None);
    }
    w.run_ticks(30);
    assert_eq!(all_sums(&w, &w.rqs), fresh_sums(&w), "sums as built");
    let cap = w.rqs[17].cpu_capacity();
    let before = w.rqs.change_pos();

    // An idle CPU and a busy one, as the nohz idle balancer and rebalance_domains() write them.
    for cpu in [3, 17] {
        let later = w.now + 5_000_000;
        w.rqs.update_rq_clock(cpu, later);
        w.rqs.set_next_balance(cpu, 12_345);
        w.rqs.set_max_idle_balance_cost(cpu, 777_000);
        let same = w.rqs[cpu].cpu_capacity();
        w.rqs.update_cpu_capacity(cpu, same);
    }
    assert_eq!(w.rqs[3].next_balance(), 12_345, "the writes happened");
    assert_eq!(w.rqs[17].max_idle_balance_cost(), 777_000);
    let after = w.rqs.change_pos();
    let mut logged = Vec::new();
    assert!(w.rqs.changed_between(before, after, |c| logged.push(c)));
    assert_eq!(logged, Vec::<u32>::new(), "nothing a summary reads changed");
    assert_eq!(
        all_sums(&w, &w.rqs),
        fresh_sums(&w),
        "after the unmarked writes"
    );

    // rt pressure: the capacity left to CFS drops, which the sums count as reduced.
    let reduced_before: u32 = all_sums(&w, &w.rqs).iter().map(|s| s.reduced_cpus).sum();
    w.rqs.update_cpu_capacity(17, cap / 2);
    let after_cap = w.rqs.change_pos();
    let mut logged = Vec::new();
    assert!(w.rqs.changed_between(after, after_cap, |c| logged.push(c)));
    assert_eq!(logged, vec![17], "a changed capacity is logged");
    let sums = all_sums(&w, &w.rqs);
    assert_eq!(sums, fresh_sums(&w), "after a capacity change");
    assert!(
        sums.iter().map(|s| s.reduced_cpus).sum::<u32>() > reduced_before,
        "the reduced capacity reached the sums"
    );
}
