use super::*;
use crate::params::LbFeat;

#[test]
fn task_count_difference_follows_the_kernels_normalisation() {
    // Equal core counts: the plain difference, never negative.
    assert_eq!(task_count_difference(4, 4, 3, 1), 2);
    assert_eq!(task_count_difference(4, 4, 2, 1), 1);
    assert_eq!(task_count_difference(4, 4, 1, 3), 0);
    // 4 busiest cores with 3 tasks against 2 local cores with 1 task:
    // (2 * (2 * 3 - 4 * 1) + 2 + 4) / 6 = 10 / 6 = 1.
    assert_eq!(task_count_difference(4, 2, 3, 1), 1);
    // An empty local group facing two tasks is offered 2 even where the per-core
    // difference rounds to 1: (2 * (1 * 2 - 4 * 0) + 5) / 5 = 9 / 5 = 1 -> 2.
    assert_eq!(task_count_difference(4, 1, 2, 0), 2);
    // ... but not facing a single task.
    assert_eq!(task_count_difference(4, 1, 1, 0), 1);
}

/// Rule 7 (detach_tasks never empties the source for an idle destination), directed: the
/// engine rarely leaves a CPU with queued tasks and nothing running while an idle CPU
/// balances against it, so the random suites cannot be relied on to reach it.
///
/// Two NUMA nodes of two CPUs: CPU 0 runs three always-running tasks and CPU 1 two, so
/// node 0 is overloaded; node 1 is idle. CPU 0's running task is put back as the stopper
/// does (nothing runs on CPU 0, three tasks queued). CPU 2's idle balance at the NUMA level
/// has a has_spare local group facing an overloaded busiest group across LLCs: migrate_util
/// with an imbalance of node 1's whole spare capacity, more than CPU 0's tasks' utilization.
/// detach_tasks takes tasks while they fit, but must leave CPU 0 its last one.
#[test]
fn an_idle_destination_leaves_the_source_its_last_task() {
    use crate::lb::harness::World;
    use crate::lb::{CpuIdleType, Pass, load_balance};

    let mut w = World::new("nodes=2,cores=2");
    for _ in 0..3 {
        w.spawn(0, None);
    }
    for _ in 0..2 {
        w.spawn(1, None);
    }
    w.run_ticks(100);
    // Failed balances make cache-hot tasks movable (nr_balance_failed > cache_nice_tries).
    let level = w.level(2, "NUMA");
    w.st.sd_mut(CpuId(2), level).nr_balance_failed = 10;
    {
        let r = &mut w.rqs[0];
        let curr = r.curr.expect("CPU 0 runs a task");
        r.put_prev_task_fair(&mut w.tasks, curr);
        r.context_switch(&mut w.tasks, None);
    }
    assert_eq!((w.rqs[0].nr_running, w.rqs[0].curr), (3, None));
    w.st.checks.enabled = true;
    let now = w.now;
    let (mut ctx, st) = w.split();
    assert!(ctx.features.enabled(LbFeat::LbUtilSkipSingle));
    let mut pass = Pass::new(now);
    let mut cont = true;
    let moved = load_balance(
        &mut ctx,
        st,
        CpuId(2),
        level,
        CpuIdleType::Idle,
        &mut cont,
        &mut pass,
    );
    let checks = &w.st.checks;
    assert_eq!(checks.first_violation, None);
    assert_eq!(
        checks.counts.migration_types[MigrationType::Util.index()],
        1
    );
    assert!(moved >= 1, "the idle node pulls");
    assert_eq!(w.rqs[0].nr_running, 1, "CPU 0 keeps its last task");
    assert_eq!(checks.counts.detach_kept_last, 1);
}

/// [`Rule::LegacyBusiestQueue`], directed: the rule holds for a CPU of the busiest group
/// and is broken by the destination itself, by a CPU of another group, by a CPU outside
/// `env->cpus` and by a negative imbalance (the random suites only see the first).
#[test]
fn the_legacy_busiest_queue_is_a_cpu_of_the_busiest_group() {
    use crate::lb::harness::World;
    use lbsim_topology::SpanId;

    let mut w = World::new("nodes=2,cores=2");
    let level = w.level(2, "NUMA");
    let (ctx, _) = w.split();
    let sd = &ctx.topo.domains(CpuId(2))[level];
    // The NUMA level's groups of CPU 2: node 1 (local, CPUs 2-3) and node 0 (CPUs 0-1).
    let remote: SpanId = ctx
        .topo
        .groups(sd)
        .map(|g| g.span)
        .find(|&s| ctx.topo.span(s).test(CpuId(0)))
        .expect("node 0's group");
    let local = ctx.topo.local_group(sd).span;
    let env = LbEnv::new(ctx.topo, CpuId(2), level, CpuIdleType::Idle);
    let check = |env: &LbEnv, span, busiest| {
        let mut c = Checks {
            enabled: true,
            ..Checks::default()
        };
        c.legacy_busiest_queue(&ctx, env, span, busiest, 0);
        assert_eq!(c.counts.legacy_busiest_queues, 1);
        c.first_violation.map(|v| v.rule)
    };
    assert_eq!(check(&env, remote, CpuId(1)), None);
    let broken = Some(Rule::LegacyBusiestQueue);
    assert_eq!(check(&env, remote, CpuId(3)), broken, "outside the group");
    assert_eq!(check(&env, local, CpuId(2)), broken, "the destination");
    let mut narrow = env.clone();
    narrow.cpus.clear(CpuId(1));
    assert_eq!(
        check(&narrow, remote, CpuId(1)),
        broken,
        "outside env->cpus"
    );
    let mut negative = env.clone();
    negative.imbalance = -1;
    assert_eq!(
        check(&negative, remote, CpuId(1)),
        broken,
        "negative imbalance"
    );
}
