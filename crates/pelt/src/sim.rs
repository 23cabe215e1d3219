//! The `lbsim pelt` simulation: one task following a run/sleep [`Pattern`] on
//! one otherwise idle CPU, sampled at a fixed step.

use crate::avg::SchedAvg;
use crate::consts::SCHED_CAPACITY_SCALE;
use crate::error::PeltError;
use crate::pattern::{Pattern, Phase, PhaseCursor};
use crate::single::{OneTaskCpu, OneTaskCpuConfig, TaskState};

/// The largest `--weight` accepted: far above any task weight (nice -20 is
/// 88761) while keeping every product of the model within u64.
pub const MAX_SIM_WEIGHT: u64 = 1 << 20;

/// Parameters of one simulation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimConfig {
    /// What the task does, from time 0.
    pub pattern: Pattern,
    /// The last sample time (ns); samples run from 0 to it inclusive.
    pub duration_ns: u64,
    /// Time between samples (ns), greater than zero.
    pub step_ns: u64,
    /// The task's `se_weight()`, 1..=[`MAX_SIM_WEIGHT`].
    pub weight: u64,
    /// `arch_scale_cpu_capacity()` of the CPU, 1..=1024.
    pub cpu_capacity: u64,
    /// Start as a new task (fork-time initialisation) rather than a task whose
    /// history has fully decayed.
    pub new_task: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            pattern: Pattern::Always,
            duration_ns: 0,
            step_ns: 1_000_000,
            weight: 1024,
            cpu_capacity: SCHED_CAPACITY_SCALE,
            new_task: false,
        }
    }
}

impl SimConfig {
    /// Checks the parameters.
    ///
    /// # Errors
    /// [`PeltError::ZeroStep`], [`PeltError::WeightOutOfRange`] or
    /// [`PeltError::CapacityOutOfRange`].
    pub fn validate(&self) -> Result<(), PeltError> {
        if self.step_ns == 0 {
            return Err(PeltError::ZeroStep);
        }
        if !(1..=MAX_SIM_WEIGHT).contains(&self.weight) {
            return Err(PeltError::WeightOutOfRange {
                weight: self.weight,
                max: MAX_SIM_WEIGHT,
            });
        }
        if !(1..=SCHED_CAPACITY_SCALE).contains(&self.cpu_capacity) {
            return Err(PeltError::CapacityOutOfRange {
                capacity: self.cpu_capacity,
            });
        }
        Ok(())
    }
}

/// The task entity's signal right after the update at one sample time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// The sample time (ns).
    pub time_ns: u64,
    /// The task entity's `sched_avg`.
    pub avg: SchedAvg,
}

impl Sample {
    /// The task's utilization estimate, without the `UTIL_AVG_UNCHANGED` flag.
    #[must_use]
    pub const fn util_est(&self) -> u32 {
        self.avg.util_est_value()
    }
}

/// The samples of a simulation, in time order (an iterator, so long runs are
/// streamed). Built by [`simulate`].
#[derive(Debug, Clone)]
pub struct Samples<'a> {
    cursor: PhaseCursor<'a>,
    cpu: OneTaskCpu,
    duration_ns: u64,
    step_ns: u64,
    next_sample: Option<u64>,
}

const fn task_state(phase: Phase) -> TaskState {
    match phase {
        Phase::Run => TaskState::Running,
        Phase::Sleep => TaskState::Sleeping,
    }
}

/// Simulates the task of `cfg` and returns its samples at `0, step, 2 * step,
/// ...` up to `duration_ns` inclusive.
///
/// The entity is updated at every run/sleep change and at every sample time,
/// in time order; a change and a sample at the same instant update once. The
/// interval that ends at an instant is accounted with the state that held
/// during it. See [`OneTaskCpu`] for the kernel paths taken at each update.
///
/// # Errors
/// As [`SimConfig::validate`].
pub fn simulate(cfg: &SimConfig) -> Result<Samples<'_>, PeltError> {
    cfg.validate()?;
    let cursor = PhaseCursor::new(&cfg.pattern);
    let cpu_cfg = OneTaskCpuConfig {
        weight: cfg.weight,
        cpu_capacity: cfg.cpu_capacity,
        freq_capacity: SCHED_CAPACITY_SCALE,
        util_est: true,
        new_task: cfg.new_task,
    };
    let cpu = OneTaskCpu::new(cpu_cfg, task_state(cursor.phase));
    Ok(Samples {
        cursor,
        cpu,
        duration_ns: cfg.duration_ns,
        step_ns: cfg.step_ns,
        next_sample: Some(0),
    })
}

impl Samples<'_> {
    /// The simulated CPU (task, cfs_rq and clock state) as of the last sample.
    #[must_use]
    pub const fn cpu(&self) -> &OneTaskCpu {
        &self.cpu
    }
}

impl Iterator for Samples<'_> {
    type Item = Sample;

    fn next(&mut self) -> Option<Sample> {
        let t = self.next_sample.filter(|&t| t <= self.duration_ns)?;
        // Changes of phase strictly before the sample.
        while self.cursor.next_change < t {
            let at = self.cursor.next_change;
            self.cursor.advance();
            self.cpu.set_state(at, task_state(self.cursor.phase));
        }
        if self.cursor.next_change == t {
            self.cursor.advance();
            self.cpu.set_state(t, task_state(self.cursor.phase));
        } else {
            self.cpu.update(t);
        }
        self.next_sample = t.checked_add(self.step_ns);
        Some(Sample {
            time_ns: t,
            avg: *self.cpu.se(),
        })
    }
}

#[cfg(test)]
mod tests;
