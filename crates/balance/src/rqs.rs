//! The machine's runqueues, with each sched group's sums of per-CPU statistics kept up to
//! date as the runqueues change.
//!
//! `update_sg_lb_stats()` sums, over every CPU of a group, what that CPU's runqueue says
//! (`cpu_load()`, `cpu_util_cfs()`, `cpu_runnable()`, `h_nr_running`, `nr_running`,
//! `idle_cpu()`). The kernel reads each CPU at every pass; on a 4096-CPU machine lbsim spent
//! most of its time doing the same. The sums only change when a runqueue does, so [`Rqs`]
//! keeps them per group span: every mutable borrow of a runqueue (`rqs[i]` in a place that
//! writes, [`Rqs::iter_mut`]) marks its CPU, and the next read of the sums
//! ([`Rqs::span_sums`]) brings the marked CPUs' contributions up to date, each in every span
//! holding it. A pass therefore costs what changed since the last one, not the group's size.
//!
//! This is lbsim's own bookkeeping, not a kernel structure: the balancer reads the same
//! numbers the kernel's loop would add up, in the same integer arithmetic (sums of `u64`
//! and `u32`, order-independent), and the cost model still charges one CPU read per CPU of
//! the group (`WorkAccount::cpus_scanned`). Debug builds recompute every sum the slow way
//! and compare (`lb::group_stats`).
//!
//! The same marks keep two other summaries: the machine-wide count of CPUs with more than
//! one task ([`Rqs::any_overloaded`]) and the mask of CPUs whose runqueue may be idle
//! ([`Rqs::idle_candidates`], `idle.rs`), which lets the wake-up scan skip busy CPUs, and a
//! log of the order in which CPUs changed ([`Rqs::change_pos`], `changes.rs`), which lets
//! load_balance() keep a group's statistics from one attempt to the next and the fork path
//! keep its keys of a domain's groups from one placement to the next.

mod changes;
mod idle;

use std::cell::{Ref, RefCell};
use std::ops::{Deref, Index, IndexMut};

use lbsim_rq::rq::Rq;
use lbsim_rq::task::Tasks;
use lbsim_topology::{CpuId, SpanId, Topology};

use crate::lb::SgLbStats;

use changes::ChangeLog;
pub use changes::ChangePos;
use idle::IdleMask;
pub use idle::rq_maybe_idle;

/// What one CPU adds to the sums of each span holding it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Contribution {
    /// `cpu_load()` (with `LB_TIP_AVG_HIGH` as the sums were built).
    load: u64,
    /// `cpu_util_cfs()`.
    util: u64,
    /// `cpu_runnable()`.
    runnable: u64,
    /// `rq->cfs.h_nr_running`.
    h_nr_running: u32,
    /// `rq->nr_running`.
    nr_running: u32,
    /// `idle_cpu()` from the runqueue alone (idle task running, nothing queued, no
    /// `ttwu_pending`), with `nr_running == 0`.
    idle: bool,
    /// `capacity_of() < arch_scale_cpu_capacity()`: rt/dl/irq pressure, which
    /// `sched_reduced_capacity()` can make a misfit.
    reduced: bool,
}

impl Contribution {
    fn of(rq: &Rq, tasks: &Tasks, topo: &Topology, tip_avg_high: bool) -> Contribution {
        let nr_running = rq.nr_running;
        Contribution {
            load: rq.cpu_load_lb(tip_avg_high),
            util: rq.cpu_util_cfs(tasks),
            runnable: rq.cpu_runnable(),
            h_nr_running: rq.cfs.h_nr_running,
            nr_running,
            idle: nr_running == 0 && rq.curr.is_none() && !rq.ttwu_pending(),
            reduced: rq.cpu_capacity() < u64::from(topo.machine().capacity(rq.cpu)),
        }
    }
}

/// The smallest group for which the balancer reads the sums rather than run the CPU loop:
/// below it the loop costs no more than bringing the sums up to date (measured with
/// `cargo xtask bench scale`: on 8 CPUs, reading the sums of every group made a run 15-25%
/// slower). Debug builds read them for every group, so that the tests' comparison of the
/// sums with the loop (`lb::group_stats`, `fork`) covers the small machines they run.
pub const SPAN_SUMS_MIN_CPUS: u32 = if cfg!(debug_assertions) { 1 } else { 16 };

/// The machines from which on the balancer reads the sums for groups of every size (see
/// [`span_sums_min_cpus`]).
pub const SPAN_SUMS_ALL_GROUPS_MIN_MACHINE: usize = 1024;

/// The smallest group whose sums the balancer reads on `topo`: [`SPAN_SUMS_MIN_CPUS`], but
/// every group from [`SPAN_SUMS_ALL_GROUPS_MIN_MACHINE`] CPUs on. On such a machine the
/// sums are kept anyway (its NUMA and LLC groups are larger), for every group span, so a
/// small group's costs one read where the loop reads each of its CPUs' runqueues, which no
/// longer fit in the caches.
#[inline]
pub fn span_sums_min_cpus(topo: &Topology) -> u32 {
    if topo.nr_cpus() >= SPAN_SUMS_ALL_GROUPS_MIN_MACHINE {
        1
    } else {
        SPAN_SUMS_MIN_CPUS
    }
}

/// The sums of one group span: what `update_sg_lb_stats()`'s loop adds up when every CPU of
/// the span is in `env->cpus` and no wake-up is pending beyond the runqueues' own flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpanSums {
    /// `sgs->group_load`.
    pub group_load: u64,
    /// `sgs->group_util`.
    pub group_util: u64,
    /// `sgs->group_runnable`.
    pub group_runnable: u64,
    /// `sgs->sum_h_nr_running`.
    pub sum_h_nr_running: u32,
    /// `sgs->sum_nr_running`.
    pub sum_nr_running: u32,
    /// `sgs->idle_cpus`.
    pub idle_cpus: u32,
    /// CPUs with `nr_running > 1` (the loop's `sg_overloaded`).
    pub overloaded_cpus: u32,
    /// CPUs whose capacity is below their original capacity.
    pub reduced_cpus: u32,
    /// The CPUs of the span.
    pub nr_cpus: u32,
}

impl SpanSums {
    /// The group statistics these sums are: what the CPU loop of update_sg_lb_stats() or
    /// update_sg_wakeup_stats() adds up (the rest of `sgs` is the caller's).
    #[inline]
    pub(crate) fn summed_stats(&self) -> SgLbStats {
        SgLbStats {
            group_load: self.group_load,
            group_util: self.group_util,
            group_runnable: self.group_runnable,
            sum_h_nr_running: self.sum_h_nr_running,
            sum_nr_running: self.sum_nr_running,
            idle_cpus: self.idle_cpus,
            ..SgLbStats::default()
        }
    }

    fn add(&mut self, c: &Contribution) {
        self.group_load = self.group_load.wrapping_add(c.load);
        self.group_util = self.group_util.wrapping_add(c.util);
        self.group_runnable = self.group_runnable.wrapping_add(c.runnable);
        self.sum_h_nr_running = self.sum_h_nr_running.wrapping_add(c.h_nr_running);
        self.sum_nr_running = self.sum_nr_running.wrapping_add(c.nr_running);
        self.idle_cpus += u32::from(c.idle);
        self.overloaded_cpus += u32::from(c.nr_running > 1);
        self.reduced_cpus += u32::from(c.reduced);
    }

    /// Adds a CPU's change (the counts' differences wrap to the same totals a recount
    /// gives, each staying within `0..=nr_cpus`).
    fn apply(&mut self, d: &Delta) {
        self.group_load = self.group_load.wrapping_add(d.load);
        self.group_util = self.group_util.wrapping_add(d.util);
        self.group_runnable = self.group_runnable.wrapping_add(d.runnable);
        self.sum_h_nr_running = self.sum_h_nr_running.wrapping_add(d.h_nr_running);
        self.sum_nr_running = self.sum_nr_running.wrapping_add(d.nr_running);
        self.idle_cpus = self.idle_cpus.wrapping_add(d.idle);
        self.overloaded_cpus = self.overloaded_cpus.wrapping_add(d.overloaded);
        self.reduced_cpus = self.reduced_cpus.wrapping_add(d.reduced);
    }
}

/// What one CPU's change adds to each sum (wrapping differences; the counts as `i32`
/// moved into `u32` two's complement), computed once and added to every span holding the
/// CPU.
#[derive(Clone, Copy, Debug)]
struct Delta {
    load: u64,
    util: u64,
    runnable: u64,
    h_nr_running: u32,
    nr_running: u32,
    idle: u32,
    overloaded: u32,
    reduced: u32,
}

impl Delta {
    fn between(old: &Contribution, new: &Contribution) -> Delta {
        let count = |b: bool| u32::from(b);
        Delta {
            load: new.load.wrapping_sub(old.load),
            util: new.util.wrapping_sub(old.util),
            runnable: new.runnable.wrapping_sub(old.runnable),
            h_nr_running: new.h_nr_running.wrapping_sub(old.h_nr_running),
            nr_running: new.nr_running.wrapping_sub(old.nr_running),
            idle: count(new.idle).wrapping_sub(count(old.idle)),
            overloaded: count(new.nr_running > 1).wrapping_sub(count(old.nr_running > 1)),
            reduced: count(new.reduced).wrapping_sub(count(old.reduced)),
        }
    }
}

/// The sums of every group span, and each CPU's contribution to them.
///
/// Stored compactly for the catch-up's sake (it touches every span holding a changed CPU):
/// one [`SpanSums`] per group span, in the order the spans are first met among the groups
/// (`slot_of_span` maps a span index to it), and the slots holding each CPU as one flat list
/// (`slots[slot_starts[c]..slot_starts[c + 1]]`).
#[derive(Clone, Debug)]
struct Sums {
    /// `LB_TIP_AVG_HIGH` when built (it changes `cpu_load()`).
    tip_avg_high: bool,
    /// By slot.
    sums: Vec<SpanSums>,
    /// By span index: the span's slot, or [`NO_SLOT`] for a span that is no group's.
    slot_of_span: Vec<u32>,
    /// The slots holding each CPU, CPU after CPU.
    slots: Vec<u32>,
    /// Where each CPU's slots start in `slots` (one more entry than CPUs).
    slot_starts: Vec<u32>,
    /// What each CPU last added.
    contrib: Vec<Contribution>,
}

/// `Sums::slot_of_span` of a span that is no group's.
const NO_SLOT: u32 = u32::MAX;

impl Sums {
    fn build(rqs: &[Rq], tasks: &Tasks, topo: &Topology, tip_avg_high: bool) -> Sums {
        let mut sums: Vec<SpanSums> = Vec::new();
        let mut slot_of_span: Vec<u32> = Vec::new();
        let mut slots_of = vec![Vec::new(); rqs.len()];
        for g in topo.all_groups() {
            let s = g.span.index();
            if slot_of_span.len() <= s {
                slot_of_span.resize(s + 1, NO_SLOT);
            }
            if slot_of_span[s] != NO_SLOT {
                continue;
            }
            let slot = sums.len() as u32;
            slot_of_span[s] = slot;
            let mut span = SpanSums::default();
            for &cpu in topo.span_cpus(g.span) {
                span.nr_cpus += 1;
                slots_of[cpu.index()].push(slot);
            }
            sums.push(span);
        }
        let contrib: Vec<Contribution> = rqs
            .iter()
            .map(|rq| Contribution::of(rq, tasks, topo, tip_avg_high))
            .collect();
        let mut slots = Vec::new();
        let mut slot_starts = Vec::with_capacity(rqs.len() + 1);
        for (c, of) in slots_of.iter().enumerate() {
            slot_starts.push(slots.len() as u32);
            for &slot in of {
                sums[slot as usize].add(&contrib[c]);
                slots.push(slot);
            }
        }
        slot_starts.push(slots.len() as u32);
        Sums {
            tip_avg_high,
            sums,
            slot_of_span,
            slots,
            slot_starts,
            contrib,
        }
    }

    fn update(&mut self, cpu: usize, new: Contribution) {
        let old = self.contrib[cpu];
        if old == new {
            return;
        }
        let d = Delta::between(&old, &new);
        let of = &self.slots[self.slot_starts[cpu] as usize..self.slot_starts[cpu + 1] as usize];
        for &slot in of {
            self.sums[slot as usize].apply(&d);
        }
        self.contrib[cpu] = new;
    }

    /// The sums of span index `span`, if it is a group's.
    #[inline]
    fn get(&self, span: usize) -> Option<&SpanSums> {
        match self.slot_of_span.get(span) {
            Some(&slot) if slot != NO_SLOT => Some(&self.sums[slot as usize]),
            _ => None,
        }
    }
}

/// The group sums of [`Rqs::sums_view`], up to date while the view lives.
#[derive(Debug)]
pub struct SumsView<'a>(Ref<'a, Sums>);

impl SumsView<'_> {
    /// The sums of group span `span`; `None` if it is no group's span.
    #[inline]
    pub fn get(&self, span: SpanId) -> Option<&SpanSums> {
        self.0.get(span.index())
    }

    /// CPU `cpu`'s `cpu_load()` as the sums hold it (with `LB_TIP_AVG_HIGH` as the view was
    /// taken), read from one array rather than the CPU's runqueue.
    #[inline]
    pub fn cpu_load(&self, cpu: CpuId) -> u64 {
        self.0.contrib[cpu.index()].load
    }
}

/// [`Tracker::flags`]: the CPU is in [`Tracker::marked`].
const MARKED_SUMS: u8 = 1;
/// [`Tracker::flags`]: the CPU is in [`Overload::marked`].
const MARKED_OVERLOAD: u8 = 2;
/// [`Tracker::flags`]: the CPU is in [`IdleMask::marked`].
const MARKED_IDLE: u8 = 4;
/// [`Tracker::flags`]: the CPU is in [`ChangeLog::marked`].
const MARKED_LOG: u8 = 8;
/// [`Tracker::flags`]: the CPU is in every list of marked CPUs.
const MARKED_ALL: u8 = MARKED_SUMS | MARKED_OVERLOAD | MARKED_IDLE | MARKED_LOG;

/// The machine-wide count of CPUs with `nr_running > 1`, kept apart from the sums so that
/// [`Rqs::any_overloaded`] (asked at every newly idle balance) reads only the marked CPUs'
/// `nr_running`, not their whole contribution.
#[derive(Clone, Debug, Default)]
struct Overload {
    /// Each CPU's `nr_running > 1` as last counted; empty until the first read.
    over: Vec<bool>,
    /// How many of `over` are true.
    count: u32,
    /// CPUs borrowed mutably since the count was last brought up to date, each once.
    marked: Vec<u32>,
}

/// The sums' state: built on first use, then the CPUs marked since.
#[derive(Clone, Debug, Default)]
struct Tracker {
    sums: Option<Sums>,
    /// CPUs borrowed mutably since the sums last caught up, each once.
    marked: Vec<u32>,
    /// Per CPU: [`MARKED_SUMS`], [`MARKED_OVERLOAD`], [`MARKED_IDLE`] and [`MARKED_LOG`].
    flags: Vec<u8>,
    overload: Overload,
    idle: IdleMask,
    changes: ChangeLog,
}

impl Tracker {
    /// Puts CPU `i` on each list of marked CPUs it is not on yet.
    #[inline(never)]
    fn mark(&mut self, i: usize) {
        let f = self.flags[i];
        if f & MARKED_SUMS == 0 {
            self.marked.push(i as u32);
        }
        if f & MARKED_OVERLOAD == 0 {
            self.overload.marked.push(i as u32);
        }
        if f & MARKED_IDLE == 0 {
            self.idle.marked.push(i as u32);
        }
        if f & MARKED_LOG == 0 {
            self.changes.marked.push(i as u32);
        }
        self.flags[i] = MARKED_ALL;
    }

    /// The sums, if they are up to date (built with `tip_avg_high`, no CPU marked since).
    #[inline]
    fn current(&self, tip_avg_high: bool) -> Option<&Sums> {
        self.sums
            .as_ref()
            .filter(|s| self.marked.is_empty() && s.tip_avg_high == tip_avg_high)
    }
}

/// One runqueue per CPU, indexed by CPU id, with the group sums of [`SpanSums`].
///
/// Reads go through `Deref<Target = [Rq]>` and `Index`; writes through `IndexMut` and
/// [`Rqs::iter_mut`], which mark the CPUs they reach, except the writes of fields no summary
/// reads ([`Rqs::update_rq_clock`], [`Rqs::set_next_balance`],
/// [`Rqs::set_max_idle_balance_cost`]) and of a capacity that does not change
/// ([`Rqs::update_cpu_capacity`]).
#[derive(Clone, Debug, Default)]
pub struct Rqs {
    rqs: Vec<Rq>,
    tracker: RefCell<Tracker>,
}

impl Rqs {
    /// The runqueues `rqs`, CPU `i` at index `i`.
    pub fn new(rqs: Vec<Rq>) -> Rqs {
        let n = rqs.len();
        Rqs {
            rqs,
            tracker: RefCell::new(Tracker {
                sums: None,
                marked: Vec::new(),
                flags: vec![0; n],
                overload: Overload::default(),
                idle: IdleMask::default(),
                changes: ChangeLog::default(),
            }),
        }
    }

    /// Every runqueue, mutably (each CPU is marked).
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Rq> {
        for i in 0..self.rqs.len() {
            self.mark(i);
        }
        self.rqs.iter_mut()
    }

    /// The sums of group span `span` as of now: the CPUs changed since the last call are
    /// brought up to date first. `None` if `span` is no group's span.
    ///
    /// `tip_avg_high` is the `LB_TIP_AVG_HIGH` feature (`cpu_load()` depends on it).
    #[inline]
    pub fn span_sums(
        &self,
        topo: &Topology,
        tasks: &Tasks,
        span: SpanId,
        tip_avg_high: bool,
    ) -> Option<SpanSums> {
        self.sums_view(topo, tasks, tip_avg_high).get(span).copied()
    }

    /// The sums of every group span as of now, for several reads in a row (a pass over a
    /// domain's groups): the CPUs changed since the last call are brought up to date first,
    /// once. The runqueues cannot change while the view lives (it borrows them), so every
    /// read through it gives what [`Rqs::span_sums`] would. While it lives, the other
    /// readers that bring state up to date ([`Rqs::span_sums`], [`Rqs::any_overloaded`],
    /// [`Rqs::idle_candidates`]) must not be called (the tracker is borrowed).
    #[inline]
    pub fn sums_view(&self, topo: &Topology, tasks: &Tasks, tip_avg_high: bool) -> SumsView<'_> {
        {
            let t = self.tracker.borrow();
            if t.current(tip_avg_high).is_some() {
                return SumsView(Ref::map(t, |t| t.sums.as_ref().expect("current")));
            }
        }
        self.catch_up(topo, tasks, tip_avg_high);
        SumsView(Ref::map(self.tracker.borrow(), |t| {
            t.sums.as_ref().expect("caught up")
        }))
    }

    /// Brings the sums up to date with the CPUs marked since the last call (building them
    /// on the first).
    #[inline(never)]
    fn catch_up(&self, topo: &Topology, tasks: &Tasks, tip_avg_high: bool) {
        let mut t = self.tracker.borrow_mut();
        let t = &mut *t;
        match t.sums.as_mut() {
            Some(sums) if sums.tip_avg_high == tip_avg_high => {
                for &c in &t.marked {
                    let c = c as usize;
                    t.flags[c] &= !MARKED_SUMS;
                    sums.update(c, Contribution::of(&self.rqs[c], tasks, topo, tip_avg_high));
                }
            }
            _ => {
                t.sums = Some(Sums::build(&self.rqs, tasks, topo, tip_avg_high));
                for &c in &t.marked {
                    t.flags[c as usize] &= !MARKED_SUMS;
                }
            }
        }
        t.marked.clear();
    }

    /// Whether some CPU has more than one task (`nr_running > 1`), machine-wide: the count
    /// is brought up to date with the CPUs marked since the last call (counted from scratch
    /// on the first).
    pub fn any_overloaded(&self) -> bool {
        let mut t = self.tracker.borrow_mut();
        let t = &mut *t;
        let o = &mut t.overload;
        if o.over.len() != self.rqs.len() {
            o.over = self.rqs.iter().map(|r| r.nr_running > 1).collect();
            o.count = o.over.iter().filter(|&&b| b).count() as u32;
            for &c in &o.marked {
                t.flags[c as usize] &= !MARKED_OVERLOAD;
            }
        } else {
            for &c in &o.marked {
                let c = c as usize;
                t.flags[c] &= !MARKED_OVERLOAD;
                let now = self.rqs[c].nr_running > 1;
                if now != o.over[c] {
                    o.over[c] = now;
                    if now {
                        o.count += 1;
                    } else {
                        o.count -= 1;
                    }
                }
            }
        }
        o.marked.clear();
        o.count > 0
    }

    /// The CPUs whose runqueue alone may let `available_idle_cpu()` or `sched_idle_cpu()` be
    /// true ([`rq_maybe_idle`]), as of now: bit `c % 64` of word `c / 64` for CPU `c`. The
    /// CPUs marked since the last call are reread first (every CPU on the first). Every CPU
    /// outside the mask fails both tests. While the view lives, the other readers that bring
    /// state up to date must not be called (the tracker is borrowed).
    pub fn idle_candidates(&self) -> Ref<'_, [u64]> {
        {
            let mut t = self.tracker.borrow_mut();
            let t = &mut *t;
            t.idle.catch_up(&self.rqs, &mut t.flags, MARKED_IDLE);
        }
        Ref::map(self.tracker.borrow(), |t| &t.idle.words[..])
    }

    /// The end of the log of runqueue changes, once the CPUs marked since the last call are
    /// logged: every change made before this call is logged before the position returned,
    /// every later one after it.
    pub fn change_pos(&self) -> ChangePos {
        let mut t = self.tracker.borrow_mut();
        let t = &mut *t;
        t.changes.flush(&mut t.flags, MARKED_LOG)
    }

    /// Calls `f` with every CPU whose runqueue changed between `from` and `to`, two positions
    /// [`Rqs::change_pos`] returned in that order (each such CPU at least once); false,
    /// without calling it, if the log no longer goes back to `from`.
    pub fn changed_between(&self, from: ChangePos, to: ChangePos, f: impl FnMut(u32)) -> bool {
        self.tracker.borrow().changes.between(from, to, f)
    }

    /// `update_rq_clock()` of CPU `i`, which does not mark it: none of the summaries the marks
    /// keep reads the runqueue's clocks (each CPU's contribution to the group sums, the count
    /// of CPUs with more than one task, the maybe-idle mask, and the change log's readers,
    /// which recompute group statistics from the same fields). The nohz idle balancer updates
    /// the clock of every idle CPU whose balance is due, about a million a simulated second on
    /// 4096 CPUs with few tasks; marking each made the next reader of the sums and the log
    /// catch up with CPUs that had not changed.
    #[inline]
    pub fn update_rq_clock(&mut self, i: usize, now_ns: u64) {
        self.rqs[i].update_rq_clock(now_ns);
    }

    /// `rq->next_balance = jiffies` for CPU `i`, which does not mark it (no summary reads it;
    /// see [`Rqs::update_rq_clock`]).
    #[inline]
    pub fn set_next_balance(&mut self, i: usize, jiffies: u64) {
        self.rqs[i].set_next_balance(jiffies);
    }

    /// `rq->max_idle_balance_cost = cost_ns` for CPU `i`, which does not mark it (no summary
    /// reads it; see [`Rqs::update_rq_clock`]).
    #[inline]
    pub fn set_max_idle_balance_cost(&mut self, i: usize, cost_ns: u64) {
        self.rqs[i].set_max_idle_balance_cost(cost_ns);
    }

    /// `rq->cpu_capacity = capacity` (fair.c's update_cpu_capacity()) for CPU `i`, marking
    /// it only when the value changes: the group sums read it (a reduced capacity), so a
    /// change must reach them, and an unchanged value changes nothing they hold.
    #[inline]
    pub fn update_cpu_capacity(&mut self, i: usize, capacity: u64) {
        if self.rqs[i].cpu_capacity() != capacity {
            self.mark(i);
        }
        self.rqs[i].update_cpu_capacity(capacity);
    }

    #[inline]
    fn mark(&mut self, i: usize) {
        let t = self.tracker.get_mut();
        if t.flags[i] != MARKED_ALL {
            t.mark(i);
        }
    }
}

impl Deref for Rqs {
    type Target = [Rq];

    #[inline]
    fn deref(&self) -> &[Rq] {
        &self.rqs
    }
}

impl Index<usize> for Rqs {
    type Output = Rq;

    #[inline]
    fn index(&self, i: usize) -> &Rq {
        &self.rqs[i]
    }
}

impl IndexMut<usize> for Rqs {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut Rq {
        self.mark(i);
        &mut self.rqs[i]
    }
}

impl From<Vec<Rq>> for Rqs {
    fn from(rqs: Vec<Rq>) -> Rqs {
        Rqs::new(rqs)
    }
}

impl<'a> IntoIterator for &'a Rqs {
    type Item = &'a Rq;
    type IntoIter = std::slice::Iter<'a, Rq>;

    fn into_iter(self) -> Self::IntoIter {
        self.rqs.iter()
    }
}

#[cfg(test)]
mod tests;
