//! The discrete-event engine: simulated time, the event queue, and the loop that hands each
//! event to the kernel's core model ([`lbsim_core::Core`]) and applies the effects it returns.
//!
//! Nothing here is kernel-specific: the core decides what happens at each event and which
//! events follow (and which pending ones are cancelled); the engine keeps the clock, orders
//! events by `(time, insertion)` ([`EventQueue`]), stops at the run's end, and counts and
//! hashes the events it delivers ([`RunResult::event_hash`]: the same configuration and seed
//! give the same event stream).

use lbsim_balance::ctx::Balancer;
use lbsim_core::{Core, Effect};

pub use lbsim_core::check;
pub use lbsim_core::{
    CpuResult, CpuSeries, EngineTunables, Governor, GroupFairness, MachineModel, RunResult,
    SimConfig, SimError, TaskGroupShare, TaskResult,
};

use crate::queue::EventQueue;
use crate::time::SimTime;

/// Events between two calls of [`Sim::run_with_progress`]'s callback.
pub const PROGRESS_EVERY: u64 = 1 << 16;

/// Cancelled events in the queue below which it is never compacted.
const COMPACT_MIN: usize = 1024;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// `FNV_PRIME` to the powers 0 to 8 (wrapping).
const FNV_PRIME_POW: [u64; 9] = {
    let mut p = [1u64; 9];
    let mut i = 1;
    while i < 9 {
        p[i] = p[i - 1].wrapping_mul(FNV_PRIME);
        i += 1;
    }
    p
};

/// FNV-1a over the 8 little-endian bytes of `v`. A zero byte only multiplies the hash by the
/// prime, so the high zero bytes (most of an index's, or of the event kind's) are one
/// multiplication by a power of it: the same value as byte by byte, in fewer serial steps.
/// A value below 256 (the event kind, most indices) is one step: its byte, or none, then
/// zero bytes: `(h ^ v) * prime^8`.
#[inline]
fn fnv(mut h: u64, v: u64) -> u64 {
    if v < 0x100 {
        return (h ^ v).wrapping_mul(FNV_PRIME_POW[8]);
    }
    let bytes = 8 - (v.leading_zeros() / 8) as usize;
    for b in &v.to_le_bytes()[..bytes] {
        h ^= u64::from(*b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h.wrapping_mul(FNV_PRIME_POW[8 - bytes])
}

/// A simulation in progress: the core model and its event queue.
#[derive(Debug)]
pub struct Sim<B: Balancer> {
    core: Core<B>,
    /// The pending events' times and slots; what each is, the core's `Effects` keeps.
    queue: EventQueue<()>,
    end_ns: u64,
    events: u64,
    hash: u64,
    max_trace_records: u64,
}

impl<B: Balancer> Sim<B> {
    /// Sets up a run: the core's runqueues, background threads, and the workload's first
    /// events.
    pub fn new(cfg: SimConfig, balancer: B) -> Result<Sim<B>, SimError> {
        let core = Core::new(cfg, balancer)?;
        let mut sim = Sim {
            end_ns: core.end_ns(),
            core,
            queue: EventQueue::default(),
            events: 0,
            hash: FNV_OFFSET,
            max_trace_records: u64::MAX,
        };
        sim.apply_effects();
        sim.core.effects().release_list();
        Ok(sim)
    }

    /// Records the scheduler trace of the run ([`lbsim_core::trace`]) into
    /// [`RunResult::trace`]. Tracing changes no decision.
    #[must_use]
    pub fn with_trace(mut self) -> Self {
        self.core = self.core.with_trace();
        self
    }

    /// Samples every CPU's `nr_running` and root `util_avg` every `period_ns` of simulated
    /// time into [`RunResult::cpu_series`] ([`lbsim_core::series`]). Sampling changes no
    /// decision and adds no event.
    #[must_use]
    pub fn with_cpu_series(mut self, period_ns: u64) -> Self {
        self.core = self.core.with_cpu_series(period_ns);
        self
    }

    /// Stops the run with [`SimError::TraceLimit`] once its trace holds more than `max`
    /// records (a budget on the trace's memory and file size; no limit by default).
    #[must_use]
    pub fn with_trace_limit(mut self, max: u64) -> Self {
        self.max_trace_records = max;
        self
    }

    /// Applies the core's effects in the order it asked for them; drops the cancelled
    /// events from the queue once they are half of it (most are far in the future and would
    /// otherwise stay: the heap, and each pop's cost, would grow with the run).
    #[inline(always)]
    fn apply_effects(&mut self) {
        let Sim { core, queue, .. } = self;
        let fx = core.effects();
        fx.drain(|Effect { key, at_ns }| {
            queue.push_keyed(SimTime(at_ns), key.slot(), ());
        });
        if fx.cancelled() >= COMPACT_MIN && 2 * fx.cancelled() > queue.queued() {
            queue.compact(&mut |s| fx.take_cancelled(s));
            debug_assert_eq!(fx.cancelled(), 0, "a cancelled event not in the queue");
        }
    }

    /// Runs to the end and returns what was measured.
    pub fn run(self) -> Result<RunResult, SimError> {
        self.run_with_progress(&mut |_, _| true)
    }

    /// [`Sim::run`], calling `progress(now_ns, end_ns)` with the simulated time every
    /// [`PROGRESS_EVERY`] events (a front end's progress display; it changes nothing in the
    /// run). When `progress` returns `false` (the user asked to stop), the run ends there:
    /// the events from `now_ns` on are not handled, and the result covers the time up to it.
    pub fn run_with_progress(
        mut self,
        progress: &mut dyn FnMut(u64, u64) -> bool,
    ) -> Result<RunResult, SimError> {
        let mut end_ns = self.end_ns;
        loop {
            let fx = self.core.effects();
            let (t, ev) = match self
                .queue
                .pop_until(SimTime(self.end_ns), &mut |s| fx.take_cancelled(s))
            {
                Ok((t, slot, ())) => (t, fx.retire(slot)),
                Err(later) => {
                    if later.is_some() && self.events.is_multiple_of(PROGRESS_EVERY) {
                        let _ = progress(self.end_ns, self.end_ns);
                    }
                    break;
                }
            };
            let t = t.as_ns();
            if self.events.is_multiple_of(PROGRESS_EVERY) && !progress(t, self.end_ns) {
                end_ns = t;
                break;
            }
            self.events += 1;
            let (k, v) = ev.hash_key();
            self.hash = fnv(fnv(fnv(self.hash, t), u64::from(k)), v);
            self.core.handle(t, ev)?;
            if self.core.trace_records() as u64 > self.max_trace_records {
                return Err(SimError::TraceLimit {
                    limit: self.max_trace_records,
                    time_ns: t,
                });
            }
            self.apply_effects();
            if self.core.workload_done() {
                break;
            }
        }
        // The pending events are not needed any more: their memory is free for the results.
        drop(self.queue);
        let mut result = self.core.close(end_ns);
        result.events = self.events;
        result.event_hash = self.hash;
        Ok(result)
    }
}

#[cfg(test)]
mod tests;
