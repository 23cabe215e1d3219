//! `rq->cpu_load[]` and the load indices of the balancer before v5.3: cpu_load_update(),
//! decay_load_missed(), source_load(), target_load() and get_sd_load_idx(), following
//! kernel/sched/fair.c of v4.6-v4.7 (cpu_load_update() is v4.7's name for v4.6's
//! __update_cpu_load(); the arithmetic is the same) and the sd_init() load indices of
//! core.c v4.6 / topology.c v4.11.

use lbsim_topology::{SchedDomain, SdFlag};

use crate::lb::CpuIdleType;

/// `CPU_LOAD_IDX_MAX`.
pub const CPU_LOAD_IDX_MAX: usize = 5;

/// `DEGRADE_SHIFT`: decay_load_missed() works on a 128-point scale.
pub const DEGRADE_SHIFT: u32 = 7;

/// `degrade_zero_ticks[]`: after this many missed ticks, `cpu_load[idx]` has decayed to 0.
pub const DEGRADE_ZERO_TICKS: [u64; CPU_LOAD_IDX_MAX] = [0, 8, 32, 64, 128];

/// `degrade_factor[idx][j]`: `(1 - 1/2^idx)^(2^j)` on a 128-point scale.
pub const DEGRADE_FACTOR: [[u64; DEGRADE_SHIFT as usize + 1]; CPU_LOAD_IDX_MAX] = [
    [0, 0, 0, 0, 0, 0, 0, 0],
    [64, 32, 8, 0, 0, 0, 0, 0],
    [96, 72, 40, 12, 1, 0, 0, 0],
    [112, 98, 75, 43, 15, 1, 0, 0],
    [120, 112, 98, 76, 45, 16, 2, 0],
];

/// Follows fair.c: decay_load_missed() (v4.6-v5.2): `load * (1 - 1/2^idx)^missed_updates`,
/// by the power-of-two factors of `degrade_factor[idx]`; 0 once `missed_updates` reaches
/// `degrade_zero_ticks[idx]`; a plain shift for idx 1.
pub fn decay_load_missed(mut load: u64, mut missed_updates: u64, idx: usize) -> u64 {
    if missed_updates == 0 {
        return load;
    }
    if missed_updates >= DEGRADE_ZERO_TICKS[idx] {
        return 0;
    }
    if idx == 1 {
        return load >> missed_updates;
    }
    let mut j = 0;
    while missed_updates != 0 {
        if missed_updates % 2 == 1 {
            load = (load * DEGRADE_FACTOR[idx][j]) >> DEGRADE_SHIFT;
        }
        missed_updates >>= 1;
        j += 1;
    }
    load
}

/// A CPU's `rq->cpu_load[]` with the fields that drive its updates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuLoad {
    /// `rq->cpu_load[]`.
    pub cpu_load: [u64; CPU_LOAD_IDX_MAX],
    /// `rq->last_load_update_tick`, in jiffies.
    pub last_load_update_tick: u64,
    /// `rq->nr_load_updates`.
    pub nr_load_updates: u64,
}

impl CpuLoad {
    /// Follows fair.c: cpu_load_update() (v4.7; __update_cpu_load() in v4.6):
    /// `cpu_load[0] = this_load`; for i >= 1, the old value decayed over the
    /// `pending_updates - 1` missed ticks, then `(old * (2^i - 1) + new) >> i`, with `new`
    /// rounded up by `2^i - 1` when it exceeds `old`.
    ///
    /// With `tickless` (v4.7+), the load the CPU had when its tick stopped
    /// (`tickless_load`, the old `cpu_load[0]`) is taken out of the decay: `old -=
    /// decay(tickless_load); old += tickless_load`, which changes nothing at a regular tick
    /// and keeps a NOHZ_FULL CPU's constant load from decaying. v4.6 has no such term.
    #[inline]
    pub fn cpu_load_update(&mut self, this_load: u64, pending_updates: u64, tickless: bool) {
        let tickless_load = if tickless { self.cpu_load[0] } else { 0 };
        self.nr_load_updates += 1;
        self.cpu_load[0] = this_load;
        let mut scale = 2u64;
        for i in 1..CPU_LOAD_IDX_MAX {
            let mut old_load = decay_load_missed(self.cpu_load[i], pending_updates - 1, i);
            if tickless_load != 0 {
                old_load =
                    old_load.wrapping_sub(decay_load_missed(tickless_load, pending_updates - 1, i));
                old_load = old_load.wrapping_add(tickless_load);
            }
            let mut new_load = this_load;
            if new_load > old_load {
                new_load += scale - 1;
            }
            self.cpu_load[i] = (old_load.wrapping_mul(scale - 1).wrapping_add(new_load)) >> i;
            scale += scale;
        }
    }

    /// Follows fair.c: cpu_load_update_active() (v4.7; update_cpu_load_active() in v4.6),
    /// called from scheduler_tick(): one update with the current weighted_cpuload().
    ///
    /// A tick that finds ticks missed since `last_load_update_tick` (the tick was stopped
    /// in idle) first accounts them as the kernel's exit from nohz idle did, just before
    /// this tick: v4.6's update_cpu_load_nohz() with load 0 ("We were idle, this means load
    /// 0"), v4.7+'s cpu_load_update_nohz_stop() with the load at the exit (the woken task's)
    /// and the tickless load. `nohz_exit_load` is that load (0 for v4.6). lbsim folds the
    /// exit into this tick: the kernel's exit happens between the last stopped jiffy and
    /// this one.
    pub fn cpu_load_update_active(
        &mut self,
        this_load: u64,
        jiffies: u64,
        nohz_exit_load: u64,
        tickless: bool,
    ) {
        let missed = jiffies.saturating_sub(self.last_load_update_tick);
        if missed > 1 {
            self.cpu_load_update(nohz_exit_load, missed - 1, tickless);
        }
        self.last_load_update_tick = jiffies;
        self.cpu_load_update(this_load, 1, tickless);
    }

    /// Follows fair.c: cpu_load_update_idle() -> cpu_load_update_nohz() (v4.7;
    /// update_idle_cpu_load() in v4.6), run for a tickless idle CPU before the nohz idle
    /// balancer balances on its behalf: bail if the CPU has load or is up to date, else
    /// account the ticks missed since `last_load_update_tick` with load 0.
    ///
    /// A `cpu_load[]` already all 0 stays so (every index decays 0 and averages in load 0,
    /// and the tickless load is its index 0): lbsim then only counts the update.
    pub fn cpu_load_update_idle(&mut self, this_load: u64, jiffies: u64, tickless: bool) {
        if this_load != 0 {
            return;
        }
        let pending = jiffies.saturating_sub(self.last_load_update_tick);
        if pending == 0 {
            return;
        }
        self.last_load_update_tick = jiffies;
        if self.cpu_load == [0; CPU_LOAD_IDX_MAX] {
            #[cfg(debug_assertions)]
            let mut full = *self;
            self.nr_load_updates += 1;
            #[cfg(debug_assertions)]
            {
                full.cpu_load_update(0, pending, tickless);
                debug_assert_eq!(full, *self, "a decayed cpu_load[] changed");
            }
            return;
        }
        self.cpu_load_update(0, pending, tickless);
    }

    /// Follows fair.c: cpu_load_update_nohz_start() (v4.7-v5.2), when the tick stops:
    /// `cpu_load[0] = weighted_cpuload()`, the tickless load accounted at the exit.
    pub fn cpu_load_update_nohz_start(&mut self, this_load: u64) {
        self.cpu_load[0] = this_load;
    }
}

/// Follows fair.c: source_load() (v4.6-v5.2): a low guess at the load of a migration
/// source: `min(cpu_load[type - 1], weighted_cpuload)`, or the load itself at index 0 or
/// without `LB_BIAS`.
pub fn source_load(cpu_load: &CpuLoad, total: u64, type_: usize, lb_bias: bool) -> u64 {
    if type_ == 0 || !lb_bias {
        return total;
    }
    cpu_load.cpu_load[type_ - 1].min(total)
}

/// Follows fair.c: target_load() (v4.6-v5.2): a high guess at the load of a migration
/// target: `max(cpu_load[type - 1], weighted_cpuload)`, or the load itself at index 0 or
/// without `LB_BIAS`.
pub fn target_load(cpu_load: &CpuLoad, total: u64, type_: usize, lb_bias: bool) -> u64 {
    if type_ == 0 || !lb_bias {
        return total;
    }
    cpu_load.cpu_load[type_ - 1].max(total)
}

/// A domain's load indices (`sd->busy_idx`, ...), as sd_init() set them (core.c v4.6,
/// topology.c v4.11-v5.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadIdx {
    /// `busy_idx`: for a busy CPU's balance.
    pub busy_idx: usize,
    /// `idle_idx`: for an idle CPU's balance.
    pub idle_idx: usize,
    /// `newidle_idx`: for a newly idle balance.
    pub newidle_idx: usize,
    /// `wake_idx`: for wake_affine().
    pub wake_idx: usize,
    /// `forkexec_idx`: for find_idlest_group() at fork and exec.
    pub forkexec_idx: usize,
}

/// Follows core.c: sd_init() (v4.6; topology.c v4.11-v5.2): the load indices of one level,
/// chosen as sd_init() chooses them from the level's flags: SMT (SD_SHARE_CPUCAPACITY)
/// 0/0, MC (SD_SHARE_PKG_RESOURCES) busy 2 / idle 0, NUMA busy 3 / idle 2, any other level
/// busy 2 / idle 1; newidle, wake and forkexec 0 everywhere. From v5.3 there are none
/// (`has_cpu_load` false): all 0.
pub fn sd_load_idx(sd: &SchedDomain, has_cpu_load: bool) -> LoadIdx {
    if !has_cpu_load {
        return LoadIdx::default();
    }
    let (busy_idx, idle_idx) = if sd.flags.contains(SdFlag::ShareCpucapacity) {
        (0, 0)
    } else if sd.flags.contains(SdFlag::ShareLlc) {
        (2, 0)
    } else if sd.flags.contains(SdFlag::Numa) {
        (3, 2)
    } else {
        (2, 1)
    };
    LoadIdx {
        busy_idx,
        idle_idx,
        ..LoadIdx::default()
    }
}

/// Follows fair.c: get_sd_load_idx() (v4.6-v5.2): `busy_idx` for CPU_NOT_IDLE,
/// `newidle_idx` for CPU_NEWLY_IDLE, `idle_idx` for CPU_IDLE.
pub fn get_sd_load_idx(idx: &LoadIdx, idle: CpuIdleType) -> usize {
    match idle {
        CpuIdleType::NotIdle => idx.busy_idx,
        CpuIdleType::NewlyIdle => idx.newidle_idx,
        CpuIdleType::Idle => idx.idle_idx,
    }
}
