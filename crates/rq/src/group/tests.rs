//! Task groups on one runqueue: the tree's declarations, and the hierarchy's bookkeeping and
//! fairness driven by a small tick-and-schedule harness (as the engine drives a runqueue).

use std::sync::Arc;

use lbsim_topology::{CpuId, Cpumask};

use super::*;
use crate::entity::DequeueFlags;
use crate::params::default_features;
use crate::rq::{PrevAction, Rq};
use crate::task::{Policy, Task};
use crate::tunables::{SchedParams, Tunables};

#[test]
fn tree_declarations() {
    let mut t = TaskGroupTree::default();
    assert!(t.is_empty());
    let b = t.declare("/a/b", 300).unwrap();
    // The parent is created with cgroup v2's default weight.
    let a = t.find("/a").unwrap();
    assert_eq!((a, b), (1, 2));
    assert_eq!(t.parent[b as usize], a);
    assert_eq!(t.depth[b as usize], 2);
    assert_eq!(t.cpu_weight[a as usize], 100);
    assert_eq!(t.shares[a as usize], 1 << 20);
    // sched_weight_from_cgroup(300) = 300 * 1024 / 100 scaled.
    assert_eq!(t.shares[b as usize], (300 * 1024 / 100) << 10);
    assert_eq!(t.find("//a//b/"), Some(b));
    assert_eq!(t.get_or_insert("/a/b").unwrap(), b);
    assert!(matches!(
        t.declare("a", 100),
        Err(TaskGroupError::BadPath { .. })
    ));
    assert!(matches!(
        t.declare("/x", 0),
        Err(TaskGroupError::BadWeight { .. })
    ));
    assert!(matches!(
        t.declare("/x", 10_001),
        Err(TaskGroupError::BadWeight { .. })
    ));
    assert!(matches!(
        t.declare("/", 100),
        Err(TaskGroupError::BadPath { .. })
    ));
}

/// One CPU with task groups, its tasks and time.
struct Harness {
    rq: Rq,
    tasks: Tasks,
    tree: Arc<TaskGroupTree>,
    now: u64,
    tick: u64,
}

impl Harness {
    fn new(groups: &[(&str, u64)]) -> Harness {
        let params = SchedParams::new(default_features(), &Tunables::new(1));
        let mut tree = TaskGroupTree::default();
        for (path, w) in groups {
            tree.declare(path, *w).unwrap();
        }
        let tree = Arc::new(tree);
        let mut rq = Rq::new(CpuId(0), 1024, params);
        rq.set_task_groups(Arc::clone(&tree), tree.shared());
        for g in 1..tree.len() as u32 {
            rq.online_fair_sched_group(g, 0);
        }
        Harness {
            rq,
            tasks: Tasks::with_key(),
            tree,
            now: 0,
            tick: params.tick_nsec,
        }
    }

    fn spawn(&mut self, group: &str) -> TaskId {
        let base = self.rq.params.base_slice_ns;
        let mut t = Task::new("t", Policy::Normal, 0, Cpumask::full(1), CpuId(0), base);
        t.tg = self.tree.find(group).unwrap();
        let p = self.tasks.insert(t);
        self.rq.wake_up_new_task(&mut self.tasks, p, self.now);
        self.resched_if_needed();
        self.check();
        p
    }

    fn check(&self) {
        self.rq.check_invariants(&self.tasks).unwrap();
    }

    fn resched_if_needed(&mut self) {
        if self.rq.need_resched() || self.rq.curr.is_none() {
            self.rq
                .schedule(&mut self.tasks, PrevAction::Preempt, self.now);
        }
    }

    /// Run `ns`, ticking and scheduling as the engine would, checking after every step.
    fn run(&mut self, ns: u64) {
        let end = self.now + ns;
        while self.now < end {
            self.now += self.tick;
            self.rq.sched_tick(&mut self.tasks, self.now);
            self.resched_if_needed();
            self.check();
        }
    }

    fn runtime(&self, ps: &[TaskId]) -> u64 {
        ps.iter().map(|&p| self.tasks[p].se.sum_exec_runtime).sum()
    }
}

/// online_fair_sched_group() attaches each group entity at set-up, so a group's first fork
/// reaches the root once: through the propagation into the (attached) group entity, not a
/// second time by that entity's first enqueue (`DO_ATTACH`). Before it, the root's util_avg
/// was twice the task's at t=0.
#[test]
fn a_groups_first_fork_reaches_the_root_once() {
    let mut h = Harness::new(&[("/a", 100), ("/a/b", 100)]);
    let (a, b) = (h.tree.find("/a").unwrap(), h.tree.find("/a/b").unwrap());
    for g in [a, b] {
        let se = h.rq.task_groups().unwrap().se(g);
        assert_ne!(
            se.avg.last_update_time, 0,
            "group {g} entity attached at online"
        );
        // attach_entity_load_avg() of an empty average: load_sum 1, nothing else.
        assert_eq!((se.avg.load_sum, se.avg.util_sum), (1, 0));
    }
    let p = h.spawn("/a/b");
    let task = h.tasks[p].se.avg;
    assert!(task.util_avg > 0);
    let groups = h.rq.task_groups().unwrap();
    let (se_a, se_b) = (groups.se(a).avg, groups.se(b).avg);
    let root = h.rq.cfs.avg.avg;
    assert_eq!(se_b.util_avg, task.util_avg);
    assert_eq!(se_a.util_avg, task.util_avg);
    assert_eq!(
        root.util_avg, task.util_avg,
        "root util_avg counts the task once"
    );
    assert_eq!(root.util_sum, se_a.util_sum);
    assert_eq!(groups.cfs_rq(a).avg.avg.util_sum, se_b.util_sum);
}

#[test]
fn two_groups_share_one_cpu_by_weight() {
    let mut h = Harness::new(&[("/a", 100), ("/b", 300)]);
    let a: Vec<_> = (0..2).map(|_| h.spawn("/a")).collect();
    let b: Vec<_> = (0..4).map(|_| h.spawn("/b")).collect();
    h.run(100_000_000);
    let (start_a, start_b) = (h.runtime(&a), h.runtime(&b));
    h.run(2_000_000_000);
    let (ra, rb) = (h.runtime(&a) - start_a, h.runtime(&b) - start_b);
    let share_b = rb as f64 / (ra + rb) as f64;
    // One CPU: each group entity's weight is its whole tg->shares, 1024 vs 3072.
    assert!((share_b - 0.75).abs() < 0.02, "group b got {share_b:.3}");
    let g = h.rq.task_groups().unwrap();
    assert_eq!(g.se_weight_scaled(1), 1024 << 10);
    assert_eq!(g.se_weight_scaled(2), 3072 << 10);
    // Within a group, its tasks share equally.
    let per: Vec<u64> = b.iter().map(|&p| h.tasks[p].se.sum_exec_runtime).collect();
    let (lo, hi) = (per.iter().min().unwrap(), per.iter().max().unwrap());
    assert!((hi - lo) * 10 < *hi, "b's tasks ran {per:?}");
}

#[test]
fn nested_groups_count_and_leave() {
    let mut h = Harness::new(&[("/a/x", 100), ("/a/y", 100), ("/b", 100)]);
    let x = h.spawn("/a/x");
    let y = h.spawn("/a/y");
    let r = h.spawn("/");
    h.run(50_000_000);
    let a = h.tree.find("/a").unwrap();
    let g = h.rq.task_groups().unwrap();
    assert_eq!(h.rq.cfs.h_nr_running, 3);
    assert_eq!(g.cfs_rq(a).h_nr_running, 2);
    assert_eq!(g.cfs_rq(a).nr_running, 2, "two group entities");
    assert_eq!(
        h.rq.cfs.nr_running, 2,
        "group /a's entity and the root task"
    );
    assert_eq!(
        h.rq.cfs.cfs_tasks().len(),
        3,
        "rq->cfs_tasks holds the tasks only"
    );
    // /a's two children each weigh its whole share on one CPU; /a weighs 1024 at the root,
    // so the root task gets half, x and y a quarter each.
    let before: Vec<u64> = [x, y, r]
        .iter()
        .map(|&p| h.tasks[p].se.sum_exec_runtime)
        .collect();
    h.run(1_000_000_000);
    let ran: Vec<u64> = [x, y, r]
        .iter()
        .zip(&before)
        .map(|(&p, b)| h.tasks[p].se.sum_exec_runtime - b)
        .collect();
    let total: u64 = ran.iter().sum();
    let share_r = ran[2] as f64 / total as f64;
    assert!(
        (share_r - 0.5).abs() < 0.03,
        "the root task got {share_r:.3} ({ran:?})"
    );
    // Everything leaves: the counts unwind and no group entity stays queued.
    for p in [x, y, r] {
        if h.rq.curr == Some(p) {
            h.rq.schedule(&mut h.tasks, PrevAction::Exit, h.now);
        } else {
            h.rq.update_rq_clock(h.now);
            h.rq.dequeue_task(&mut h.tasks, p, DequeueFlags::SPECIAL | DequeueFlags::SLEEP);
            h.tasks[p].on_rq = crate::task::OnRq::No;
        }
        h.check();
    }
    assert_eq!(h.rq.nr_running, 0);
    assert_eq!(h.rq.cfs.h_nr_running, 0);
    assert!(!h.rq.task_groups().unwrap().se(a).on_rq);
}

#[test]
fn blocked_group_load_decays_and_leaves_the_leaf_list() {
    let mut h = Harness::new(&[("/a", 100)]);
    let p = h.spawn("/a");
    h.run(200_000_000);
    let g = h.rq.task_groups().unwrap();
    assert!(g.on_list[1]);
    assert!(g.cfs_rq(1).avg.avg.load_avg > 900);
    assert!(h.rq.cpu_load() > 900, "the group's load reached the root");
    assert!(h.rq.task_h_load(&h.tasks, p) > 900);
    // The task exits; its removed load leaves the group cfs_rq, and the blocked-load passes
    // decay the group entity and the root until the group cfs_rq leaves the leaf list.
    h.rq.schedule(&mut h.tasks, PrevAction::Exit, h.now);
    h.rq.task_dead_fair(&mut h.tasks, p, h.now);
    for _ in 0..2000 {
        h.now += h.tick;
        h.rq.update_blocked_averages(&mut h.tasks, h.now);
    }
    let g = h.rq.task_groups().unwrap();
    assert_eq!(g.cfs_rq(1).avg.avg.load_avg, 0);
    assert!(!g.on_list[1], "a decayed group cfs_rq leaves the leaf list");
    assert_eq!(h.rq.cpu_load(), 0);
}

#[test]
fn autogroups_in_the_tree() {
    use super::autogroup::{autogroup_shares, autogroup_task_group};
    let mut t = TaskGroupTree::default();
    let c = t.declare("/autogroup-1", 300).unwrap();
    // autogroup_create(): a child of the root; nice 0 is NICE_0_LOAD scaled.
    let a = t.autogroup_create(1, 0).unwrap();
    assert_ne!(a, c);
    assert_eq!((t.parent[a as usize], t.depth[a as usize]), (0, 1));
    assert_eq!(t.shares[a as usize], 1024 << 10);
    assert_eq!(t.paths[a as usize], "/autogroup-1");
    // A cgroup path never names an autogroup (a cgroup may be called /autogroup-1 too).
    assert_eq!(t.find("/autogroup-1"), Some(c));
    assert_eq!(t.find_autogroup(1), Some(a));
    assert_eq!(t.find_autogroup(2), None);
    assert_eq!(
        t.get_or_insert("/autogroup-1/x")
            .map(|g| t.parent[g as usize]),
        Ok(c)
    );
    // proc_sched_autogroup_set_nice(): scale_load(sched_prio_to_weight[nice + 20]).
    assert_eq!(autogroup_shares(1, 5), Ok(335 << 10));
    assert_eq!(autogroup_shares(1, -20), Ok(88761 << 10));
    assert_eq!(autogroup_shares(1, 19), Ok(15 << 10));
    for (id, nice) in [(1, 20), (1, -21), (0, 0)] {
        assert!(matches!(
            autogroup_shares(id, nice),
            Err(TaskGroupError::BadAutogroupNice { .. })
        ));
    }
    let b = t.autogroup_create(2, 5).unwrap();
    assert_eq!(t.shares[b as usize], 335 << 10);
    // autogroup_task_group(): only a task in the root cgroup, only when enabled.
    assert_eq!(autogroup_task_group(true, 0, Some(a)), a);
    assert_eq!(autogroup_task_group(false, 0, Some(a)), 0);
    assert_eq!(autogroup_task_group(true, c, Some(a)), c);
    assert_eq!(autogroup_task_group(true, 0, None), 0);
}

/// sched_move_task() of the running task, of a queued one and of a sleeping one: each leaves
/// the counts and weights consistent (`check_invariants()` after every step), takes its
/// PELT load from the old group's cfs_rq to the new one's (detach, attach, propagate), and
/// the CPU is then shared by the new groups' weights.
#[test]
fn tasks_move_between_groups_running_queued_and_sleeping() {
    let mut h = Harness::new(&[("/a", 100), ("/b", 300)]);
    let (a, b) = (h.tree.find("/a").unwrap(), h.tree.find("/b").unwrap());
    let ps: Vec<_> = (0..3).map(|_| h.spawn("/a")).collect();
    let q = h.spawn("/b");
    h.run(50_000_000);
    let g = h.rq.task_groups().unwrap();
    assert_eq!((g.cfs_rq(a).h_nr_running, g.cfs_rq(b).h_nr_running), (3, 1));
    // A move to the group the task is in does nothing.
    h.rq.update_rq_clock(h.now);
    assert!(!h.rq.sched_move_task(&mut h.tasks, q, b));
    // The running task (of /a or /b) moves to the other group: it stays current, counted
    // there, and its CPU is asked to reschedule.
    let c = h.rq.curr.unwrap();
    let to = if h.tasks[c].tg == a { b } else { a };
    let util_c = h.tasks[c].se.avg.util_avg;
    let util_to = h.rq.task_groups().unwrap().cfs_rq(to).avg.avg.util_avg;
    assert!(h.rq.sched_move_task(&mut h.tasks, c, to));
    assert_eq!((h.rq.curr, h.tasks[c].tg), (Some(c), to));
    assert!(h.rq.need_resched());
    assert!(h.rq.fair_curr_is(&h.tasks, c));
    h.check();
    let g = h.rq.task_groups().unwrap();
    let moved = g.cfs_rq(to).avg.avg.util_avg - util_to;
    assert!(
        moved.abs_diff(util_c) <= 1,
        "the new cfs_rq gained the task's util_avg {util_c} ({moved})"
    );
    assert_eq!(h.rq.cfs.h_nr_running, 4);
    h.resched_if_needed();
    h.check();
    // Queued (not running) tasks of /a move to /b until /a is empty: its cfs_rq then holds
    // no task and no load, and its group entity leaves the root (at once, or delayed until
    // it is picked).
    for &p in &ps {
        if h.tasks[p].tg == a && h.rq.curr != Some(p) {
            h.rq.update_rq_clock(h.now);
            assert!(h.tasks[p].on_rq_queued());
            assert!(h.rq.sched_move_task(&mut h.tasks, p, b));
            h.check();
        }
    }
    if let Some(c) = h.rq.curr.filter(|&c| h.tasks[c].tg == a) {
        h.rq.update_rq_clock(h.now);
        assert!(h.rq.sched_move_task(&mut h.tasks, c, b));
        h.check();
    }
    let g = h.rq.task_groups().unwrap();
    assert_eq!((g.cfs_rq(a).h_nr_running, g.cfs_rq(b).h_nr_running), (0, 4));
    assert!(
        g.cfs_rq(a).avg.avg.load_avg <= 2,
        "/a kept load_avg {}",
        g.cfs_rq(a).avg.avg.load_avg
    );
    h.resched_if_needed();
    h.run(20_000_000);
    assert!(!h.rq.task_groups().unwrap().se(a).on_rq);
    // A sleeping task moves too: detached from /b's cfs_rq, attached to /a's, not queued.
    let s = *ps.iter().find(|&&p| h.rq.curr != Some(p)).unwrap();
    h.rq.update_rq_clock(h.now);
    h.rq.dequeue_task(&mut h.tasks, s, DequeueFlags::SPECIAL | DequeueFlags::SLEEP);
    h.tasks[s].on_rq = crate::task::OnRq::No;
    h.tasks[s].state = crate::task::TaskState::Sleeping;
    h.check();
    let load_a = h.rq.task_groups().unwrap().cfs_rq(a).avg.avg.load_avg;
    assert!(h.rq.sched_move_task(&mut h.tasks, s, a));
    h.check();
    let g = h.rq.task_groups().unwrap();
    assert_eq!(g.cfs_rq(a).h_nr_running, 0);
    assert!(
        g.cfs_rq(a).avg.avg.load_avg > load_a,
        "the sleeper's load is /a's"
    );
    assert_ne!(h.tasks[s].se.avg.last_update_time, 0, "attached to /a");
    // The sleeper does not run, and /a's entity is not queued for it.
    let ran = h.tasks[s].se.sum_exec_runtime;
    h.run(100_000_000);
    assert_eq!(h.tasks[s].se.sum_exec_runtime, ran);
    assert!(!h.rq.task_groups().unwrap().se(a).on_rq);
}
