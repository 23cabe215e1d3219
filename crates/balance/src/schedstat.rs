//! The counters of /proc/schedstat, per CPU and per domain, and their text in the layout of
//! the modelled kernel's version.
//!
//! Follows kernel/sched/stats.c: show_schedstat() and Documentation/scheduler/sched-stats.rst
//! in its three layouts since v4.x ([`SchedstatVersion`]): version 15 (to v6.9), 16 (v6.10 to
//! v6.13: `enum cpu_idle_type` reordered, so the busy columns come before the idle ones) and
//! 17 (v6.14 on: the domain's name after `domain<N>`, and `lb_imbalance` split into
//! `lb_imbalance_{load,util,task,misfit}`). The counters are kept in v6.14's detail (the
//! imbalance per migration type); an older layout prints their sum.
//!
//! The balancer fills the domain counters; the per-CPU counters of the `cpu<N>` line
//! (`yld_count`, `sched_count`, ...) belong to the engine, which fills [`CpuSchedstat`]; the
//! wake-up engineer fills `ttwu_wake_remote`, `ttwu_move_affine` and `ttwu_move_balance`.
//! `sbe_*`/`sbf_*` (exec/fork balancing) are printed as the kernel does and stay 0: v6.6+
//! never increments them.

use std::fmt::Write as _;

use lbsim_topology::{CpuId, Topology};

use crate::lb::{CpuIdleType, MigrationType};

/// The layout of /proc/schedstat: `SCHEDSTAT_VERSION` of kernel/sched/stats.c.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum SchedstatVersion {
    /// Version 15 (to v6.9): no domain name, one `lb_imbalance`, idle types in the order
    /// `CPU_IDLE`, `CPU_NOT_IDLE`, `CPU_NEWLY_IDLE`.
    V15,
    /// Version 16 (v6.10 to v6.13): as 15 with the busy (`__CPU_NOT_IDLE`) columns first.
    /// The default: lbsim models v6.12.
    #[default]
    V16,
    /// Version 17 (v6.14 on): the domain name, and four `lb_imbalance_*` columns.
    V17,
}

impl SchedstatVersion {
    /// Every version, oldest first.
    pub const ALL: [SchedstatVersion; 3] = [
        SchedstatVersion::V15,
        SchedstatVersion::V16,
        SchedstatVersion::V17,
    ];

    /// The number the `version` line prints.
    pub const fn number(self) -> u32 {
        match self {
            SchedstatVersion::V15 => 15,
            SchedstatVersion::V16 => 16,
            SchedstatVersion::V17 => 17,
        }
    }

    /// The version numbered `n`, if lbsim prints it.
    pub fn from_number(n: u32) -> Option<SchedstatVersion> {
        Self::ALL.into_iter().find(|v| v.number() == n)
    }

    /// The version Linux `major.minor` prints (stats.c: v16 from v6.10's reordered
    /// `enum cpu_idle_type`, v17 from v6.14's per-type imbalances and domain names).
    pub fn of_kernel(major: u32, minor: u32) -> SchedstatVersion {
        match (major, minor) {
            (m, _) if m < 6 => SchedstatVersion::V15,
            (6, n) if n < 10 => SchedstatVersion::V15,
            (6, n) if n < 14 => SchedstatVersion::V16,
            _ => SchedstatVersion::V17,
        }
    }
}

/// The version line's number of the default layout ([`SchedstatVersion::default`]).
pub const SCHEDSTAT_VERSION: u32 = SchedstatVersion::V16.number();

/// The load-balance counters of one domain for one idle type (`sd->lb_*[idle]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LbCounters {
    /// `lb_count`: sched_balance_rq() calls.
    pub lb_count: u32,
    /// `lb_balanced`: calls that found the domain balanced (or all tasks pinned).
    pub lb_balanced: u32,
    /// `lb_failed`: calls that found an imbalance but moved nothing.
    pub lb_failed: u32,
    /// `lb_imbalance_{load,util,task,misfit}`: the imbalance found, summed per migration type.
    pub lb_imbalance: [u32; 4],
    /// `lb_gained`: tasks pulled.
    pub lb_gained: u32,
    /// `lb_hot_gained`: tasks pulled although cache hot (nr_balance_failed > cache_nice_tries).
    pub lb_hot_gained: u32,
    /// `lb_nobusyq`: no busiest runqueue in the busiest group.
    pub lb_nobusyq: u32,
    /// `lb_nobusyg`: no busiest group.
    pub lb_nobusyg: u32,
}

/// The counters of one domain (one CPU, one level).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DomainSchedstat {
    /// Load-balance counters per idle type, indexed by [`CpuIdleType::index`].
    pub lb: [LbCounters; 3],
    /// `alb_count`: active balances tried (the stopper ran).
    pub alb_count: u32,
    /// `alb_failed`: active balances that moved nothing.
    pub alb_failed: u32,
    /// `alb_pushed`: active balances that moved a task.
    pub alb_pushed: u32,
    /// `ttwu_wake_remote`: wake-ups of a task that last ran on another CPU of this domain.
    pub ttwu_wake_remote: u32,
    /// `ttwu_move_affine`: wake-ups moved to the waking CPU by wake_affine().
    pub ttwu_move_affine: u32,
    /// `ttwu_move_balance`: wake-ups that started passive balancing (always 0 since v2.6.x;
    /// kept for the layout and for the wake-up engineer to fill if a path ever does).
    pub ttwu_move_balance: u32,
}

impl DomainSchedstat {
    /// The counters for idle type `idle`.
    pub fn lb(&self, idle: CpuIdleType) -> &LbCounters {
        &self.lb[idle.index()]
    }

    /// The counters for idle type `idle`, mutable.
    pub fn lb_mut(&mut self, idle: CpuIdleType) -> &mut LbCounters {
        &mut self.lb[idle.index()]
    }

    /// `update_lb_imbalance_stat()` (v6.14): adds `imbalance` to the column of `migration_type`.
    /// The kernel stores `unsigned int`; the sum wraps as the kernel's does.
    pub fn add_imbalance(
        &mut self,
        idle: CpuIdleType,
        migration_type: MigrationType,
        imbalance: i64,
    ) {
        let slot = &mut self.lb[idle.index()].lb_imbalance[migration_type.index()];
        *slot = slot.wrapping_add(imbalance as u32);
    }
}

/// The per-CPU counters of the `cpu<N>` line, filled by the engine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuSchedstat {
    /// `rq->yld_count`: sched_yield() calls.
    pub yld_count: u32,
    /// `rq->sched_count`: schedule() calls.
    pub sched_count: u32,
    /// `rq->sched_goidle`: schedule() calls that left the CPU idle.
    pub sched_goidle: u32,
    /// `rq->ttwu_count`: try_to_wake_up() calls on this CPU.
    pub ttwu_count: u32,
    /// `rq->ttwu_local`: of which woke a task on this CPU.
    pub ttwu_local: u32,
    /// `rq->rq_cpu_time`: ns tasks ran on this CPU.
    pub rq_cpu_time: u64,
    /// `rq->rq_sched_info.run_delay`: ns tasks waited on this runqueue.
    pub run_delay: u64,
    /// `rq->rq_sched_info.pcount`: timeslices run on this CPU.
    pub pcount: u64,
}

/// All counters of one machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedstat {
    dom_base: Vec<usize>,
    /// Per-CPU counters, indexed by CPU.
    pub cpus: Vec<CpuSchedstat>,
    domains: Vec<DomainSchedstat>,
}

impl Schedstat {
    /// Zeroed counters for every CPU and domain of `topo`.
    pub fn new(topo: &Topology) -> Schedstat {
        let n = topo.nr_cpus();
        let mut dom_base = Vec::with_capacity(n + 1);
        let mut total = 0;
        for c in 0..n {
            dom_base.push(total);
            total += topo.domains(CpuId(c as u32)).len();
        }
        dom_base.push(total);
        Schedstat {
            dom_base,
            cpus: vec![CpuSchedstat::default(); n],
            domains: vec![DomainSchedstat::default(); total],
        }
    }

    /// The counters of `cpu`'s domain at `level`.
    ///
    /// # Panics
    /// If `cpu` has no domain at `level` (a caller bug).
    pub fn sd(&self, cpu: CpuId, level: usize) -> &DomainSchedstat {
        &self.domains[self.index(cpu, level)]
    }

    /// The counters of `cpu`'s domain at `level`, mutable.
    #[inline]
    pub fn sd_mut(&mut self, cpu: CpuId, level: usize) -> &mut DomainSchedstat {
        let i = self.index(cpu, level);
        &mut self.domains[i]
    }

    /// Where `cpu`'s domains' counters start: its domain at `level` is
    /// [`Schedstat::sd_at_mut`]`(domain_base(cpu) + level)` (the layout of
    /// [`crate::state::BalanceState::domain_base`]), for a caller that looks the CPU up once.
    #[inline]
    pub fn domain_base(&self, cpu: CpuId) -> usize {
        self.dom_base[cpu.index()]
    }

    /// The counters of the domain at index `i` ([`Schedstat::domain_base`]), mutable.
    #[inline]
    pub fn sd_at_mut(&mut self, i: usize) -> &mut DomainSchedstat {
        &mut self.domains[i]
    }

    #[inline]
    fn index(&self, cpu: CpuId, level: usize) -> usize {
        let i = self.dom_base[cpu.index()] + level;
        assert!(
            i < self.dom_base[cpu.index() + 1],
            "cpu {cpu} has no domain at level {level}"
        );
        i
    }

    /// Sum of one domain counter over every CPU and level, for summaries and tests.
    pub fn total(&self, f: impl Fn(&DomainSchedstat) -> u64) -> u64 {
        self.domains.iter().map(f).sum()
    }

    /// The text of /proc/schedstat at time `jiffies`, in the default layout (version 16,
    /// v6.12's).
    pub fn format(&self, topo: &Topology, jiffies: u64) -> String {
        self.format_version(topo, jiffies, SchedstatVersion::default())
    }

    /// The text of /proc/schedstat at time `jiffies` in layout `v`.
    ///
    /// Follows stats.c: show_schedstat(): a `version` and a `timestamp` line, then per CPU a
    /// `cpu<N>` line of nine numbers and one `domain<N> [<name>] <span>` line per domain,
    /// bottom-up, with the load-balance counters for each idle type (8 in versions 15 and 16,
    /// 11 in 17) in the version's idle-type order, and 12 more (alb_*, sbe_*, sbf_*,
    /// ttwu_*). The span is printed as `%*pb` prints a cpumask: hex in comma-separated 32-bit
    /// chunks.
    pub fn format_version(&self, topo: &Topology, jiffies: u64, v: SchedstatVersion) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "version {}", v.number());
        let _ = writeln!(out, "timestamp {jiffies}");
        // `for (itype = 0; itype < CPU_MAX_IDLE_TYPES; itype++)` in the version's enum order.
        let idle_order = match v {
            SchedstatVersion::V15 => [
                CpuIdleType::Idle,
                CpuIdleType::NotIdle,
                CpuIdleType::NewlyIdle,
            ],
            SchedstatVersion::V16 | SchedstatVersion::V17 => CpuIdleType::ALL,
        };
        for c in 0..topo.nr_cpus() {
            let cpu = CpuId(c as u32);
            let s = &self.cpus[c];
            let _ = writeln!(
                out,
                "cpu{c} {} 0 {} {} {} {} {} {} {}",
                s.yld_count,
                s.sched_count,
                s.sched_goidle,
                s.ttwu_count,
                s.ttwu_local,
                s.rq_cpu_time,
                s.run_delay,
                s.pcount
            );
            for (level, sd) in topo.domains(cpu).iter().enumerate() {
                let d = self.sd(cpu, level);
                let span = topo.span(sd.span).to_hex();
                let _ = match v {
                    SchedstatVersion::V17 => write!(out, "domain{level} {} {span}", sd.name),
                    _ => write!(out, "domain{level} {span}"),
                };
                for idle in idle_order {
                    let l = d.lb(idle);
                    let _ = write!(out, " {} {} {}", l.lb_count, l.lb_balanced, l.lb_failed);
                    let _ = match v {
                        SchedstatVersion::V17 => write!(
                            out,
                            " {} {} {} {}",
                            l.lb_imbalance[0],
                            l.lb_imbalance[1],
                            l.lb_imbalance[2],
                            l.lb_imbalance[3]
                        ),
                        // One `unsigned int` sum, wrapping as the kernel's does.
                        _ => write!(
                            out,
                            " {}",
                            l.lb_imbalance.iter().fold(0u32, |a, &x| a.wrapping_add(x))
                        ),
                    };
                    let _ = write!(
                        out,
                        " {} {} {} {}",
                        l.lb_gained, l.lb_hot_gained, l.lb_nobusyq, l.lb_nobusyg
                    );
                }
                let _ = writeln!(
                    out,
                    " {} {} {} 0 0 0 0 0 0 {} {} {}",
                    d.alb_count,
                    d.alb_failed,
                    d.alb_pushed,
                    d.ttwu_wake_remote,
                    d.ttwu_move_affine,
                    d.ttwu_move_balance
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
