use super::*;

/// The 32 entries kernel/sched/sched-pelt.h publishes (identical in every
/// release since the table was introduced, v6.6-v6.12 included).
const KERNEL_RUNNABLE_AVG_YN_INV: [u32; 32] = [
    0xffffffff, 0xfa83b2da, 0xf5257d14, 0xefe4b99a, 0xeac0c6e6, 0xe5b906e6, 0xe0ccdeeb, 0xdbfbb796,
    0xd744fcc9, 0xd2a81d91, 0xce248c14, 0xc9b9bd85, 0xc5672a10, 0xc12c4cc9, 0xbd08a39e, 0xb8fbaf46,
    0xb504f333, 0xb123f581, 0xad583ee9, 0xa9a15ab4, 0xa5fed6a9, 0xa2704302, 0x9ef5325f, 0x9b8d39b9,
    0x9837f050, 0x94f4efa8, 0x91c3d373, 0x8ea4398a, 0x8b95c1e3, 0x88980e80, 0x85aac367, 0x82cd8698,
];

#[test]
fn generated_table_equals_kernel_sched_pelt_h() {
    for (i, (ours, kernel)) in RUNNABLE_AVG_YN_INV
        .iter()
        .zip(KERNEL_RUNNABLE_AVG_YN_INV)
        .enumerate()
    {
        assert_eq!(
            *ours, kernel,
            "runnable_avg_yN_inv[{i}]: generated {ours:#010x}, kernel {kernel:#010x}"
        );
    }
}

#[test]
fn load_avg_max_equals_kernel_value() {
    assert_eq!(LOAD_AVG_MAX, 47742);
    assert_eq!(
        LOAD_AVG_MAX_STEPS, 346,
        "KERNEL-MODEL.md §1.2 records convergence after 346 iterations"
    );
    // Kernels before v4.12 published the generator's loop index as LOAD_AVG_MAX_N.
    assert_eq!(LOAD_AVG_MAX_STEPS - 1, 345);
    assert_eq!(PELT_MIN_DIVIDER, 46718);
}

#[test]
fn load_avg_max_is_the_fixed_point_of_one_period_of_decay() {
    // LOAD_AVG_MAX * y == LOAD_AVG_MAX - 1024 in the table's arithmetic: this is
    // what lets pelt.h use LOAD_AVG_MAX - 1024 + period_contrib as divider.
    let decayed = (LOAD_AVG_MAX * u64::from(RUNNABLE_AVG_YN_INV[1])) >> 32;
    assert_eq!(decayed, LOAD_AVG_MAX - 1024);
}

#[test]
fn derived_constants() {
    assert_eq!(SCHED_CAPACITY_SCALE, 1024);
    assert_eq!(UTIL_EST_MARGIN, 10);
    assert_eq!(DECAY_CUTOFF_PERIODS, 2016);
    assert_eq!(UTIL_AVG_UNCHANGED, 1 << 31);
}
