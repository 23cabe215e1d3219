//! Accounting: per-CPU busy/idle time and the `nr_running` integral, per-task runtime, and the
//! idle-while-overloaded measure with its incrementally kept summary ([`IwoSummary`]).

use crate::prelude::*;

/// Which CPUs are idle (no current task) and which have a task waiting (`nr_running` above
/// the running one), refreshed after each event for the CPUs whose runqueue the event may
/// have changed ([`IwoSummary::mark`]), so that the idle-while-overloaded test costs O(1)
/// per event when no CPU is idle or none has a waiting task. Under `SimConfig::check` the
/// summary is compared with a full scan after every event.
///
/// When some CPU is idle and some has a waiting task, the test also needs the waiting tasks'
/// affinities. Those are summarised per waiting CPU too, recomputed only for the CPUs marked
/// since the summary was last needed: whether one of its waiting tasks may run anywhere
/// (`free`), else the union of their `cpus_mask`s (`reach`), and over all CPUs how many
/// reaches hold each CPU, so that the test is a word-wise intersection with the idle mask
/// instead of a walk over every waiting CPU's tasks at every event. A CPU whose reach is
/// empty and stays empty (not waiting, or `free`, or waiting only with tasks allowed
/// everywhere) costs nothing more than the test of its flags ([`F_REACH_EMPTY`]), and the
/// intersection is kept as a count (`nr_idle_reachable`) as the idle mask and the reaches
/// change, so that the test reads no mask.
///
/// A CPU's one-bit facts are the bits of one byte (`flags`): refreshing a CPU after an event
/// reads and writes that byte instead of six vectors and two masks (the masks change only
/// when the CPU's status does).
#[derive(Clone, Debug)]
pub(crate) struct IwoSummary {
    idle: Cpumask,
    waiting: Cpumask,
    nr_idle: usize,
    nr_waiting: usize,
    /// Per CPU: the `F_*` bits.
    flags: Vec<u8>,
    /// The CPUs flagged [`F_DIRTY`].
    dirty: Vec<u32>,
    /// The CPUs flagged [`F_TASKS_DIRTY`].
    tasks_dirty: Vec<u32>,
    /// How many CPUs are [`F_FREE`].
    nr_free: usize,
    /// Per CPU, `words` words: the union of the `cpus_mask`s of its waiting tasks (empty
    /// when the CPU is not waiting or is `free`).
    reach: Vec<u64>,
    /// Per CPU: how many CPUs' `reach` hold it.
    reach_count: Vec<u32>,
    /// The CPUs whose `reach_count` is not zero, as mask words.
    reachable: Vec<u64>,
    /// How many CPUs are both `idle` and `reachable`.
    nr_idle_reachable: usize,
    /// Words per mask.
    words: usize,
    /// A reach being computed.
    scratch: Vec<u64>,
}

/// The CPU is in [`IwoSummary`]'s `idle` mask.
const F_IDLE: u8 = 1;
/// The CPU is in the `waiting` mask.
const F_WAITING: u8 = 1 << 1;
/// The CPU's runqueue may have changed since its status was last read.
const F_DIRTY: u8 = 1 << 2;
/// The CPU's task summary (`free`, `reach`) is out of date.
const F_TASKS_DIRTY: u8 = 1 << 3;
/// It is waiting and one of its waiting tasks may run on every CPU.
const F_FREE: u8 = 1 << 4;
/// Its `reach` is known to be all zero (when clear it may still be).
const F_REACH_EMPTY: u8 = 1 << 5;
/// Some CPU's `reach` holds it (its `reach_count` is not zero).
const F_REACHABLE: u8 = 1 << 6;

impl IwoSummary {
    /// Every CPU is dirty at first.
    pub(crate) fn new(nr_cpus: usize) -> IwoSummary {
        let words = nr_cpus.div_ceil(64);
        IwoSummary {
            idle: Cpumask::new(nr_cpus),
            waiting: Cpumask::new(nr_cpus),
            nr_idle: 0,
            nr_waiting: 0,
            flags: vec![F_DIRTY | F_TASKS_DIRTY | F_REACH_EMPTY; nr_cpus],
            dirty: (0..nr_cpus as u32).collect(),
            tasks_dirty: (0..nr_cpus as u32).collect(),
            nr_free: 0,
            reach: vec![0; nr_cpus * words],
            reach_count: vec![0; nr_cpus],
            reachable: vec![0; words],
            nr_idle_reachable: 0,
            words,
            scratch: vec![0; words],
        }
    }

    /// `cpu`'s runqueue may have changed.
    #[inline]
    pub(crate) fn mark(&mut self, cpu: CpuId) {
        let f = &mut self.flags[cpu.index()];
        if *f & F_DIRTY == 0 {
            *f |= F_DIRTY;
            self.dirty.push(cpu.0);
        }
    }

    /// `cpu`'s status as its runqueue shows it.
    #[inline]
    pub(crate) fn status(rq: &Rq) -> (bool, bool) {
        let idle = rq.curr.is_none();
        (idle, rq.nr_running > u32::from(!idle))
    }

    /// Re-reads the dirty CPUs (their task summaries wait until [`IwoSummary::hit`] needs
    /// them).
    ///
    /// A CPU without a waiting task is marked for a new task summary only if its summary is
    /// not already the one such a CPU gets (not `free`, reach empty): recomputing that one
    /// would change nothing, so most events (a CPU's only task running on) leave no work
    /// for `hit`.
    #[inline]
    pub(crate) fn refresh(&mut self, rqs: &[Rq]) {
        while let Some(c) = self.dirty.pop() {
            let cpu = CpuId(c);
            let ci = cpu.index();
            let (idle, waiting) = Self::status(&rqs[ci]);
            let old = self.flags[ci];
            let mut f = old & !F_DIRTY;
            if f & F_TASKS_DIRTY == 0 && (waiting || f & F_FREE != 0 || f & F_REACH_EMPTY == 0) {
                f |= F_TASKS_DIRTY;
                self.tasks_dirty.push(c);
            }
            if idle != (old & F_IDLE != 0) {
                f ^= F_IDLE;
                if idle {
                    self.idle.set(cpu);
                    self.nr_idle += 1;
                } else {
                    self.idle.clear(cpu);
                    self.nr_idle -= 1;
                }
                if old & F_REACHABLE != 0 {
                    if idle {
                        self.nr_idle_reachable += 1;
                    } else {
                        self.nr_idle_reachable -= 1;
                    }
                }
            }
            if waiting != (old & F_WAITING != 0) {
                f ^= F_WAITING;
                if waiting {
                    self.waiting.set(cpu);
                    self.nr_waiting += 1;
                } else {
                    self.waiting.clear(cpu);
                    self.nr_waiting -= 1;
                }
            }
            self.flags[ci] = f;
        }
    }

    /// Whether a waiting task may run on an idle CPU, after [`IwoSummary::refresh`]: the
    /// task summaries of the CPUs changed since the last call are recomputed first.
    #[inline]
    pub(crate) fn hit(&mut self, rqs: &[Rq], tasks: &Tasks) -> bool {
        if self.nr_idle == 0 || self.nr_waiting == 0 {
            return false;
        }
        if !self.tasks_dirty.is_empty() {
            self.update_tasks(rqs, tasks);
        }
        debug_assert_eq!(
            self.nr_idle_reachable,
            self.reachable
                .iter()
                .zip(self.idle.as_words())
                .map(|(r, i)| (r & i).count_ones() as usize)
                .sum::<usize>(),
            "nr_idle_reachable is not the weight of reachable & idle"
        );
        self.nr_free > 0 || self.nr_idle_reachable > 0
    }

    /// Recomputes the task summaries of the CPUs marked since the last call (`free`, the
    /// reach, and the counts over them).
    fn update_tasks(&mut self, rqs: &[Rq], tasks: &Tasks) {
        let nr = rqs.len();
        let w = self.words;
        while let Some(c) = self.tasks_dirty.pop() {
            let ci = c as usize;
            self.flags[ci] &= !F_TASKS_DIRTY;
            let rq = &rqs[ci];
            let scratch = &mut self.scratch;
            // Whether a waiting task with a restricted affinity was found (and `scratch`,
            // cleared for the first, holds the union of their masks).
            let mut restricted = false;
            let mut free = false;
            if self.flags[ci] & F_WAITING != 0 {
                for p in rq.cfs.cfs_tasks() {
                    let t = &tasks[p];
                    if Some(p) == rq.curr || t.se.sched_delayed || t.state != TaskState::Queued {
                        continue;
                    }
                    if t.nr_cpus_allowed as usize == nr {
                        free = true;
                        break;
                    }
                    if !restricted {
                        scratch.fill(0);
                        restricted = true;
                    }
                    for (s, m) in scratch.iter_mut().zip(t.cpus_mask.as_words()) {
                        *s |= *m;
                    }
                }
            }
            if free != (self.flags[ci] & F_FREE != 0) {
                self.flags[ci] ^= F_FREE;
                if free {
                    self.nr_free += 1;
                } else {
                    self.nr_free -= 1;
                }
            }
            let old = &mut self.reach[ci * w..(ci + 1) * w];
            let was_empty = self.flags[ci] & F_REACH_EMPTY != 0;
            debug_assert!(
                !was_empty || old.iter().all(|o| *o == 0),
                "CPU {ci}'s reach is flagged empty but is not"
            );
            // A free CPU's reach does not matter while it is free, and it is recomputed when
            // it stops being: it is empty, as is a CPU's with no restricted waiting task.
            let empty = free || !restricted;
            if empty && was_empty {
                continue;
            }
            for (k, o) in old.iter_mut().enumerate() {
                let n = if empty { 0 } else { scratch[k] };
                let mut x = *o ^ n;
                while x != 0 {
                    let b = x.trailing_zeros();
                    x &= x - 1;
                    let i = k * 64 + b as usize;
                    let count = &mut self.reach_count[i];
                    if (n >> b) & 1 == 1 {
                        *count += 1;
                        if *count == 1 {
                            self.reachable[k] |= 1 << b;
                            self.flags[i] |= F_REACHABLE;
                            if self.flags[i] & F_IDLE != 0 {
                                self.nr_idle_reachable += 1;
                            }
                        }
                    } else {
                        *count -= 1;
                        if *count == 0 {
                            self.reachable[k] &= !(1 << b);
                            self.flags[i] &= !F_REACHABLE;
                            if self.flags[i] & F_IDLE != 0 {
                                self.nr_idle_reachable -= 1;
                            }
                        }
                    }
                }
                *o = n;
            }
            if empty {
                self.flags[ci] |= F_REACH_EMPTY;
            } else {
                self.flags[ci] &= !F_REACH_EMPTY;
            }
        }
    }

    /// The first CPU whose summary disagrees with its runqueue.
    pub(crate) fn stale(&self, rqs: &[Rq]) -> Option<usize> {
        rqs.iter().enumerate().find_map(|(c, rq)| {
            let (idle, waiting) = Self::status(rq);
            let cpu = CpuId(c as u32);
            (idle != self.idle.test(cpu) || waiting != self.waiting.test(cpu)).then_some(c)
        })
    }
}

impl<B: Balancer> Core<B> {
    /// Brings `cpu`'s accounting up to `now` before its runqueue changes (which marks it for
    /// the idle-while-overloaded summary).
    pub(crate) fn account(&mut self, cpu: CpuId) {
        self.iwo.mark(cpu);
        self.account_time(cpu);
    }

    pub(crate) fn account_time(&mut self, cpu: CpuId) {
        let now = self.now;
        let c = &mut self.cpus[cpu.index()];
        let dt = now.saturating_sub(c.acct_last);
        if dt == 0 {
            return;
        }
        let rq = &self.rqs[cpu.index()];
        if rq.curr.is_some() {
            c.busy_ns += dt;
        } else {
            c.idle_ns += dt;
        }
        c.nr_running_ns += u128::from(rq.nr_running) * u128::from(dt);
        c.acct_last = now;
    }

    /// Adds `p`'s time on its CPU since it was last accounted to its runtime.
    pub(crate) fn account_runtime(&mut self, p: TaskId) {
        let now = self.now;
        let r = &mut self.runs[self.run_of[p] as usize];
        r.runtime_ns += now.saturating_sub(r.on_cpu_since);
        r.on_cpu_since = now;
    }

    /// Brings the accounting of the CPUs a balancing pass changed up to `now`, as it was
    /// before the pass: a pass changes runqueues only by the migrations it reports and runs
    /// at one instant, so each such CPU's `nr_running` before it is today's less the tasks it
    /// received plus those it gave. The other CPUs are accounted when they next change: the
    /// integrals are linear in time, so the totals are the same as accounting every CPU
    /// before the pass (O(migrations) instead of O(nr_cpus) per pass).
    pub(crate) fn account_pass(&mut self, out: &BalanceOutcome) {
        if out.migrations.is_empty() {
            return;
        }
        let mut delta: smallvec::SmallVec<[(CpuId, i64); 8]> = smallvec::SmallVec::new();
        let mut add = |cpu: CpuId, d: i64| match delta.iter_mut().find(|(c, _)| *c == cpu) {
            Some((_, v)) => *v += d,
            None => delta.push((cpu, d)),
        };
        for m in &out.migrations {
            add(m.src, -1);
            add(m.dst, 1);
        }
        let now = self.now;
        for (cpu, d) in delta {
            let c = &mut self.cpus[cpu.index()];
            let dt = now.saturating_sub(c.acct_last);
            if dt == 0 {
                continue;
            }
            let rq = &self.rqs[cpu.index()];
            if rq.curr.is_some() {
                c.busy_ns += dt;
            } else {
                c.idle_ns += dt;
            }
            let before = (i64::from(rq.nr_running) - d).max(0) as u128;
            c.nr_running_ns += before * u128::from(dt);
            c.acct_last = now;
        }
    }

    /// Brings every CPU's accounting up to `now` (the end of the run; the active-balance
    /// stopper, which also switches its CPU away from the running task).
    pub(crate) fn account_all(&mut self) {
        for c in 0..self.cpus.len() {
            self.account_time(CpuId(c as u32));
        }
    }

    /// Whether some CPU is idle while another has a waiting task allowed to run on it.
    ///
    /// The summary of idle and waiting CPUs, and of the waiting tasks' affinities, is
    /// refreshed for the CPUs the event touched; a waiting task allowed everywhere can run on
    /// any idle CPU, one with a restricted affinity needs an idle CPU in it. Under
    /// `SimConfig::check` the summary is compared with every runqueue and the answer with a
    /// walk over the waiting tasks.
    pub(crate) fn idle_while_overloaded(&mut self) -> bool {
        self.iwo.refresh(&self.rqs);
        if self.cfg.check
            && let Some(c) = self.iwo.stale(&self.rqs)
        {
            self.error.get_or_insert(SimError::Invariant {
                time_ns: self.now,
                cpu: c as u32,
                task: String::new(),
                detail: "the idle-while-overloaded summary missed a change of this CPU's \
                         runqueue"
                    .to_owned(),
            });
        }
        let hit = self.iwo.hit(&self.rqs, &self.tasks);
        if self.cfg.check && hit != self.idle_while_overloaded_scan() {
            self.error.get_or_insert(SimError::Invariant {
                time_ns: self.now,
                cpu: 0,
                task: String::new(),
                detail: format!(
                    "the idle-while-overloaded summary says {hit}, the waiting tasks' \
                     affinities say {}",
                    !hit
                ),
            });
        }
        hit
    }

    /// [`Core::idle_while_overloaded`] by a walk over every waiting CPU's tasks (the check of
    /// the summary).
    fn idle_while_overloaded_scan(&self) -> bool {
        if self.iwo.nr_idle == 0 || self.iwo.nr_waiting == 0 {
            return false;
        }
        let nr = self.rqs.len();
        for c in self.iwo.waiting.iter() {
            let rq = &self.rqs[c.index()];
            for p in rq.cfs.cfs_tasks() {
                let t = &self.tasks[p];
                if Some(p) == rq.curr || t.se.sched_delayed || t.state != TaskState::Queued {
                    continue;
                }
                if t.nr_cpus_allowed as usize == nr || t.cpus_mask.intersects(&self.iwo.idle) {
                    return true;
                }
            }
        }
        false
    }
}
