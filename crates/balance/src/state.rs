//! The balancer's mutable state: what the kernel keeps in `struct sched_domain`,
//! `struct sched_group_capacity`, `struct sched_domain_shared`, `struct root_domain`,
//! the `nohz` global and the balancing fields of `struct rq`.
//!
//! The topology crate builds the immutable part of the domains (spans, groups, flags,
//! initial intervals); everything a balance pass changes lives here, in `Vec`s indexed by
//! `(cpu, level)`, [`SgcId`] or [`SharedId`] (no hash maps: iteration order must not
//! depend on the host).
//!
//! Follows kernel/sched/sched.h and include/linux/sched/topology.h (v6.6-v6.12): the
//! field names are the kernel's. Deliberately left out: the proportional-newidle fields
//! of recent kernels (`newidle_call`, `newidle_success`, `newidle_ratio`), energy-model
//! perf domains, and CPU hotplug (every CPU is active).

use lbsim_topology::{CpuId, Cpumask, SgcId, SharedId, Topology};

use crate::ctx::NohzFlags;
use crate::schedstat::Schedstat;

/// The runtime fields of one `struct sched_domain` (one CPU, one level).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DomainState {
    /// `sd->balance_interval`, in ms (initially `sd_weight`, see sd_init()).
    pub balance_interval: u64,
    /// `sd->nr_balance_failed`.
    pub nr_balance_failed: u32,
    /// `sd->last_balance`, in jiffies.
    pub last_balance: u64,
    /// `sd->max_newidle_lb_cost`, in ns of simulated time.
    pub max_newidle_lb_cost: u64,
    /// `sd->last_decay_max_lb_cost`, in jiffies.
    pub last_decay_max_lb_cost: u64,
    /// `sd->nohz_idle`: only meaningful on the CPU's `sd_llc` (set_cpu_sd_state_idle()).
    pub nohz_idle: bool,
}

/// The runtime fields of one `struct sched_group_capacity`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SgcState {
    /// `sgc->capacity`.
    pub capacity: u64,
    /// `sgc->min_capacity`.
    pub min_capacity: u64,
    /// `sgc->max_capacity`.
    pub max_capacity: u64,
    /// `sgc->imbalance`: set by the child level when affinity kept it from balancing.
    pub imbalance: bool,
    /// `sgc->next_update`, in jiffies: when newidle balancing refreshes the capacity.
    pub next_update: u64,
}

/// The runtime fields of one `struct sched_domain_shared` (only the one of `sd_llc` is used).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedState {
    /// `sds->nr_busy_cpus`: CPUs of the LLC not in nohz idle (initially the domain weight).
    pub nr_busy_cpus: u32,
    /// `sds->has_idle_cores`: a whole core of the LLC may be idle (wake-up path hint).
    pub has_idle_cores: bool,
    /// `sds->nr_idle_scan`: SIS_UTIL's scan budget, written by update_idle_cpu_scan().
    pub nr_idle_scan: u32,
}

/// `struct root_domain` flags the balancer reads and writes (one root domain: no cpusets).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RootDomainState {
    /// `rd->overloaded` (`rd->overload` before v6.10): some CPU has more than one task.
    pub overloaded: bool,
    /// `rd->overutilized`: only ever set with an energy model, which lbsim does not model.
    pub overutilized: bool,
}

/// The global `nohz` structure of fair.c.
#[derive(Clone, Debug)]
pub struct NohzState {
    /// `nohz.idle_cpus_mask`: CPUs idle with their tick stopped.
    pub idle_cpus_mask: Cpumask,
    /// `nohz.nr_cpus`: weight of `idle_cpus_mask`.
    pub nr_cpus: u32,
    /// `nohz.has_blocked`: some idle CPU may still carry blocked load to decay.
    pub has_blocked: bool,
    /// `nohz.needs_update`: a CPU entered nohz idle; `next_balance` must be collated.
    pub needs_update: bool,
    /// `nohz.next_balance`, in jiffies.
    pub next_balance: u64,
    /// `nohz.next_blocked`, in jiffies.
    pub next_blocked: u64,
    /// lbsim's: the copy of `idle_cpus_mask` that the last idle balance walked, kept for the
    /// next one to copy into (no allocation per walk).
    pub walk_spare: Option<Cpumask>,
}

/// The balancing fields of one `struct rq` that the runqueue crate does not keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuLbState {
    /// `rq->nohz_tick_stopped`: the CPU is in `nohz.idle_cpus_mask`.
    pub nohz_tick_stopped: bool,
    /// `atomic_read(nohz_flags(cpu))`: kicks sent to this CPU and not yet taken.
    pub nohz_flags: NohzFlags,
    /// `rq->nohz_idle_balance`: the kick flags taken by the softirq (nohz_csd_func()).
    pub nohz_idle_balance: NohzFlags,
    /// `rq->last_blocked_load_update_tick`, in jiffies.
    pub last_blocked_load_update_tick: u64,
    /// `rq->active_balance`: a stopper push is queued on this CPU.
    pub active_balance: bool,
    /// `rq->push_cpu`: where the queued stopper pushes to.
    pub push_cpu: CpuId,
}

/// All mutable balancer state of one machine.
#[derive(Clone, Debug)]
pub struct BalanceState {
    dom_base: Vec<usize>,
    domains: Vec<DomainState>,
    sgcs: Vec<SgcState>,
    shared: Vec<SharedState>,
    /// Per-CPU balancing fields of `struct rq`.
    pub cpus: Vec<CpuLbState>,
    /// The root domain's flags.
    pub rd: RootDomainState,
    /// The `nohz` global.
    pub nohz: NohzState,
    /// `max_load_balance_interval`, in jiffies (update_max_interval(): `HZ * nr_cpus / 10`).
    pub max_load_balance_interval: u64,
    /// The SD_SERIALIZE flag (`balancing` spinlock in v6.6, `sched_balance_running` in
    /// v6.12): simulated time until which the CPU that took it is still balancing.
    pub serialize_busy_until_ns: u64,
    /// The CPU holding the SD_SERIALIZE flag until `serialize_busy_until_ns`.
    pub serialize_owner: Option<CpuId>,
    /// /proc/schedstat counters.
    pub schedstat: Schedstat,
    /// The decision record of the balancer's invariants (off unless the engine checks).
    pub checks: crate::check::Checks,
    /// The trace records of migrations and load_balance() passes (off unless the engine
    /// traces).
    pub trace: crate::trace::LbTrace,
    /// The `env->cpus` masks of finished load_balance() passes, for the next passes to copy
    /// their domain's span into (lbsim's: no allocation per pass; what a mask held before
    /// is overwritten whole).
    pub(crate) env_cpus_spare: Vec<lbsim_topology::Cpumask>,
    /// The group statistics memos of finished load_balance() passes, for the next passes
    /// (lbsim's: no allocation per pass; each is emptied before reuse). Boxed: a pass holds
    /// its memo by pointer, so that moving the pass does not copy it.
    #[allow(clippy::vec_box)]
    pub(crate) sd_memo_spare: Vec<Box<crate::lb::SdMemo>>,
    /// Per CPU, a bit per domain level (the first 64): whether the last load_balance() of
    /// the domain redid its search after LBF_ALL_PINNED, so that the next keeps its group
    /// statistics from the first attempt (lbsim's, see `lb/memo.rs`; per CPU so that
    /// load_balance() reads it with one index).
    lb_redid: Vec<u64>,
    /// See [`BalanceState::sgc_epoch`].
    sgc_epoch: u64,
    /// The idlest-group index of the fork path (lbsim's, see `fork/idlest_index.rs`), which
    /// the path updates while it reads the rest of the state shared.
    pub(crate) idlest_index: std::cell::RefCell<crate::fork::IdlestIndex>,
}

impl BalanceState {
    /// The state at boot for `topo`, with `jiffies` the current time and `hz` the tick rate.
    ///
    /// Follows topology.c: sd_init() (`balance_interval = sd_weight`, `last_balance =
    /// jiffies`, `max_newidle_lb_cost = 0`, `last_decay_max_lb_cost = jiffies`),
    /// init_sched_groups_capacity() (sgc capacities, `next_update = jiffies`), sd_init()'s
    /// `sds->nr_busy_cpus = sd_weight`; fair.c: init_sched_fair_class() (`nohz.next_balance =
    /// jiffies`, `nohz.next_blocked = jiffies`), update_max_interval(). The runqueue fields
    /// (`next_balance`, `max_idle_balance_cost`, `avg_idle`) are the runqueue crate's.
    pub fn new(topo: &Topology, jiffies: u64, hz: u32) -> BalanceState {
        let n = topo.nr_cpus();
        let mut dom_base = Vec::with_capacity(n + 1);
        let mut domains = Vec::new();
        for c in 0..n {
            dom_base.push(domains.len());
            for sd in topo.domains(CpuId(c as u32)) {
                domains.push(DomainState {
                    balance_interval: sd.balance_interval,
                    nr_balance_failed: 0,
                    last_balance: jiffies,
                    max_newidle_lb_cost: 0,
                    last_decay_max_lb_cost: jiffies,
                    nohz_idle: false,
                });
            }
        }
        dom_base.push(domains.len());
        let mut sgcs = vec![
            SgcState {
                capacity: 0,
                min_capacity: 0,
                max_capacity: 0,
                imbalance: false,
                next_update: jiffies
            };
            topo.nr_sgcs()
        ];
        for g in topo.all_groups() {
            let init = topo.sgc(g.sgc);
            sgcs[g.sgc.index()] = SgcState {
                capacity: init.capacity,
                min_capacity: init.min_capacity,
                max_capacity: init.max_capacity,
                imbalance: false,
                next_update: jiffies,
            };
        }
        let mut shared = vec![
            SharedState {
                nr_busy_cpus: 0,
                has_idle_cores: false,
                nr_idle_scan: 0
            };
            topo.nr_shared()
        ];
        for c in 0..n {
            for id in topo
                .domains(CpuId(c as u32))
                .iter()
                .filter_map(|sd| sd.shared)
            {
                shared[id.index()].nr_busy_cpus = topo.shared(id).nr_busy_cpus;
            }
            // SIS_UTIL's budget as update_idle_cpu_scan() leaves it on an idle LLC: the whole
            // LLC. The kernel allocates it zeroed at domain build, but the first periodic
            // balance of an idle LLC sets it so; lbsim starts from a machine that has been
            // idle for a while (all CPUs in nohz idle), not from the instant of the build.
            if let Some(llc) = topo.sd_llc(CpuId(c as u32)) {
                let sd = &topo.domains(CpuId(c as u32))[llc];
                if let Some(id) = sd.shared {
                    shared[id.index()].nr_idle_scan = sd.span_weight;
                }
            }
        }
        let cpus = (0..n)
            .map(|c| CpuLbState {
                nohz_tick_stopped: false,
                nohz_flags: NohzFlags::default(),
                nohz_idle_balance: NohzFlags::default(),
                last_blocked_load_update_tick: jiffies,
                active_balance: false,
                push_cpu: CpuId(c as u32),
            })
            .collect();
        BalanceState {
            dom_base,
            domains,
            sgcs,
            shared,
            cpus,
            rd: RootDomainState::default(),
            nohz: NohzState {
                idle_cpus_mask: Cpumask::new(n),
                nr_cpus: 0,
                has_blocked: false,
                needs_update: false,
                next_balance: jiffies,
                next_blocked: jiffies,
                walk_spare: None,
            },
            max_load_balance_interval: max_load_balance_interval(hz, n),
            serialize_busy_until_ns: 0,
            serialize_owner: None,
            schedstat: Schedstat::new(topo),
            checks: crate::check::Checks::default(),
            trace: crate::trace::LbTrace::default(),
            env_cpus_spare: Vec::new(),
            sd_memo_spare: Vec::new(),
            lb_redid: vec![0; n],
            sgc_epoch: 0,
            idlest_index: std::cell::RefCell::default(),
        }
    }

    /// Whether the last load_balance() of `cpu`'s domain at `level` redid its search
    /// (see `lb_redid`).
    #[inline]
    pub(crate) fn lb_redid(&self, cpu: CpuId, level: usize) -> bool {
        level < 64 && self.lb_redid[cpu.index()] & (1 << level) != 0
    }

    /// Records whether the last load_balance() of `cpu`'s domain at `level` redid its
    /// search (not kept beyond level 63).
    pub(crate) fn set_lb_redid(&mut self, cpu: CpuId, level: usize, redid: bool) {
        if level < 64 {
            let bit = 1 << level;
            let bits = &mut self.lb_redid[cpu.index()];
            *bits = if redid { *bits | bit } else { *bits & !bit };
        }
    }

    /// Index of `(cpu, level)` in per-domain vectors (also used by [`Schedstat`]).
    ///
    /// # Panics
    /// If `cpu` has no domain at `level` (a caller bug).
    #[inline]
    pub fn domain_index(&self, cpu: CpuId, level: usize) -> usize {
        let i = self.dom_base[cpu.index()] + level;
        assert!(
            i < self.dom_base[cpu.index() + 1],
            "cpu {cpu} has no domain at level {level}"
        );
        i
    }

    /// The state of `cpu`'s domain at `level`.
    #[inline]
    pub fn sd(&self, cpu: CpuId, level: usize) -> &DomainState {
        &self.domains[self.domain_index(cpu, level)]
    }

    /// The state of `cpu`'s domain at `level`, mutable.
    #[inline]
    pub fn sd_mut(&mut self, cpu: CpuId, level: usize) -> &mut DomainState {
        let i = self.domain_index(cpu, level);
        &mut self.domains[i]
    }

    /// Where `cpu`'s domains' states start in per-domain vectors: its domain at `level` is
    /// [`BalanceState::sd_at`]`(domain_base(cpu) + level)`, for a walk up the levels that looks
    /// the CPU up once ([`BalanceState::sd`] checks the level against the CPU's domains at
    /// each call).
    #[inline]
    pub fn domain_base(&self, cpu: CpuId) -> usize {
        self.dom_base[cpu.index()]
    }

    /// The state of the domain at index `i` of per-domain vectors
    /// ([`BalanceState::domain_base`]).
    #[inline]
    pub fn sd_at(&self, i: usize) -> &DomainState {
        &self.domains[i]
    }

    /// [`BalanceState::sd_at`], mutable.
    #[inline]
    pub fn sd_at_mut(&mut self, i: usize) -> &mut DomainState {
        &mut self.domains[i]
    }

    /// Number of domains `cpu` has.
    pub fn nr_domains(&self, cpu: CpuId) -> usize {
        self.dom_base[cpu.index() + 1] - self.dom_base[cpu.index()]
    }

    /// A group capacity's state.
    #[inline]
    pub fn sgc(&self, id: SgcId) -> &SgcState {
        &self.sgcs[id.index()]
    }

    /// A group capacity's state, mutable: counted as a change of the capacities
    /// ([`BalanceState::sgc_epoch`]) whatever is written. The balancer's own writes go
    /// through the setters below, which count only a change.
    #[inline]
    pub fn sgc_mut(&mut self, id: SgcId) -> &mut SgcState {
        self.sgc_epoch += 1;
        &mut self.sgcs[id.index()]
    }

    /// Sets `sgc->next_update` (not a change of the capacities).
    #[inline]
    pub fn set_sgc_next_update(&mut self, id: SgcId, next_update: u64) {
        self.sgcs[id.index()].next_update = next_update;
    }

    /// Sets `sgc->capacity`, `min_capacity` and `max_capacity`.
    #[inline]
    pub fn set_sgc_capacity(&mut self, id: SgcId, capacity: u64, min: u64, max: u64) {
        let s = &mut self.sgcs[id.index()];
        if (s.capacity, s.min_capacity, s.max_capacity) != (capacity, min, max) {
            s.capacity = capacity;
            s.min_capacity = min;
            s.max_capacity = max;
            self.sgc_epoch += 1;
        }
    }

    /// Sets `sgc->imbalance`.
    #[inline]
    pub fn set_sgc_imbalance(&mut self, id: SgcId, imbalance: bool) {
        let s = &mut self.sgcs[id.index()];
        if s.imbalance != imbalance {
            s.imbalance = imbalance;
            self.sgc_epoch += 1;
        }
    }

    /// How many times a group capacity's `capacity`, `min_capacity`, `max_capacity` or
    /// `imbalance` changed (or was borrowed mutably through [`BalanceState::sgc_mut`]):
    /// what a reader keeping statistics computed from them compares (lbsim's).
    #[inline]
    pub fn sgc_epoch(&self) -> u64 {
        self.sgc_epoch
    }

    /// A `sched_domain_shared`'s state.
    pub fn shared(&self, id: SharedId) -> &SharedState {
        &self.shared[id.index()]
    }

    /// A `sched_domain_shared`'s state, mutable.
    pub fn shared_mut(&mut self, id: SharedId) -> &mut SharedState {
        &mut self.shared[id.index()]
    }

    /// `per_cpu(sd_llc_shared, cpu)`: the LLC shared state of `cpu`, if it has an LLC domain.
    pub fn sd_llc_shared(&self, topo: &Topology, cpu: CpuId) -> Option<&SharedState> {
        topo.shortcuts(cpu).sd_llc_shared.map(|id| self.shared(id))
    }

    /// `per_cpu(sd_llc_shared, cpu)`, mutable.
    pub fn sd_llc_shared_mut(&mut self, topo: &Topology, cpu: CpuId) -> Option<&mut SharedState> {
        topo.shortcuts(cpu)
            .sd_llc_shared
            .map(|id| &mut self.shared[id.index()])
    }
}

/// `max_load_balance_interval` after update_max_interval(): `HZ * num_online_cpus() / 10`
/// jiffies (fair.c, v6.6-v6.12); at least 1.
pub fn max_load_balance_interval(hz: u32, nr_cpus: usize) -> u64 {
    (u64::from(hz) * nr_cpus as u64 / 10).max(1)
}

/// `msecs_to_jiffies(ms)`: rounds up, as include/linux/jiffies.h does for every HZ that
/// divides 1000 (and, through its 32-bit multiplier, for HZ=300).
#[inline]
pub fn msecs_to_jiffies(ms: u64, hz: u32) -> u64 {
    // At HZ=1000 a jiffy is a millisecond: jiffies.h's _msecs_to_jiffies() for an HZ that
    // divides 1000 rounds `m` up to a multiple of MSEC_PER_SEC / HZ = 1, the same value
    // without the division's multiply-and-shift (the balancer converts every domain's
    // interval at each visit).
    if hz == 1000 {
        return ms;
    }
    (ms * u64::from(hz)).div_ceil(1000)
}

#[cfg(test)]
mod tests;
