//! Autogroup (CONFIG_SCHED_AUTOGROUP, kernel/sched/autogroup.c of v6.12): each session's
//! task group below the root, its `tg->shares` from the autogroup's nice, and which group a
//! task of a session runs in.
//!
//! `setsid()` gives the new session an autogroup (`sched_autogroup_create_attach()` →
//! `autogroup_create()`: a task group whose parent is the root, `tg->autogroup` set, shares
//! `NICE_0_LOAD` scaled); forked tasks share their parent's (`sched_autogroup_fork()`). A task
//! runs in its session's autogroup only if `sched_autogroup_enabled` is on and its cgroup is
//! the root (`autogroup_task_group()`, `task_wants_autogroup()`): on a systemd machine, where
//! every task is in a cgroup below the root, autogroup changes nothing.
//!
//! lbsim's model of a session is a number (`session=N` on a workload): 0 is init's session,
//! whose autogroup is the root group itself (`autogroup_default`, id 0, no group entity), and
//! N >= 1 has the autogroup lbsim names `/autogroup-N`. The kernel numbers autogroups by
//! creation (`autogroup_seq_nr`), not by session id; lbsim uses the session's number so that
//! a run's reports name the autogroups the workloads asked for. The autogroup of a session
//! with no task in the root cgroup, or of any session with autogroup off, is not created: an
//! autogroup no task runs in is never enqueued, so it changes nothing the simulator models.
//! Deliberately left out: toggling the sysctl during a run (the kernel moves no task when it
//! is written either; it acts on each later `sched_move_task()`), renicing an autogroup during
//! a run, `PF_EXITING` (an exiting task is not moved), the rate limit of the `/proc` write.

use lbsim_pelt::{MAX_SHARES, MIN_SHARES, scale_load};

use super::TaskGroupError;
use crate::weights::{MAX_NICE, MIN_NICE, SCHED_PRIO_TO_WEIGHT};

/// One autogroup of the tree: its session and nice (`struct autogroup`'s `id` and `nice`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Autogroup {
    /// The session's number (`/autogroup-N`), >= 1.
    pub id: u32,
    /// The autogroup's nice (`/proc/PID/autogroup`), -20..=19.
    pub nice: i32,
}

/// The name the kernel prints for an autogroup's task group: `/autogroup-N`.
///
/// Follows autogroup.c: autogroup_path() (v6.12), which `/proc/PID/autogroup` and the sched
/// debug files print.
pub fn autogroup_path(id: u32) -> String {
    format!("/autogroup-{id}")
}

/// The `tg->shares` of an autogroup of nice `nice`: `scale_load(sched_prio_to_weight[nice +
/// 20])`, clamped as `sched_group_set_shares()` clamps (a no-op: 15..88761 are inside
/// `[MIN_SHARES, MAX_SHARES]`). Nice 0 is `NICE_0_LOAD` scaled, `autogroup_create()`'s
/// starting value.
///
/// Follows autogroup.c: proc_sched_autogroup_set_nice() (v6.12). Its permission checks and
/// its HZ/10 rate limit are the writer's, not the model's.
///
/// # Errors
/// [`TaskGroupError::BadAutogroupNice`] outside `MIN_NICE..=MAX_NICE` (`-EINVAL`), or for
/// session 0, whose autogroup is the root group (`sched_group_set_shares()` refuses the root,
/// `-EINVAL`).
pub fn autogroup_shares(id: u32, nice: i32) -> Result<u64, TaskGroupError> {
    if id == 0 || !(MIN_NICE..=MAX_NICE).contains(&nice) {
        return Err(TaskGroupError::BadAutogroupNice { id, nice });
    }
    let idx = (nice + 20) as usize;
    let shares = scale_load(u64::from(SCHED_PRIO_TO_WEIGHT[idx]));
    Ok(shares.clamp(scale_load(MIN_SHARES), scale_load(MAX_SHARES)))
}

/// The task group a task runs in: its cgroup's `tg`, or, if `sched_autogroup_enabled` is on
/// and that is the root group, its session's autogroup (`autogroup`, `None` for init's
/// session, whose autogroup is the root).
///
/// Follows autogroup.h: autogroup_task_group() and autogroup.c: task_wants_autogroup()
/// (v6.12), as `sched_get_task_group()` calls them when a task is forked or moved.
pub fn autogroup_task_group(enabled: bool, tg: u32, autogroup: Option<u32>) -> u32 {
    match autogroup {
        Some(ag) if enabled && tg == 0 => ag,
        _ => tg,
    }
}
