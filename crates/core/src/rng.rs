//! Seeded randomness: one master seed, named value-stable streams.
//!
//! Every consumer of randomness (tick phases, each task's run-length jitter, background
//! noise, ...) draws from its own stream, derived from the master seed and a stream
//! identifier. Adding a consumer never shifts the numbers another consumer sees.
//! The generator is `rand_pcg::Pcg64Mcg`, whose output is fixed by its specification.

use rand_core::Rng;
use rand_pcg::Pcg64Mcg;

/// The purposes randomness is drawn for. The discriminant is part of the stream identity:
/// never reorder or reuse one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stream {
    /// Per-CPU tick phase offsets.
    TickPhase = 1,
    /// Per-task run-length jitter and other per-task draws (index: the task's creation order).
    Task = 2,
    /// Background kernel-thread-like wake-ups.
    Background = 3,
    /// Per-workload draws (index: the workload's position on the command line).
    Workload = 4,
    /// Idle-state exit times.
    IdleExit = 5,
    /// Per-wake-up costs.
    WakeCost = 6,
}

/// The master seed of one run, from which every stream is derived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeedStreams {
    master: u64,
}

/// splitmix64's finaliser: a bijective 64-bit mixer.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl SeedStreams {
    /// Streams derived from `master`.
    pub fn new(master: u64) -> SeedStreams {
        SeedStreams { master }
    }

    /// The master seed.
    pub fn master(&self) -> u64 {
        self.master
    }

    /// The generator for `(stream, index)`.
    pub fn rng(&self, stream: Stream, index: u64) -> Pcg64Mcg {
        let hi = mix64(self.master ^ mix64(stream as u64));
        let lo = mix64(hi ^ mix64(index.wrapping_add(0x9e37_79b9_7f4a_7c15)));
        // Pcg64Mcg needs an odd state; `| 1` keeps it valid for every seed.
        Pcg64Mcg::new((((hi as u128) << 64) | lo as u128) | 1)
    }
}

/// A uniform draw in `0..n` (n > 0) by Lemire's multiply-shift, without modulo bias worth
/// caring about at simulation scale. Deterministic for a given generator state.
pub fn below(rng: &mut impl Rng, n: u64) -> u64 {
    debug_assert!(n > 0);
    ((rng.next_u64() as u128 * n as u128) >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_stable_and_independent() {
        let s = SeedStreams::new(42);
        let a1 = s.rng(Stream::Task, 0).next_u64();
        let a2 = s.rng(Stream::Task, 0).next_u64();
        let b = s.rng(Stream::Task, 1).next_u64();
        let c = s.rng(Stream::TickPhase, 0).next_u64();
        assert_eq!(a1, a2, "same stream, same numbers");
        assert_ne!(a1, b, "task streams differ by index");
        assert_ne!(a1, c, "streams differ by purpose");
        assert_ne!(a1, SeedStreams::new(43).rng(Stream::Task, 0).next_u64());
    }

    #[test]
    fn below_stays_in_range() {
        let mut r = SeedStreams::new(7).rng(Stream::Background, 0);
        for n in [1u64, 2, 3, 1000, u64::MAX] {
            for _ in 0..100 {
                assert!(below(&mut r, n) < n);
            }
        }
    }
}
