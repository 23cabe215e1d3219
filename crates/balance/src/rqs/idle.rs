//! The CPUs whose runqueue, on its own, lets `available_idle_cpu()` or `sched_idle_cpu()` be
//! true: a bit per CPU, kept up to date with the CPUs marked since the last read.
//!
//! `select_idle_cpu()`'s scan reads every CPU of the LLC up to the first idle one (or its
//! `SIS_UTIL` budget): on a loaded 128-CPU LLC that is a hundred runqueues read to find
//! none. A CPU whose runqueue is busy (something running or queued, not only `SCHED_IDLE`
//! tasks) fails both tests whatever else holds: a wake-up IPI in flight or an
//! `IDLE_RESERVE` mark only make a CPU busier. So the scan tests only the CPUs of this mask
//! and counts the others without reading them. lbsim's own bookkeeping, not a kernel
//! structure; the cost model still charges every CPU the kernel's loop reads.

use lbsim_rq::rq::Rq;

use crate::lb::rq_idle_own;

/// The runqueue alone allows core.c's `available_idle_cpu()` (`idle_cpu()`: nothing running
/// or queued, no `ttwu_pending`) or fair.c's `sched_idle_cpu()` (only `SCHED_IDLE` tasks
/// queued), v6.12.
#[inline]
pub fn rq_maybe_idle(rq: &Rq) -> bool {
    rq_idle_own(rq) || rq.sched_idle_rq()
}

/// The mask's state: built on first read, then the CPUs marked since.
#[derive(Clone, Debug, Default)]
pub(super) struct IdleMask {
    /// Bit `c % 64` of word `c / 64`: [`rq_maybe_idle`] of CPU `c` as last read.
    pub(super) words: Vec<u64>,
    /// Whether `words` has been built.
    pub(super) built: bool,
    /// CPUs borrowed mutably since the mask was last brought up to date, each once.
    pub(super) marked: Vec<u32>,
}

impl IdleMask {
    /// Brings the mask up to date with the CPUs marked since the last call (reading every
    /// runqueue on the first), clearing their `flag` in `flags`.
    pub(super) fn catch_up(&mut self, rqs: &[Rq], flags: &mut [u8], flag: u8) {
        if !self.built {
            self.words = vec![0; rqs.len().div_ceil(64)];
            for (c, rq) in rqs.iter().enumerate() {
                self.words[c / 64] |= u64::from(rq_maybe_idle(rq)) << (c % 64);
            }
            self.built = true;
        }
        for &c in &self.marked {
            let c = c as usize;
            flags[c] &= !flag;
            let bit = 1u64 << (c % 64);
            let w = &mut self.words[c / 64];
            if rq_maybe_idle(&rqs[c]) {
                *w |= bit;
            } else {
                *w &= !bit;
            }
        }
        self.marked.clear();
    }
}
