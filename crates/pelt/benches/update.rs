//! Cost of PELT updates, in ns per update (`cargo xtask bench update`).
//!
//! The delta stream mixes what a busy CPU sees: 4 ms ticks (HZ=250), sub-period
//! wake-up/preemption gaps, and occasional long sleeps, deterministic and
//! repeated cyclically.

use divan::{Bencher, black_box};
use lbsim_pelt::{CfsRqAvg, CfsRqLoad, SchedAvg, SeLoad, UpdateFlags};

fn main() {
    divan::main();
}

/// A deterministic stream of (delta_ns, running) pairs.
fn stream() -> Vec<(u64, bool)> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut out = Vec::with_capacity(4096);
    for i in 0..4096u64 {
        // xorshift64*
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        let r = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
        let delta = match i % 8 {
            0..=3 => 4_000_000,               // tick
            4 | 5 => 20_000 + r % 900_000,    // wake-up / preemption within a period
            6 => 1_000_000 + r % 3_000_000,   // a few periods
            _ => 5_000_000 + r % 200_000_000, // a sleep
        };
        out.push((delta, r & 1 == 0));
    }
    out
}

/// One entity update: `___update_load_sum()` and, when a period boundary was
/// crossed, `___update_load_avg()`.
#[divan::bench]
fn entity_update_load_sum_and_avg(bencher: Bencher<'_, '_>) {
    let deltas = stream();
    let mut sa = SchedAvg::default();
    let mut now = 0u64;
    let mut i = 0usize;
    bencher.bench_local(|| {
        let (delta, running) = deltas[i % deltas.len()];
        i += 1;
        now += delta;
        let r = u64::from(running);
        if sa.update_load_sum(black_box(now), r, r, running) {
            sa.update_load_avg(black_box(1024));
        }
        black_box(&sa);
    });
}

/// fair.c's update_load_avg() for a task entity and its cfs_rq (the call of
/// every tick, enqueue and dequeue).
#[divan::bench]
fn cfs_rq_update_load_avg(bencher: Bencher<'_, '_>) {
    let deltas = stream();
    let mut cfs = CfsRqAvg::default();
    cfs.avg.last_update_time = 1 << 20;
    let mut se = SchedAvg {
        last_update_time: 1 << 20,
        ..SchedAvg::default()
    };
    let mut now = 1u64 << 20;
    let mut i = 0usize;
    bencher.bench_local(|| {
        let (delta, running) = deltas[i % deltas.len()];
        i += 1;
        now += delta;
        let se_load = SeLoad::task(1024, running, running);
        let cfs_load = CfsRqLoad {
            load_weight: 1024 * u64::from(running),
            h_nr_running: u64::from(running),
            curr: running,
        };
        let out = cfs.update_load_avg(
            &mut se,
            black_box(now),
            &se_load,
            &cfs_load,
            UpdateFlags::UPDATE_TG,
            true,
        );
        black_box(out);
    });
}

/// decay_load() alone, over the period counts the stream produces.
#[divan::bench]
fn decay_load(bencher: Bencher<'_, '_>) {
    let mut i = 0u64;
    bencher.bench_local(|| {
        i = i.wrapping_add(7);
        black_box(lbsim_pelt::decay_load(
            black_box(47_742 << 10),
            black_box(i % 300),
        ))
    });
}
