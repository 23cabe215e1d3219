//! Capacity comparisons of the fair class: pure rules on two capacities.

/// `fits_capacity(cap, max)`: `cap` fits in `max` with about 20% headroom
/// (`cap * 1280 < max * 1024`).
///
/// Follows kernel/sched/fair.c: `fits_capacity()` (v6.6-v6.12).
#[inline]
pub const fn fits_capacity(cap: u64, max: u64) -> bool {
    cap * 1280 < max * 1024
}

/// `capacity_greater(cap1, cap2)`: `cap1` is noticeably (about 5%) greater than `cap2`
/// (`cap1 * 1024 > cap2 * 1078`).
///
/// Follows kernel/sched/fair.c: `capacity_greater()` (v6.6-v6.12).
#[inline]
pub const fn capacity_greater(cap1: u64, cap2: u64) -> bool {
    cap1 * 1024 > cap2 * 1078
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_and_greater_at_their_thresholds() {
        // 80% of 1024 is 819.2: 819 fits, 820 does not.
        assert!(fits_capacity(819, 1024));
        assert!(!fits_capacity(820, 1024));
        // 1078/1024 of 1000 is 1052.7: 1053 is greater, 1052 is not.
        assert!(capacity_greater(1053, 1000));
        assert!(!capacity_greater(1052, 1000));
    }
}
