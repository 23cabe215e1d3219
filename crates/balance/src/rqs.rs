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

use std::cell::RefCell;
use std::ops::{Deref, Index, IndexMut};

use lbsim_rq::rq::Rq;
use lbsim_rq::task::Tasks;
use lbsim_topology::{SpanId, Topology};

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

    fn sub(&mut self, c: &Contribution) {
        self.group_load = self.group_load.wrapping_sub(c.load);
        self.group_util = self.group_util.wrapping_sub(c.util);
        self.group_runnable = self.group_runnable.wrapping_sub(c.runnable);
        self.sum_h_nr_running = self.sum_h_nr_running.wrapping_sub(c.h_nr_running);
        self.sum_nr_running = self.sum_nr_running.wrapping_sub(c.nr_running);
        self.idle_cpus -= u32::from(c.idle);
        self.overloaded_cpus -= u32::from(c.nr_running > 1);
        self.reduced_cpus -= u32::from(c.reduced);
    }
}

/// The sums of every group span, and each CPU's contribution to them.
#[derive(Clone, Debug)]
struct Sums {
    /// `LB_TIP_AVG_HIGH` when built (it changes `cpu_load()`).
    tip_avg_high: bool,
    /// By span index; `None` for a span that is no group's.
    spans: Vec<Option<SpanSums>>,
    /// The spans holding each CPU.
    spans_of: Vec<Vec<u32>>,
    /// What each CPU last added.
    contrib: Vec<Contribution>,
    /// CPUs with `nr_running > 1`, machine-wide.
    overloaded_cpus: u32,
}

impl Sums {
    fn build(rqs: &[Rq], tasks: &Tasks, topo: &Topology, tip_avg_high: bool) -> Sums {
        let mut spans: Vec<Option<SpanSums>> = Vec::new();
        let mut spans_of = vec![Vec::new(); rqs.len()];
        for g in topo.all_groups() {
            let s = g.span.index();
            if spans.len() <= s {
                spans.resize(s + 1, None);
            }
            if spans[s].is_some() {
                continue;
            }
            let mut sums = SpanSums::default();
            for cpu in topo.span(g.span).iter() {
                sums.nr_cpus += 1;
                spans_of[cpu.index()].push(s as u32);
            }
            spans[s] = Some(sums);
        }
        let contrib: Vec<Contribution> = rqs
            .iter()
            .map(|rq| Contribution::of(rq, tasks, topo, tip_avg_high))
            .collect();
        let overloaded_cpus = contrib.iter().filter(|c| c.nr_running > 1).count() as u32;
        for (c, of) in spans_of.iter().enumerate() {
            for &s in of {
                if let Some(sums) = spans[s as usize].as_mut() {
                    sums.add(&contrib[c]);
                }
            }
        }
        Sums {
            tip_avg_high,
            spans,
            spans_of,
            contrib,
            overloaded_cpus,
        }
    }

    fn update(&mut self, cpu: usize, new: Contribution) {
        let old = self.contrib[cpu];
        if old == new {
            return;
        }
        for &s in &self.spans_of[cpu] {
            if let Some(sums) = self.spans[s as usize].as_mut() {
                sums.sub(&old);
                sums.add(&new);
            }
        }
        self.overloaded_cpus -= u32::from(old.nr_running > 1);
        self.overloaded_cpus += u32::from(new.nr_running > 1);
        self.contrib[cpu] = new;
    }
}

/// The sums' state: built on first use, then the CPUs marked since.
#[derive(Clone, Debug, Default)]
struct Tracker {
    sums: Option<Sums>,
    /// CPUs borrowed mutably since the sums last caught up, each once.
    marked: Vec<u32>,
    is_marked: Vec<bool>,
}

/// One runqueue per CPU, indexed by CPU id, with the group sums of [`SpanSums`].
///
/// Reads go through `Deref<Target = [Rq]>` and `Index`; writes through `IndexMut` and
/// [`Rqs::iter_mut`], which mark the CPUs they reach.
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
                is_marked: vec![false; n],
            }),
        }
    }

    /// Every runqueue, mutably (each CPU is marked).
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Rq> {
        let t = self.tracker.get_mut();
        for (i, m) in t.is_marked.iter_mut().enumerate() {
            if !*m {
                *m = true;
                t.marked.push(i as u32);
            }
        }
        self.rqs.iter_mut()
    }

    /// The sums of group span `span` as of now: the CPUs changed since the last call are
    /// brought up to date first. `None` if `span` is no group's span.
    ///
    /// `tip_avg_high` is the `LB_TIP_AVG_HIGH` feature (`cpu_load()` depends on it).
    pub fn span_sums(
        &self,
        topo: &Topology,
        tasks: &Tasks,
        span: SpanId,
        tip_avg_high: bool,
    ) -> Option<SpanSums> {
        self.catch_up(topo, tasks, tip_avg_high);
        let t = self.tracker.borrow();
        let sums = t.sums.as_ref().expect("caught up");
        sums.spans.get(span.index()).copied().flatten()
    }

    /// Brings the sums up to date with the CPUs marked since the last call (building them
    /// on the first).
    fn catch_up(&self, topo: &Topology, tasks: &Tasks, tip_avg_high: bool) {
        let mut t = self.tracker.borrow_mut();
        let t = &mut *t;
        match t.sums.as_mut() {
            Some(sums) if sums.tip_avg_high == tip_avg_high => {
                for c in t.marked.drain(..) {
                    let c = c as usize;
                    t.is_marked[c] = false;
                    sums.update(c, Contribution::of(&self.rqs[c], tasks, topo, tip_avg_high));
                }
            }
            _ => {
                t.sums = Some(Sums::build(&self.rqs, tasks, topo, tip_avg_high));
                for c in t.marked.drain(..) {
                    t.is_marked[c as usize] = false;
                }
            }
        }
    }

    /// Whether some CPU has more than one task (`nr_running > 1`), machine-wide; the sums
    /// are brought up to date first, as in [`Rqs::span_sums`].
    pub fn any_overloaded(&self, topo: &Topology, tasks: &Tasks, tip_avg_high: bool) -> bool {
        self.catch_up(topo, tasks, tip_avg_high);
        self.tracker
            .borrow()
            .sums
            .as_ref()
            .is_some_and(|s| s.overloaded_cpus > 0)
    }

    #[inline]
    fn mark(&mut self, i: usize) {
        let t = self.tracker.get_mut();
        if !t.is_marked[i] {
            t.is_marked[i] = true;
            t.marked.push(i as u32);
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
