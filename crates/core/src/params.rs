//! The parameters the core.c model declares: the sched features it reads (and the ones lbsim
//! lists but does not model), the engine's knobs ([`EngineTunables`]) and the machine model's
//! ([`MachineModel`]). The registry that
//! assembles every layer's lists is `lbsim_sim::params::REGISTRY`.

use lbsim_kernel::params::{
    CORE_FEATURE_BASE, ChoiceDef, IntDef, IntDefault, Kind, Origin, Owner, ParamDef, Params, Unit,
};

lbsim_kernel::sched_features! {
    /// A sched feature the core.c model reads, or one lbsim lists but
    /// does not model (the hrtick, the rt class, debug warnings, CFS bandwidth).
    pub enum CoreFeat;
    /// The declarations of [`CoreFeat`].
    pub const FEATURES;
    base = CORE_FEATURE_BASE, owner = Owner::Core;
    /// High-resolution tick for fair slices (not modelled: lbsim ticks at HZ).
    Hrtick = "HRTICK", pos 13, off, Origin::kernel("v6.1, v6.6, v6.12"), not_modelled;
    /// High-resolution tick for deadline tasks (not modelled).
    HrtickDl = "HRTICK_DL", pos 14, off, Origin::kernel("v6.1, v6.6, v6.12"), not_modelled;
    /// Let the periodic tick run alongside hrtick (not modelled).
    DoubleTick = "DOUBLE_TICK", pos 15, off, Origin::kernel("v6.1, v6.6, v6.12"), not_modelled;
    /// Queue remote wakeups on the target CPU's wake list (the wake-up IPI; ttwu_queue_cond()).
    TtwuQueue = "TTWU_QUEUE", pos 17, on, Origin::kernel("v6.1, v6.6, v6.12");
    /// Debug: warn on double update_rq_clock() (not modelled).
    WarnDoubleClock = "WARN_DOUBLE_CLOCK", pos 20, off, Origin::kernel("v6.1, v6.6, v6.12"), not_modelled;
    /// RT push by IPI (rt class, not modelled).
    RtPushIpi = "RT_PUSH_IPI", pos 21, on, Origin::kernel("v6.1, v6.6, v6.12"), not_modelled;
    /// RT runtime sharing (rt class, not modelled).
    RtRuntimeShare = "RT_RUNTIME_SHARE", pos 22, off, Origin::kernel("v6.1, v6.6, v6.12"), not_modelled;
    /// Debug: warn about long need_resched latencies (not modelled).
    LatencyWarn = "LATENCY_WARN", pos 30, off, Origin::kernel("v6.1, v6.6, v6.12"), not_modelled;
    /// Block nohz tick stop while CFS bandwidth is in use (bandwidth not modelled).
    HzBw = "HZ_BW", pos 33, on, Origin::kernel("v6.6"), not_modelled;
}

lbsim_kernel::int_params! {
    /// Engine tunables (set with `--set NAME=VALUE` like the kernel's).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct EngineTunables;
    /// The declarations of [`EngineTunables`].
    pub const ENGINE_PARAMS;
    owner = Owner::Engine;
    /// Background kernel-thread wake-ups per second per CPU (a pinned `kworker/N` that runs
    /// briefly); 0 turns the noise off. The default, 1, is the rate of the most regular
    /// per-CPU kernel work on a quiet server (vmstat_update runs once a second per CPU):
    /// seed 004's `perf stat` saw about one context switch per ebizzy thread per second.
    /// At most 1,000,000 (a mean gap of 1 us), so that the gap between wake-ups is never 0
    /// and simulated time advances.
    pub background_wakeups_hz: u64 = "background_wakeups_hz", Hz, 1, 0..=1_000_000, Origin::LbsimModel;
    /// How long each background wake-up runs (work at capacity 1024), ns; at most 1 s, so
    /// that the work scaled to a CPU's capacity and added to the clock stays inside `u64`.
    pub background_run_ns: u64 = "background_run_ns", Ns, 20_000, 0..=1_000_000_000, Origin::LbsimModel;
    /// Largest per-CPU tick phase offset, ns: each CPU's tick fires at
    /// `k * TICK_NSEC + phase`, `phase` drawn from the seed in `[0, tick_jitter_ns)`.
    /// Kernel ticks are aligned across CPUs up to interrupt jitter (no `skew_tick`), so the
    /// default is small. At most 1 s, so that a tick's time (`k * TICK_NSEC + phase`)
    /// stays inside `u64` for any run.
    pub tick_jitter_ns: u64 = "tick_jitter_ns", Ns, 20_000, 0..=1_000_000_000, Origin::LbsimModel;
    /// How many runs of a pure loop (a task that only computes between the ends of its
    /// runs, as ebizzy's threads do) one segment-end event may cover, all ending before the
    /// CPU's next tick. The runs in between are accounted, each at its own end, when anything
    /// looks at the task; results are those of an event per run but where a run of a chain
    /// ends at the very nanosecond of another event (never a tick). 1 gives every
    /// run its own event. A speed knob only (lbsim's): each CPU starts at 2 and doubles while
    /// its chains run to their end, halving when they are cut short.
    pub pure_runs_ahead: u64 = "pure_runs_ahead", Count, 32, 1..=1024, Origin::LbsimModel;
}

/// The cpuidle governor (`cpuidle.governor=`), or none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Governor {
    /// drivers/cpuidle/governors/menu.c, the default of tickless kernels (rating 20).
    Menu,
    /// lbsim's ideal machine: every idle CPU sits in one zero-latency state, its tick stops
    /// the moment it goes idle, and a wake-up costs only the IPI (lbsim before the machine
    /// model; not what a kernel with a cpuidle driver does).
    Off,
}

/// The machine-model knobs: how the hardware under the scheduler behaves (idle states, SMT
/// sharing, the spread of per-event costs). Set with `--set NAME=VALUE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MachineModel {
    /// `cpuidle`: the governor that picks idle states.
    pub cpuidle: Governor,
    /// `smt_throughput`: `machine` uses the machine's table; `ideal` gives every busy SMT
    /// sibling a whole core.
    pub smt_ideal: bool,
    /// `idle_exit_spread_pct`: each idle exit takes the state's exit time times a factor
    /// drawn uniformly from `[1 - s, 1 + s]`, `s` this percentage.
    pub idle_exit_spread_pct: u64,
    /// `wakeup_cost_spread_pct`: likewise for each wake-up's cost to the waker
    /// (`cost_wakeup_ns`).
    pub wakeup_cost_spread_pct: u64,
}

impl Default for MachineModel {
    fn default() -> MachineModel {
        MachineModel {
            cpuidle: Governor::Menu,
            smt_ideal: false,
            idle_exit_spread_pct: 20,
            wakeup_cost_spread_pct: 20,
        }
    }
}

const fn model_param(name: &'static str, kind: Kind, doc: &'static str) -> ParamDef {
    ParamDef {
        name,
        aliases: &[],
        kind,
        doc,
        owner: Owner::Engine,
        origin: Origin::LbsimModel,
    }
}

/// The declarations of [`MachineModel`].
pub const MACHINE_PARAMS: &[ParamDef] = &[
    model_param(
        "cpuidle",
        Kind::Choice(ChoiceDef {
            values: &["menu", "off"],
            default: 0,
            numbered: false,
        }),
        "The cpuidle governor: menu (drivers/cpuidle/governors/menu.c, v6.12) picks each idle CPU's state from the machine's table and decides whether its tick stops; off is lbsim's ideal machine (no idle states, the tick stops at once). teo is not modelled.",
    ),
    model_param(
        "smt_throughput",
        Kind::Choice(ChoiceDef {
            values: &["machine", "ideal"],
            default: 0,
            numbered: false,
        }),
        "How busy SMT siblings share their core: machine uses the machine's smt_throughput table (a machine-spec key); ideal gives each busy sibling a whole core.",
    ),
    model_param(
        "idle_exit_spread_pct",
        Kind::Int(IntDef {
            unit: Unit::Percent,
            default: IntDefault::Value(20),
            min: 0,
            max: 100,
            allowed: &[],
        }),
        "Per-wake spread of an idle state's exit time, from the run's seed: uniform within plus or minus this percentage (an assumption: no published distribution was found).",
    ),
    model_param(
        "wakeup_cost_spread_pct",
        Kind::Int(IntDef {
            unit: Unit::Percent,
            default: IntDefault::Value(20),
            min: 0,
            max: 100,
            allowed: &[],
        }),
        "Per-wake spread of cost_wakeup_ns, from the run's seed: uniform within plus or minus this percentage (an assumption: the LKML figures range 420-710 ns around their mean).",
    ),
];

impl Params for MachineModel {
    const DEFS: &'static [ParamDef] = MACHINE_PARAMS;

    fn store(&mut self, def: &'static ParamDef, value: u64) {
        match def.name {
            "cpuidle" => {
                self.cpuidle = if value == 0 {
                    Governor::Menu
                } else {
                    Governor::Off
                }
            }
            "smt_throughput" => self.smt_ideal = value == 1,
            "idle_exit_spread_pct" => self.idle_exit_spread_pct = value,
            "wakeup_cost_spread_pct" => self.wakeup_cost_spread_pct = value,
            other => unreachable!("{other} is not a machine-model parameter"),
        }
    }

    fn load(&self, def: &'static ParamDef) -> u64 {
        match def.name {
            "cpuidle" => u64::from(self.cpuidle == Governor::Off),
            "smt_throughput" => u64::from(self.smt_ideal),
            "idle_exit_spread_pct" => self.idle_exit_spread_pct,
            "wakeup_cost_spread_pct" => self.wakeup_cost_spread_pct,
            other => unreachable!("{other} is not a machine-model parameter"),
        }
    }
}
