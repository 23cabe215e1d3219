//! Wake-up placement: `select_task_rq_fair()` for `WF_TTWU`, `WF_FORK` and `WF_EXEC`, with the
//! fast path (`wake_affine()` and `select_idle_sibling()`) and the idle-core bookkeeping it
//! relies on, plus core.c's wrapper `select_task_rq()` and the wake-up schedstat counters.
//!
//! Follows kernel/sched/fair.c of v6.12 (read in a 6.12.67 tree; none of these functions carry
//! out-of-tree code there) and core.c's `select_task_rq()`, `select_fallback_rq()`,
//! `ttwu_stat()`; checked against v6.6. Where v6.6 differs it is said at the function: v6.6
//! has no cluster-first scan and no `prev`/`recent_used_cpu` fallbacks for clusters
//! (`cpus_share_resources()` came in v6.7), and its `wake_affine_idle()` counts delayed tasks
//! (there are none in v6.6).
//!
//! The experiment switch `IDLE_RESERVE` (EXPERIMENTS.md, seed 003) lives here. **It is a
//! reconstruction**: no text of the 2016 patch survives, only the thread's description ("an
//! idle CPU chosen for one wake-up is reserved until that task runs, so concurrent wake-ups do
//! not stack on it"). lbsim models it as a per-CPU `reserved_by` mark, set when
//! `select_idle_sibling()` hands out an idle CPU and cleared when the task runs there or is
//! moved elsewhere; while it stands, every idle test of `select_idle_sibling()` (target, prev,
//! `recent_used_cpu`, `select_idle_smt/core/cpu/capacity()`) treats the CPU as busy for any
//! other task. Off by default.
//!
//! Deliberately left out: energy-aware placement (`find_energy_efficient_cpu()`: lbsim has no
//! energy model, so `is_rd_overutilized()` is true and the kernel skips it), per-CPU kthreads
//! (the I/O-completion stacking rule of `select_idle_sibling()` never applies: lbsim has no
//! kthreads), `PF_EXITING` wakers (`sync` is exactly `WF_SYNC`), `SIS_PROP` (off by default
//! in v6.6 and removed in v6.8; switching it on changes nothing here), uclamp, core
//! scheduling, NUMA balancing and group scheduling. `update_idle_cpu_scan()`, which writes
//! SIS_UTIL's budget, is the load balancer's ([`crate::lb`]).

use lbsim_rq::TaskId;
use lbsim_rq::task::{OnRq, TaskState};
use lbsim_topology::{CpuId, Cpumask, SchedDomain, SdFlag};

use crate::cost::WorkAccount;
use crate::ctx::{BalanceCtx, Placement, WakeFlags};
use crate::fork::{
    asym_fits_cpu, available_idle_cpu, sched_asym_cpucap_active, sched_balance_find_dst_cpu,
    sched_idle_cpu, sync_entity_load_avg, task_util_est, util_fits_cpu,
};
use crate::lb::{capacity_of, cpu_load, sched_smt_active};
use crate::params::LbFeat;
use crate::state::BalanceState;

/// The `record_wakee()` fields of one task (`wakee_flips`, `wakee_flip_decay_ts`,
/// `last_wakee`), for the per-CPU idle tasks, which are not in the task table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WakeeRecord {
    /// `wakee_flips`.
    pub wakee_flips: u32,
    /// `wakee_flip_decay_ts`, in jiffies.
    pub wakee_flip_decay_ts: u64,
    /// `last_wakee`.
    pub last_wakee: Option<TaskId>,
}

/// An `IDLE_RESERVE` mark: `task` was handed this idle CPU when it had been switched out
/// `switches` times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reservation {
    /// The task the CPU is reserved for.
    pub task: TaskId,
    /// Its `nvcsw + nivcsw` when the mark was set: once it changes, the task has run.
    pub switches: u64,
}

/// Mutable placement state that is not in the task table or [`BalanceState`]: the
/// `record_wakee()` fields of each CPU's idle task (the waker when a wake-up comes from an
/// idle CPU), the `IDLE_RESERVE` marks, and the per-CPU `select_rq_mask` scratch mask.
///
/// The balancer keeps one beside its [`BalanceState`] and passes both to
/// [`select_task_rq`].
#[derive(Clone, Debug)]
pub struct WakeState {
    /// The idle task of each CPU, as `current` of a wake-up from an idle CPU.
    pub idle_wakee: Vec<WakeeRecord>,
    /// `IDLE_RESERVE`: per CPU, the task the CPU was handed to and not yet run.
    reserved_by: Vec<Option<Reservation>>,
    /// Number of `Some` in `reserved_by`.
    nr_reserved: usize,
    /// `select_rq_mask` (one per CPU in the kernel; decisions do not nest, so one here).
    select_rq_mask: Cpumask,
}

impl WakeState {
    /// Empty state for a machine of `nr_cpus` CPUs.
    pub fn new(nr_cpus: usize) -> WakeState {
        WakeState {
            idle_wakee: vec![WakeeRecord::default(); nr_cpus],
            reserved_by: vec![None; nr_cpus],
            nr_reserved: 0,
            select_rq_mask: Cpumask::new(nr_cpus),
        }
    }

    /// The `IDLE_RESERVE` mark on `cpu`, if one was set and not cleared (it may have lapsed:
    /// see [`idle_reserve_task_running`]).
    pub fn reservation(&self, cpu: CpuId) -> Option<Reservation> {
        self.reserved_by[cpu.index()]
    }

    fn set_reservation(&mut self, cpu: CpuId, r: Reservation) {
        let slot = &mut self.reserved_by[cpu.index()];
        if slot.is_none() {
            self.nr_reserved += 1;
        }
        *slot = Some(r);
    }

    fn clear_reservation(&mut self, cpu: usize, p: TaskId) {
        let slot = &mut self.reserved_by[cpu];
        if slot.is_some_and(|r| r.task == p) {
            *slot = None;
            self.nr_reserved -= 1;
        }
    }
}

// ---------------------------------------------------------------------------
// IDLE_RESERVE (reconstruction, see the module documentation).
// ---------------------------------------------------------------------------

/// Whether the `IDLE_RESERVE` mark on `cpu` still stands for someone other than `p`.
///
/// A mark stops standing when its task has run (on any CPU: it is running, or it has been
/// switched out since), has exited, or is queued on another CPU (moved there by a balancer).
/// [`idle_reserve_task_running`] and [`idle_reserve_task_moved`] clear marks eagerly; this
/// check makes a missed notification harmless.
fn reserved_for_other(
    ctx: &BalanceCtx<'_>,
    reserved_by: &[Option<Reservation>],
    cpu: CpuId,
    p: TaskId,
) -> bool {
    if !ctx.features.enabled(LbFeat::IdleReserve) {
        return false;
    }
    let Some(r) = reserved_by[cpu.index()] else {
        return false;
    };
    if r.task == p {
        return false;
    }
    let Some(t) = ctx.tasks.get(r.task) else {
        return false;
    };
    if t.nvcsw + t.nivcsw != r.switches {
        return false;
    }
    match t.state {
        TaskState::Running | TaskState::Exited => false,
        TaskState::Queued => t.cpu == cpu && t.on_rq == OnRq::Queued,
        TaskState::New | TaskState::Sleeping => true,
    }
}

/// `p` started running on `cpu` (set_next_task): its `IDLE_RESERVE` mark is spent, on `cpu`
/// or, if it was moved before it ran, wherever the mark stands.
pub fn idle_reserve_task_running(wake: &mut WakeState, p: TaskId, cpu: CpuId) {
    if wake.nr_reserved == 0 {
        return;
    }
    wake.clear_reservation(cpu.index(), p);
    for c in 0..wake.reserved_by.len() {
        wake.clear_reservation(c, p);
    }
}

/// `p` was moved off `src` before it ran there (a balancer migration): the mark it held on
/// `src` is released.
pub fn idle_reserve_task_moved(wake: &mut WakeState, p: TaskId, src: CpuId) {
    wake.clear_reservation(src.index(), p);
}

/// The wake-up search's view of idleness: the kernel's test, plus `IDLE_RESERVE`'s marks.
struct Sis<'c, 'a> {
    ctx: &'c BalanceCtx<'a>,
    reserved_by: &'c [Option<Reservation>],
    p: TaskId,
}

impl Sis<'_, '_> {
    /// `available_idle_cpu(cpu)`, a CPU reserved for another task counting as busy.
    #[inline]
    fn available_idle_cpu(&self, cpu: CpuId) -> bool {
        available_idle_cpu(self.ctx, cpu)
            && !reserved_for_other(self.ctx, self.reserved_by, cpu, self.p)
    }

    /// `sched_idle_cpu(cpu)`, a CPU reserved for another task counting as busy.
    #[inline]
    fn sched_idle_cpu(&self, cpu: CpuId) -> bool {
        sched_idle_cpu(self.ctx, cpu)
            && !reserved_for_other(self.ctx, self.reserved_by, cpu, self.p)
    }

    /// `available_idle_cpu(cpu) || sched_idle_cpu(cpu)`.
    #[inline]
    fn idle(&self, cpu: CpuId) -> bool {
        self.available_idle_cpu(cpu) || self.sched_idle_cpu(cpu)
    }
}

// ---------------------------------------------------------------------------
// Waker/wakee relationships.
// ---------------------------------------------------------------------------

/// The `record_wakee()` fields of the waker on `this_cpu` (`current`): its task, or the CPU's
/// idle task.
fn current_record<'w>(
    ctx: &'w mut BalanceCtx<'_>,
    wake: &'w mut WakeState,
    this_cpu: CpuId,
) -> RecordMut<'w> {
    match ctx.rqs[this_cpu.index()].curr {
        Some(curr) => {
            let t = &mut ctx.tasks[curr];
            RecordMut {
                wakee_flips: &mut t.wakee_flips,
                wakee_flip_decay_ts: &mut t.wakee_flip_decay_ts,
                last_wakee: &mut t.last_wakee,
            }
        }
        None => {
            let r = &mut wake.idle_wakee[this_cpu.index()];
            RecordMut {
                wakee_flips: &mut r.wakee_flips,
                wakee_flip_decay_ts: &mut r.wakee_flip_decay_ts,
                last_wakee: &mut r.last_wakee,
            }
        }
    }
}

struct RecordMut<'w> {
    wakee_flips: &'w mut u32,
    wakee_flip_decay_ts: &'w mut u64,
    last_wakee: &'w mut Option<TaskId>,
}

/// Follows fair.c: record_wakee() (v6.6-v6.12): the waker's `wakee_flips` is halved at most
/// once a second (when more than HZ jiffies passed since the last decay) and counts each
/// wake-up of a different task than the last one.
pub fn record_wakee(ctx: &mut BalanceCtx<'_>, wake: &mut WakeState, p: TaskId, this_cpu: CpuId) {
    let jiffies = ctx.jiffies;
    let hz = u64::from(ctx.hz);
    let rec = current_record(ctx, wake, this_cpu);
    // time_after(jiffies, decay_ts + HZ), on wrapping unsigned longs.
    if (rec
        .wakee_flip_decay_ts
        .wrapping_add(hz)
        .wrapping_sub(jiffies) as i64)
        < 0
    {
        *rec.wakee_flips >>= 1;
        *rec.wakee_flip_decay_ts = jiffies;
    }
    if *rec.last_wakee != Some(p) {
        *rec.last_wakee = Some(p);
        *rec.wakee_flips = rec.wakee_flips.wrapping_add(1);
    }
}

/// Follows fair.c: wake_wide() (v6.6-v6.12): a 1:N waker/wakee relationship with N above the
/// LLC size. With `master` the larger and `slave` the smaller of the waker's and the wakee's
/// `wakee_flips` and `factor` the waking CPU's `sd_llc_size`, wake wide iff `slave >= factor`
/// and `master >= slave * factor`.
pub fn wake_wide(ctx: &BalanceCtx<'_>, wake: &WakeState, p: TaskId, this_cpu: CpuId) -> bool {
    let current_flips = match ctx.rqs[this_cpu.index()].curr {
        Some(curr) => ctx.tasks[curr].wakee_flips,
        None => wake.idle_wakee[this_cpu.index()].wakee_flips,
    };
    let (mut master, mut slave) = (current_flips, ctx.tasks[p].wakee_flips);
    let factor = ctx.topo.sd_llc_size(this_cpu);
    if master < slave {
        std::mem::swap(&mut master, &mut slave);
    }
    // `int factor` against `unsigned int`s: the comparison is unsigned; `slave * factor`
    // wraps as the kernel's unsigned multiplication does.
    !(slave < factor || master < slave.wrapping_mul(factor))
}

// ---------------------------------------------------------------------------
// wake_affine.
// ---------------------------------------------------------------------------

/// Follows fair.c: wake_affine_idle() (v6.12): if the waking CPU is idle and shares cache
/// with `prev_cpu`, take `prev_cpu` if it is idle too, else the waking CPU; a sync wake-up
/// from a CPU whose only (non-delayed) task is the waker takes the waking CPU; an idle
/// `prev_cpu` is taken; otherwise no opinion (`None`, the kernel's `nr_cpumask_bits`).
/// (v6.6 tests `nr_running == 1`: the same, without delayed dequeue.)
pub fn wake_affine_idle(
    ctx: &BalanceCtx<'_>,
    this_cpu: CpuId,
    prev_cpu: CpuId,
    sync: bool,
) -> Option<CpuId> {
    if available_idle_cpu(ctx, this_cpu) && ctx.topo.cpus_share_cache(this_cpu, prev_cpu) {
        return Some(if available_idle_cpu(ctx, prev_cpu) {
            prev_cpu
        } else {
            this_cpu
        });
    }
    if sync {
        let rq = &ctx.rqs[this_cpu.index()];
        if rq.nr_running.wrapping_sub(rq.cfs.h_nr_delayed) == 1 {
            return Some(this_cpu);
        }
    }
    if available_idle_cpu(ctx, prev_cpu) {
        return Some(prev_cpu);
    }
    None
}

/// Follows fair.c: wake_affine_weight() (v6.6-v6.12): compare the waking CPU's load with the
/// wakee added (and, for a sync wake-up, the waker removed: if the waker alone outweighs the
/// CPU's load, take the waking CPU at once) against the previous CPU's load without the
/// wakee, each scaled by the other CPU's capacity; `WA_BIAS` weighs the waking side by 100
/// and the previous side by `100 + (imbalance_pct - 100) / 2`; a sync wake-up adds 1 to the
/// previous side so that a tie stacks the wakee on the waker. The waking CPU wins iff its
/// side is strictly smaller. Signed 64-bit arithmetic, as the kernel's `s64`.
pub fn wake_affine_weight(
    ctx: &BalanceCtx<'_>,
    sd: &SchedDomain,
    p: TaskId,
    this_cpu: CpuId,
    prev_cpu: CpuId,
    sync: bool,
) -> Option<CpuId> {
    let wa_bias = ctx.features.enabled(LbFeat::WaBias);
    let mut this_eff_load = cpu_load(ctx, this_cpu) as i64;
    if sync {
        // task_h_load(current): the idle task carries no load.
        let current_load = ctx.rqs[this_cpu.index()]
            .curr
            .map_or(0, |c| crate::lb::cpu::task_h_load(ctx, c)) as i64;
        if current_load > this_eff_load {
            return Some(this_cpu);
        }
        this_eff_load -= current_load;
    }
    let task_load = crate::lb::cpu::task_h_load(ctx, p) as i64;
    this_eff_load += task_load;
    if wa_bias {
        this_eff_load *= 100;
    }
    this_eff_load *= capacity_of(ctx, prev_cpu) as i64;

    let mut prev_eff_load = cpu_load(ctx, prev_cpu) as i64;
    prev_eff_load -= task_load;
    if wa_bias {
        prev_eff_load *= 100 + (i64::from(sd.imbalance_pct) - 100) / 2;
    }
    prev_eff_load *= capacity_of(ctx, this_cpu) as i64;
    if sync {
        prev_eff_load += 1;
    }
    (this_eff_load < prev_eff_load).then_some(this_cpu)
}

/// Follows fair.c: wake_affine() (v6.6-v6.12): `WA_IDLE`'s opinion, else `WA_WEIGHT`'s; the
/// waking CPU if that is what they chose (counting `ttwu_move_affine` on `sd`, the waking
/// CPU's domain at `level`), else `prev_cpu`. Both runqueues are read (`work`).
#[allow(clippy::too_many_arguments)]
pub fn wake_affine(
    ctx: &BalanceCtx<'_>,
    st: &mut BalanceState,
    level: usize,
    p: TaskId,
    this_cpu: CpuId,
    prev_cpu: CpuId,
    sync: bool,
    work: &mut WorkAccount,
) -> CpuId {
    let sd = &ctx.topo.domains(this_cpu)[level];
    let mut target = None;
    work.cpus_scanned += 2;
    if ctx.features.enabled(LbFeat::WaIdle) {
        target = wake_affine_idle(ctx, this_cpu, prev_cpu, sync);
    }
    if ctx.features.enabled(LbFeat::WaWeight) && target.is_none() {
        target = wake_affine_weight(ctx, sd, p, this_cpu, prev_cpu, sync);
    }
    if target != Some(this_cpu) {
        return prev_cpu;
    }
    st.schedstat.sd_mut(this_cpu, level).ttwu_move_affine += 1;
    this_cpu
}

// ---------------------------------------------------------------------------
// Idle cores (sd_llc_shared->has_idle_cores).
// ---------------------------------------------------------------------------

/// Follows fair.c: test_idle_cores() (v6.6-v6.12): `has_idle_cores` of `cpu`'s LLC.
pub fn test_idle_cores(ctx: &BalanceCtx<'_>, st: &BalanceState, cpu: CpuId) -> bool {
    st.sd_llc_shared(ctx.topo, cpu)
        .is_some_and(|s| s.has_idle_cores)
}

/// Follows fair.c: set_idle_cores() (v6.6-v6.12): set `has_idle_cores` of `cpu`'s LLC.
pub fn set_idle_cores(ctx: &BalanceCtx<'_>, st: &mut BalanceState, cpu: CpuId, val: bool) {
    if let Some(s) = st.sd_llc_shared_mut(ctx.topo, cpu) {
        s.has_idle_cores = val;
    }
}

/// Follows fair.c: update_idle_core() / __update_idle_core() (v6.6-v6.12), run when `cpu`
/// switches to its idle task (`set_next_task_idle()`): on an SMT machine, if the LLC is not
/// already marked as having an idle core and every other SMT sibling of `cpu` is idle, mark
/// it. Returns the siblings read.
///
/// The engine calls this (through the balancer's idle-entry hook) each time a CPU goes idle.
pub fn update_idle_core(ctx: &BalanceCtx<'_>, st: &mut BalanceState, cpu: CpuId) -> WorkAccount {
    let mut work = WorkAccount::default();
    if !sched_smt_active(ctx.topo) || test_idle_cores(ctx, st, cpu) {
        return work;
    }
    for &sibling in ctx.topo.machine().smt_siblings(cpu) {
        if sibling == cpu {
            continue;
        }
        work.cpus_scanned += 1;
        if !available_idle_cpu(ctx, sibling) {
            return work;
        }
    }
    set_idle_cores(ctx, st, cpu, true);
    work
}

// ---------------------------------------------------------------------------
// select_idle_sibling and its scans.
// ---------------------------------------------------------------------------

/// `find_next_bit(mask, size, offset)`: the first CPU in `[offset, size)`, or `size`.
fn find_next_bit(mask: &Cpumask, size: usize, offset: usize) -> usize {
    if offset >= size {
        return size;
    }
    match mask.next_from(CpuId(offset as u32)) {
        Some(c) if c.index() < size => c.index(),
        _ => size,
    }
}

/// The kernel's `for_each_cpu_wrap(cpu, mask, start)` as a cursor over a mask that may change
/// during the walk (`find_next_bit_wrap()` for the first CPU, `__for_each_wrap()` after):
/// CPUs from `start` up, then from 0 below `start`, each read from the mask as it is then.
struct WrapWalk {
    size: usize,
    start: usize,
    cur: Option<usize>,
}

impl WrapWalk {
    fn new(size: usize, start: usize) -> WrapWalk {
        WrapWalk {
            size,
            start,
            cur: None,
        }
    }

    fn next(&mut self, mask: &Cpumask) -> Option<CpuId> {
        let (size, start) = (self.size, self.start);
        let bit = match self.cur {
            None => {
                // find_next_bit_wrap()
                let bit = find_next_bit(mask, size, start);
                if bit < size || start == 0 {
                    bit
                } else {
                    let bit = find_next_bit(mask, start, 0);
                    if bit < start { bit } else { size }
                }
            }
            Some(prev) => {
                // __for_each_wrap(mask, size, start, prev + 1)
                let mut n = prev + 1;
                let mut found = None;
                if n > start {
                    let bit = find_next_bit(mask, size, n);
                    if bit < size {
                        found = Some(bit);
                    } else {
                        n = 0;
                    }
                }
                found.unwrap_or_else(|| {
                    let bit = find_next_bit(mask, start, n);
                    if bit < start { bit } else { size }
                })
            }
        };
        if bit >= size {
            self.cur = Some(size);
            return None;
        }
        self.cur = Some(bit);
        Some(CpuId(bit as u32))
    }
}

/// [`WrapWalk`]'s order over a subset of an interned span, from the span's CPU list: the CPUs
/// of the list from the first at or after `start` up, then those below `start`. The caller
/// tests its mask at each CPU as it comes (lbsim's shortcut: no word scan per step). The
/// kernel's walk over a mask that only loses CPUs during the walk (select_idle_core() clears
/// a core's siblings) visits the same CPUs in the same order: each CPU still set when the
/// walk reaches it.
struct SpanWrap<'a> {
    cpus: &'a [CpuId],
    pos: usize,
    left: usize,
}

impl<'a> SpanWrap<'a> {
    fn new(cpus: &'a [CpuId], start: usize) -> SpanWrap<'a> {
        let pos = cpus.partition_point(|c| c.index() < start);
        SpanWrap {
            cpus,
            pos: if pos == cpus.len() { 0 } else { pos },
            left: cpus.len(),
        }
    }
}

impl Iterator for SpanWrap<'_> {
    type Item = CpuId;

    #[inline]
    fn next(&mut self) -> Option<CpuId> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let cpu = self.cpus[self.pos];
        self.pos += 1;
        if self.pos == self.cpus.len() {
            self.pos = 0;
        }
        Some(cpu)
    }
}

/// Follows fair.c: __select_idle_cpu() (v6.6-v6.12): `cpu` if it is idle or runs only
/// SCHED_IDLE tasks (core-scheduling cookies always match).
fn __select_idle_cpu(sis: &Sis<'_, '_>, cpu: CpuId) -> Option<CpuId> {
    sis.idle(cpu).then_some(cpu)
}

/// Follows fair.c: select_idle_core() (v6.6-v6.12): `core` if every SMT sibling of it is idle;
/// otherwise remember in `idle_cpu` the first allowed idle sibling (or one running only
/// SCHED_IDLE tasks) if none is remembered yet, drop the core's siblings from `cpus`, and
/// answer `None`.
fn select_idle_core(
    sis: &Sis<'_, '_>,
    core: CpuId,
    cpus: &mut Cpumask,
    idle_cpu: &mut Option<CpuId>,
    work: &mut WorkAccount,
) -> Option<CpuId> {
    let machine = sis.ctx.topo.machine();
    let mut idle = true;
    for &cpu in machine.smt_siblings(core) {
        work.cpus_scanned += 1;
        if !sis.available_idle_cpu(cpu) {
            idle = false;
            if idle_cpu.is_none() {
                if sis.sched_idle_cpu(cpu) && cpus.test(cpu) {
                    *idle_cpu = Some(cpu);
                    break;
                }
                continue;
            }
            break;
        }
        if idle_cpu.is_none() && cpus.test(cpu) {
            *idle_cpu = Some(cpu);
        }
    }
    if idle {
        return Some(core);
    }
    cpus.andnot_assign(machine.smt_mask(core));
    None
}

/// Follows fair.c: select_idle_smt() (v6.6-v6.12): an idle (or SCHED_IDLE-only) allowed SMT
/// sibling of `target` inside `sd`.
fn select_idle_smt(
    sis: &Sis<'_, '_>,
    sd: &SchedDomain,
    target: CpuId,
    work: &mut WorkAccount,
) -> Option<CpuId> {
    let ctx = sis.ctx;
    let span = ctx.topo.span(sd.span);
    let cpus_mask = &ctx.tasks[sis.p].cpus_mask;
    for &cpu in ctx.topo.machine().smt_siblings(target) {
        if !cpus_mask.test(cpu) || cpu == target || !span.test(cpu) {
            continue;
        }
        work.cpus_scanned += 1;
        if sis.idle(cpu) {
            return Some(cpu);
        }
    }
    None
}

/// `cpumask_and(cpus, sched_domain_span(sd), p->cpus_ptr)`: the span itself for a task
/// allowed every CPU (lbsim's: no pass over `p`'s mask).
#[inline]
fn span_and_allowed(ctx: &BalanceCtx<'_>, cpus: &mut Cpumask, sd: &SchedDomain, p: TaskId) {
    cpus.copy_from(ctx.topo.span(sd.span));
    if !crate::fork::allowed_everywhere(ctx, p) {
        cpus.and_assign(&ctx.tasks[p].cpus_mask);
    }
}

/// Follows fair.c: select_idle_cpu() (v6.12): scan the LLC (`sd`) for an idle CPU, or for a
/// fully idle core when `has_idle_core`.
///
/// With `SIS_UTIL` the scan of single CPUs stops after `nr_idle_scan` CPUs (a budget of 0
/// gives up at once); the core scan is not limited. On a cluster machine the target's cluster
/// is scanned first (v6.7+; v6.6 scans the LLC in one pass). Both scans start after `target`
/// and wrap. A core scan that finds no idle core clears `has_idle_cores` and answers the idle
/// CPU it noticed on the way, if any. `work` counts every CPU read.
fn select_idle_cpu(
    sis: &Sis<'_, '_>,
    st: &mut BalanceState,
    cpus: &mut Cpumask,
    sd: &SchedDomain,
    has_idle_core: bool,
    target: CpuId,
    work: &mut WorkAccount,
) -> Option<CpuId> {
    let ctx = sis.ctx;
    let topo = ctx.topo;
    let size = topo.nr_cpus();
    let mut idle_cpu: Option<CpuId> = None;
    let mut nr: i64 = i64::from(i32::MAX);

    span_and_allowed(ctx, cpus, sd, sis.p);

    if ctx.features.enabled(LbFeat::SisUtil)
        && let Some(share) = st.sd_llc_shared(topo, target)
    {
        // because !--nr is the condition to stop the scan
        nr = i64::from(share.nr_idle_scan) + 1;
        // an overloaded LLC is unlikely to have an idle CPU or core
        if nr == 1 {
            return None;
        }
    }

    if topo.has_cluster() {
        let sg = topo.local_group(sd);
        if sg.flags.contains(SdFlag::Cluster) {
            let span = topo.span(sg.span);
            debug_assert!(
                SpanWrap::new(topo.span_cpus(sg.span), target.index() + 1).eq(WrapWalkIter {
                    walk: WrapWalk::new(size, target.index() + 1),
                    mask: span,
                })
            );
            if has_idle_core {
                for cpu in SpanWrap::new(topo.span_cpus(sg.span), target.index() + 1) {
                    if !cpus.test(cpu) {
                        continue;
                    }
                    if let Some(i) = select_idle_core(sis, cpu, cpus, &mut idle_cpu, work) {
                        return Some(i);
                    }
                }
            } else {
                let within = (span, topo.span_cpus(sg.span));
                match scan_idle_cpus(sis, cpus, within, target.index() + 1, &mut nr, work) {
                    CpuScan::Found(i) => return Some(i),
                    CpuScan::OutOfBudget => return None,
                    CpuScan::Done => {}
                }
            }
            cpus.andnot_assign(span);
        }
    }

    // `cpus` is the LLC's span, less what the steps above cleared.
    if !has_idle_core {
        let within = (topo.span(sd.span), topo.span_cpus(sd.span));
        return match scan_idle_cpus(sis, cpus, within, target.index() + 1, &mut nr, work) {
            CpuScan::Found(i) => Some(i),
            CpuScan::OutOfBudget | CpuScan::Done => None,
        };
    }
    #[cfg(debug_assertions)]
    let mut walk = WrapWalk::new(size, target.index() + 1);
    for cpu in SpanWrap::new(topo.span_cpus(sd.span), target.index() + 1) {
        if !cpus.test(cpu) {
            continue;
        }
        #[cfg(debug_assertions)]
        debug_assert_eq!(
            walk.next(cpus),
            Some(cpu),
            "SpanWrap differs from the wrap walk"
        );
        if let Some(i) = select_idle_core(sis, cpu, cpus, &mut idle_cpu, work) {
            return Some(i);
        }
    }

    set_idle_cores(ctx, st, target, false);
    idle_cpu
}

/// How [`scan_idle_cpus`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CpuScan {
    /// An idle CPU (or one running only SCHED_IDLE tasks).
    Found(CpuId),
    /// `nr` ran out: `select_idle_cpu()` gives up.
    OutOfBudget,
    /// Every CPU read, none idle.
    Done,
}

/// Follows fair.c: the single-CPU arm of select_idle_cpu()'s loops (v6.12): over the CPUs of
/// `cpus` inside the span `within` (its mask and its sorted CPU list), in
/// `for_each_cpu_wrap()` order from `start`, each takes one from the budget `nr` (the scan
/// gives up when it reaches 0), is read (`work`) and tested with `__select_idle_cpu()`, up to
/// the first idle one.
///
/// lbsim's shortcut: only the CPUs of
/// [`Rqs::idle_candidates`](crate::rqs::Rqs::idle_candidates) are tested; every other CPU
/// fails `__select_idle_cpu()` on its runqueue alone, so it is counted (by popcount, a word
/// of CPUs at a time), for the budget and for `work`, without being read.
/// The budget, the work and the answer are the loop's. Debug builds run the loop beside it.
fn scan_idle_cpus(
    sis: &Sis<'_, '_>,
    cpus: &Cpumask,
    within: (&Cpumask, &[CpuId]),
    start: usize,
    nr: &mut i64,
    work: &mut WorkAccount,
) -> CpuScan {
    #[cfg(debug_assertions)]
    let expect = {
        let (mut nr, mut work) = (*nr, *work);
        let end = scan_idle_cpus_loop(sis, cpus, within.0, start, &mut nr, &mut work);
        (end, nr, work)
    };
    let end = scan_idle_cpus_masked(sis, cpus, within, start, nr, work);
    #[cfg(debug_assertions)]
    debug_assert_eq!(
        (end, *nr, *work),
        expect,
        "the masked scan differs from the loop"
    );
    end
}

/// [`scan_idle_cpus`] CPU by CPU, as the kernel's loop.
#[cfg(debug_assertions)]
fn scan_idle_cpus_loop(
    sis: &Sis<'_, '_>,
    cpus: &Cpumask,
    within: &Cpumask,
    start: usize,
    nr: &mut i64,
    work: &mut WorkAccount,
) -> CpuScan {
    let start = CpuId(start.min(cpus.nr_cpu_ids()) as u32);
    for cpu in cpus.iter_wrap(start).filter(|&c| within.test(c)) {
        *nr -= 1;
        if *nr <= 0 {
            return CpuScan::OutOfBudget;
        }
        work.cpus_scanned += 1;
        if let Some(i) = __select_idle_cpu(sis, cpu) {
            return CpuScan::Found(i);
        }
    }
    CpuScan::Done
}

/// [`scan_idle_cpus`] a word of CPUs at a time, testing only the idle candidates; only the
/// words between the span's first and last CPU are read.
fn scan_idle_cpus_masked(
    sis: &Sis<'_, '_>,
    cpus: &Cpumask,
    (within, span): (&Cpumask, &[CpuId]),
    start: usize,
    nr: &mut i64,
    work: &mut WorkAccount,
) -> CpuScan {
    let (Some(first), Some(last)) = (span.first(), span.last()) else {
        return CpuScan::Done;
    };
    let (first, end) = (first.index(), last.index() + 1);
    let candidates = sis.ctx.rqs.idle_candidates();
    let (words, inside) = (cpus.as_words(), within.as_words());
    let start = start.min(cpus.nr_cpu_ids());
    let nr0 = *nr;
    // CPUs passed so far; the CPU at position `j` (from 1) is read if `j < nr0`.
    let mut j: i64 = 0;
    for (lo, hi) in [(start.max(first), end), (first, start.min(end))] {
        if lo >= hi {
            continue;
        }
        for wi in lo / 64..=(hi - 1) / 64 {
            let mut m = words[wi] & inside[wi];
            if wi == lo / 64 {
                m &= u64::MAX << (lo % 64);
            }
            if wi == (hi - 1) / 64 && hi % 64 != 0 {
                m &= (1u64 << (hi % 64)) - 1;
            }
            let mut c = m & candidates.get(wi).copied().unwrap_or(0);
            while c != 0 {
                let b = c.trailing_zeros();
                let at = j + i64::from((m & ((1u64 << b) - 1)).count_ones()) + 1;
                if at >= nr0 {
                    return out_of_budget(nr, nr0, work);
                }
                let cpu = CpuId((wi * 64) as u32 + b);
                if let Some(i) = __select_idle_cpu(sis, cpu) {
                    *nr = nr0 - at;
                    work.cpus_scanned += at as u32;
                    return CpuScan::Found(i);
                }
                c &= c - 1;
            }
            j += i64::from(m.count_ones());
            if j >= nr0 {
                return out_of_budget(nr, nr0, work);
            }
        }
    }
    *nr = nr0 - j;
    work.cpus_scanned += j as u32;
    CpuScan::Done
}

/// The end of [`scan_idle_cpus_masked`] when the `nr0`-th CPU is reached: the CPUs before it
/// were read.
fn out_of_budget(nr: &mut i64, nr0: i64, work: &mut WorkAccount) -> CpuScan {
    *nr = 0;
    work.cpus_scanned += (nr0 - 1) as u32;
    CpuScan::OutOfBudget
}

/// A [`WrapWalk`] over a mask that stays as it is, as an iterator (for debug builds'
/// comparisons with [`SpanWrap`]).
struct WrapWalkIter<'a> {
    walk: WrapWalk,
    mask: &'a Cpumask,
}

impl Iterator for WrapWalkIter<'_> {
    type Item = CpuId;

    fn next(&mut self) -> Option<CpuId> {
        self.walk.next(self.mask)
    }
}

/// Follows fair.c: select_idle_capacity() (v6.6-v6.12): on an asymmetric-capacity domain,
/// from `target` round the domain's allowed CPUs, the first idle one that fits `p`
/// (`task_util_est`); failing that the idle one with the largest capacity (the first of equal
/// ones); `None` if no CPU is idle.
fn select_idle_capacity(
    sis: &Sis<'_, '_>,
    cpus: &mut Cpumask,
    sd: &SchedDomain,
    target: CpuId,
    work: &mut WorkAccount,
) -> Option<CpuId> {
    let ctx = sis.ctx;
    let topo = ctx.topo;
    span_and_allowed(ctx, cpus, sd, sis.p);
    let task_util = task_util_est(ctx, sis.p);
    let (mut best_cap, mut best_fits, mut best_cpu) = (0u64, 0i32, None);
    let mut walk = WrapWalk::new(topo.nr_cpus(), target.index());
    while let Some(cpu) = walk.next(cpus) {
        work.cpus_scanned += 1;
        let cpu_cap = capacity_of(ctx, cpu);
        if !sis.idle(cpu) {
            continue;
        }
        let fits = util_fits_cpu(ctx, task_util, cpu);
        if fits > 0 {
            return Some(cpu);
        }
        // fits < 0 (only a uclamp_min boost) would compare get_actual_cpu_capacity().
        if fits < best_fits || (fits == best_fits && cpu_cap > best_cap) {
            best_cap = cpu_cap;
            best_cpu = Some(cpu);
            best_fits = fits;
        }
    }
    best_cpu
}

/// `cpus_share_resources(a, b)` (v6.7+): the same cluster (`sd_share_id`).
fn cpus_share_resources(ctx: &BalanceCtx<'_>, a: CpuId, b: CpuId) -> bool {
    a == b || ctx.topo.sd_share_id(a) == ctx.topo.sd_share_id(b)
}

/// Follows fair.c: select_idle_sibling() (v6.12): the fast path's choice near `target` (the
/// CPU wake_affine() chose, or `prev`).
///
/// In order, the first that is idle (or runs only SCHED_IDLE tasks) and, on an asymmetric
/// machine, fits the task: `target`; `prev` if it shares the LLC with `target` (on a cluster
/// machine only if it also shares the cluster; otherwise remembered as a fallback); the task's
/// `recent_used_cpu` (which becomes `prev`) if it shares the LLC, is allowed, and differs from
/// both (same cluster rule). Then on an asymmetric machine `select_idle_capacity()` over
/// `sd_asym_cpucapacity` decides (or `target`). Otherwise, in `target`'s LLC: on an SMT
/// machine without an idle core, an idle sibling of `prev` (`select_idle_smt()`); then
/// `select_idle_cpu()`; then the cluster fallbacks; then `target`. (v6.6: no cluster rules.)
fn select_idle_sibling(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    wake: &mut WakeState,
    p: TaskId,
    prev: CpuId,
    target: CpuId,
    work: &mut WorkAccount,
) -> CpuId {
    let asym = sched_asym_cpucap_active(ctx);
    let mut task_util = 0;
    if asym {
        sync_entity_load_avg(ctx, p);
        task_util = task_util_est(ctx, p);
    }
    let topo = ctx.topo;
    let cluster_active = topo.has_cluster();

    let mut prev_aff = None;
    {
        let sis = Sis {
            ctx,
            reserved_by: &wake.reserved_by,
            p,
        };
        work.cpus_scanned += 1;
        if sis.idle(target) && asym_fits_cpu(ctx, task_util, target) {
            return target;
        }
        if prev != target && topo.cpus_share_cache(prev, target) {
            work.cpus_scanned += 1;
            if sis.idle(prev) && asym_fits_cpu(ctx, task_util, prev) {
                if !cluster_active || cpus_share_resources(ctx, prev, target) {
                    return prev;
                }
                prev_aff = Some(prev);
            }
        }
    }

    // The per-CPU kthread stacking rule (is_per_cpu_kthread(current)) never applies: lbsim
    // has no kthreads.

    // Check a recently used CPU as a potential idle candidate; prev becomes the next one.
    let recent = std::mem::replace(&mut ctx.tasks[p].recent_used_cpu, prev);

    let ctx: &BalanceCtx<'_> = ctx;
    let WakeState {
        reserved_by,
        select_rq_mask,
        ..
    } = wake;
    let sis = Sis {
        ctx,
        reserved_by,
        p,
    };
    let mut recent_used_cpu = None;
    if recent != prev
        && recent != target
        && topo.cpus_share_cache(recent, target)
        && ctx.tasks[p].cpus_mask.test(recent)
    {
        work.cpus_scanned += 1;
        if sis.idle(recent) && asym_fits_cpu(ctx, task_util, recent) {
            if !cluster_active || cpus_share_resources(ctx, recent, target) {
                return recent;
            }
            recent_used_cpu = Some(recent);
        }
    }

    if asym && let Some(level) = topo.sd_asym_cpucapacity(target) {
        let sd = &topo.domains(target)[level];
        return select_idle_capacity(&sis, select_rq_mask, sd, target, work).unwrap_or(target);
    }

    let Some(llc) = topo.sd_llc(target) else {
        return target;
    };
    let sd = &topo.domains(target)[llc];

    let mut has_idle_core = false;
    if sched_smt_active(topo) {
        has_idle_core = test_idle_cores(ctx, st, target);
        if !has_idle_core
            && topo.cpus_share_cache(prev, target)
            && let Some(i) = select_idle_smt(&sis, sd, prev, work)
        {
            return i;
        }
    }

    if let Some(i) = select_idle_cpu(&sis, st, select_rq_mask, sd, has_idle_core, target, work) {
        return i;
    }

    prev_aff.or(recent_used_cpu).unwrap_or(target)
}

// ---------------------------------------------------------------------------
// select_task_rq_fair and core.c's wrapper.
// ---------------------------------------------------------------------------

/// Follows fair.c: select_task_rq_fair() (v6.6-v6.12): where `p` (last on `prev_cpu`) should
/// run, decided on `this_cpu`.
///
/// For a wake-up (`WF_TTWU`): `record_wakee()`; `WF_CURRENT_CPU` takes the waking CPU if
/// allowed; energy-aware placement is skipped (no energy model); `want_affine` unless
/// `wake_wide()` or the waking CPU is not allowed. Then this CPU's domains are walked bottom-up:
/// the first `SD_WAKE_AFFINE` domain spanning `prev_cpu` decides by `wake_affine()` (if the
/// two CPUs differ) and ends the walk with no slow path; otherwise the highest consecutive
/// domain with the placement's `SD_BALANCE_*` flag (`wake_flags & 0xF`) is remembered, the walk
/// stopping at the first domain without it unless `want_affine`. A remembered domain takes the
/// slow path ([`crate::fork::sched_balance_find_dst_cpu`]: fork and exec, since sd_init() never
/// sets `SD_BALANCE_WAKE`); a wake-up otherwise takes the fast path, `select_idle_sibling()`.
///
/// With `IDLE_RESERVE` (lbsim's reconstruction, see the module documentation), an idle CPU the
/// fast path hands out is marked as reserved for `p`.
///
/// Call it through [`select_task_rq`], which adds core.c's affinity handling. `work` counts the
/// runqueues read and the domains the slow path examined.
#[allow(clippy::too_many_arguments)]
pub fn select_task_rq_fair(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    wake: &mut WakeState,
    p: TaskId,
    prev_cpu: CpuId,
    this_cpu: CpuId,
    wake_flags: WakeFlags,
    work: &mut WorkAccount,
) -> CpuId {
    let sync = wake_flags.contains(WakeFlags::SYNC);
    let cpu = this_cpu;
    let mut new_cpu = prev_cpu;
    let mut want_affine = false;
    // SD_BALANCE_* and WF_* share the low nibble.
    let sd_flag = wake_flags.bits() & 0xF;
    let ttwu = wake_flags.contains(WakeFlags::TTWU);

    if ttwu {
        record_wakee(ctx, wake, p, this_cpu);
        if wake_flags.contains(WakeFlags::CURRENT_CPU) && ctx.tasks[p].cpus_mask.test(cpu) {
            return cpu;
        }
        want_affine = !wake_wide(ctx, wake, p, this_cpu) && ctx.tasks[p].cpus_mask.test(cpu);
    }

    let topo = ctx.topo;
    let mut sd: Option<usize> = None;
    for (level, tmp) in topo.domains(cpu).iter().enumerate() {
        if want_affine
            && tmp.flags.contains(SdFlag::WakeAffine)
            && topo.span(tmp.span).test(prev_cpu)
        {
            if cpu != prev_cpu {
                new_cpu = wake_affine(ctx, st, level, p, cpu, prev_cpu, sync, work);
            }
            sd = None;
            break;
        }
        if tmp.flags.bits() & sd_flag != 0 {
            sd = Some(level);
        } else if !want_affine {
            break;
        }
    }

    if let Some(level) = sd {
        new_cpu = sched_balance_find_dst_cpu(ctx, st, level, cpu, prev_cpu, p, sd_flag, work);
    } else if ttwu {
        new_cpu = select_idle_sibling(ctx, st, wake, p, prev_cpu, new_cpu, work);
        idle_reserve_placed(ctx, wake, p, new_cpu);
    }
    new_cpu
}

/// `IDLE_RESERVE` (lbsim's reconstruction, see the module documentation): the fast path gave
/// `p` the CPU `new_cpu`; if it is idle (and not reserved for another task), mark it as
/// reserved for `p`. Also called by the pre-v5.5 placement ([`crate::legacy`]).
pub(crate) fn idle_reserve_placed(
    ctx: &BalanceCtx<'_>,
    wake: &mut WakeState,
    p: TaskId,
    new_cpu: CpuId,
) {
    if ctx.features.enabled(LbFeat::IdleReserve)
        && (Sis {
            ctx,
            reserved_by: &wake.reserved_by,
            p,
        })
        .idle(new_cpu)
    {
        let t = &ctx.tasks[p];
        wake.set_reservation(
            new_cpu,
            Reservation {
                task: p,
                switches: t.nvcsw + t.nivcsw,
            },
        );
    }
}

/// `IDLE_RESERVE`: whether `cpu` is reserved for a task other than `p` (so that an idle test
/// of the wake-up search counts it as busy). For the pre-v5.5 placement ([`crate::legacy`]).
pub(crate) fn idle_reserved_for_other(
    ctx: &BalanceCtx<'_>,
    wake: &WakeState,
    cpu: CpuId,
    p: TaskId,
) -> bool {
    reserved_for_other(ctx, &wake.reserved_by, cpu, p)
}

/// Follows core.c: is_cpu_allowed() (v6.6-v6.12) for a user task: in its affinity and active
/// (every CPU of an lbsim machine is online and active).
pub fn is_cpu_allowed(ctx: &BalanceCtx<'_>, p: TaskId, cpu: CpuId) -> bool {
    cpu.index() < ctx.topo.nr_cpus() && ctx.tasks[p].cpus_mask.test(cpu)
}

/// Follows core.c: select_fallback_rq() (v6.6-v6.12) with every CPU online and active: the
/// first allowed CPU of `cpu`'s node, else the first allowed CPU. (The cpuset and "any CPU"
/// fallbacks cannot be reached: a task's affinity is never empty.)
pub fn select_fallback_rq(ctx: &BalanceCtx<'_>, cpu: CpuId, p: TaskId) -> CpuId {
    let machine = ctx.topo.machine();
    let cpus_mask = &ctx.tasks[p].cpus_mask;
    let node = machine.cpu_to_node(cpu);
    machine
        .node_cpus(node)
        .iter()
        .find(|&c| is_cpu_allowed(ctx, p, c))
        .or_else(|| cpus_mask.iter().find(|&c| is_cpu_allowed(ctx, p, c)))
        .expect("a task's affinity holds at least one CPU")
}

/// Follows core.c: ttwu_stat() (v6.6-v6.12), the domain part: a wake-up run on `this_cpu`
/// that puts the task on another CPU counts `ttwu_wake_remote` on the lowest domain of
/// `this_cpu` spanning that CPU. (`ttwu_count`/`ttwu_local` are per-CPU and the engine's.)
///
/// [`select_task_rq`] calls this for `WF_TTWU`; a wake-up that finds its task still queued
/// (`ttwu_runnable()`, no placement) counts through this function too, with `cpu` its CPU.
/// `ttwu_move_balance` is never counted: no kernel since 2.6.x increments it.
pub fn ttwu_stat(ctx: &BalanceCtx<'_>, st: &mut BalanceState, this_cpu: CpuId, cpu: CpuId) {
    if cpu == this_cpu {
        return;
    }
    let topo = ctx.topo;
    if let Some(level) = topo
        .domains(this_cpu)
        .iter()
        .position(|sd| topo.span(sd.span).test(cpu))
    {
        st.schedstat.sd_mut(this_cpu, level).ttwu_wake_remote += 1;
    }
}

/// Follows core.c: select_task_rq() (v6.6-v6.12) with fair.c: select_task_rq_fair(): the CPU
/// for a waking (`WF_TTWU`), forked (`WF_FORK`) or exec'ing (`WF_EXEC`) task `p`, last on
/// `prev_cpu`, decided on `this_cpu` (the waker's or parent's CPU).
///
/// A task allowed on a single CPU is not asked about: it goes to that CPU (`cpumask_any()`)
/// and `record_wakee()` does not run. Whatever the fair class answers, a CPU outside the
/// task's affinity is replaced by `select_fallback_rq()`. For `WF_TTWU` the wake-up's
/// `ttwu_wake_remote` is counted ([`ttwu_stat`]). (The kernel's sched_exec() asks the fair
/// class directly, without this wrapper; for an exec'ing task, which runs on an allowed CPU,
/// the answers are the same.)
///
/// This is what the balancer's `select_task_rq` (the [`crate::ctx::Balancer`] trait) calls:
/// `wake::select_task_rq(ctx, &mut state, &mut wake_state, p, prev_cpu, this_cpu, wake_flags)`,
/// keeping a [`WakeState`] beside its [`BalanceState`].
pub fn select_task_rq(
    ctx: &mut BalanceCtx<'_>,
    st: &mut BalanceState,
    wake: &mut WakeState,
    p: TaskId,
    prev_cpu: CpuId,
    this_cpu: CpuId,
    wake_flags: WakeFlags,
) -> Placement {
    let mut work = WorkAccount::default();
    let mut cpu = if ctx.tasks[p].nr_cpus_allowed > 1 {
        select_task_rq_fair(ctx, st, wake, p, prev_cpu, this_cpu, wake_flags, &mut work)
    } else {
        ctx.tasks[p]
            .cpus_mask
            .first()
            .expect("a task's affinity holds at least one CPU")
    };
    if !is_cpu_allowed(ctx, p, cpu) {
        cpu = select_fallback_rq(ctx, ctx.tasks[p].cpu, p);
    }
    if wake_flags.contains(WakeFlags::TTWU) {
        ttwu_stat(ctx, st, this_cpu, cpu);
    }
    Placement { cpu, work }
}

#[cfg(test)]
pub(crate) mod bench;
#[cfg(test)]
mod tests;
