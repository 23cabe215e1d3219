//! The parameters the core.c model declares: the sched features it reads (and the ones lbsim
//! lists but does not model), and the engine's knobs ([`EngineTunables`]). The registry that
//! assembles every layer's lists is `lbsim_sim::params::REGISTRY`.

use lbsim_kernel::params::{CORE_FEATURE_BASE, Origin, Owner};

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
}
