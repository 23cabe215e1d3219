use proptest::prelude::*;

use super::*;

fn mask(n: usize, cpus: &[u32]) -> Cpumask {
    Cpumask::from_cpus(n, cpus.iter().map(|c| CpuId(*c)))
}

/// One cpulist check: parse `text` at width `n`, expect `cpus`, and print back `printed`.
fn check_cpulist(text: &str, n: usize, cpus: &[u32], printed: &str) {
    let m = Cpumask::parse_cpulist(text, n).unwrap_or_else(|e| panic!("{text}: {e}"));
    assert_eq!(m.iter().map(|c| c.0).collect::<Vec<_>>(), cpus, "{text}");
    assert_eq!(m.to_cpulist(), printed, "{text}");
}

#[test]
fn cpulist_parse_and_print() {
    check_cpulist("0-3,8,10-11", 16, &[0, 1, 2, 3, 8, 10, 11], "0-3,8,10-11");
    check_cpulist("", 4, &[], "");
    check_cpulist(" 3 , 1,2 ", 4, &[1, 2, 3], "1-3");
    check_cpulist("5-5", 8, &[5], "5");
    check_cpulist("0,2,4,6", 8, &[0, 2, 4, 6], "0,2,4,6");
    check_cpulist("0-1,3,96-97", 192, &[0, 1, 3, 96, 97], "0-1,3,96-97");
}

#[test]
fn cpulist_errors_name_the_offending_part() {
    let err = |t: &str, n| Cpumask::parse_cpulist(t, n).unwrap_err().to_string();
    assert_eq!(
        err("0-3,8", 8),
        "CPU 8 is out of range (the mask has 8 CPUs)"
    );
    assert_eq!(err("4-2", 8), "range `4-2` ends before it starts");
    assert_eq!(err("0,,1", 8), "empty element in cpulist `0,,1`");
    assert_eq!(err("a", 8), "`a` is not a CPU number or range");
    assert_eq!(err("1-x", 8), "`1-x` is not a CPU number or range");
    assert_eq!(
        err("0-15:2/4", 16),
        "`0-15:2/4` is not a CPU number or range"
    );
    assert_eq!(err("-1", 8), "`-1` is not a CPU number or range");
}

#[test]
fn hex_follows_vsprintf_bitmap_string() {
    // The first word is only as wide as the bits it holds, lower-case, zero-padded.
    assert_eq!(mask(8, &[0, 1, 2, 3]).to_hex(), "0f");
    assert_eq!(Cpumask::full(8).to_hex(), "ff");
    assert_eq!(mask(4, &[0]).to_hex(), "1");
    assert_eq!(Cpumask::new(32).to_hex(), "00000000");
    assert_eq!(mask(40, &[0, 32]).to_hex(), "01,00000001");
    assert_eq!(mask(64, &[63]).to_hex(), "80000000,00000000");
    assert_eq!(mask(100, &[99, 0]).to_hex(), "8,00000000,00000000,00000001");
    assert_eq!(Cpumask::new(0).to_hex(), "");
}

#[test]
fn hex_parse() {
    assert_eq!(Cpumask::parse_hex("0f", 8).unwrap(), mask(8, &[0, 1, 2, 3]));
    assert_eq!(
        Cpumask::parse_hex("1,00000001", 40).unwrap(),
        mask(40, &[0, 32])
    );
    assert_eq!(Cpumask::parse_hex("FF", 8).unwrap(), Cpumask::full(8));
    let err = |t: &str, n| Cpumask::parse_hex(t, n).unwrap_err().to_string();
    assert_eq!(err("1ff", 8), "hex mask `1ff` sets a CPU at or above 8");
    assert_eq!(err("0g", 8), "`0g` is not a hex word");
    assert_eq!(
        err("123456789", 64),
        "hex word `123456789` is longer than 8 digits"
    );
    assert_eq!(err("1,,2", 64), "`` is not a hex word");
}

#[test]
fn first_next_last_and_wrap() {
    let m = mask(16, &[2, 5, 9, 15]);
    assert_eq!(m.first(), Some(CpuId(2)));
    assert_eq!(m.last(), Some(CpuId(15)));
    assert_eq!(m.next(CpuId(5)), Some(CpuId(9)));
    assert_eq!(m.next(CpuId(15)), None);
    assert_eq!(m.next_from(CpuId(5)), Some(CpuId(5)));
    // for_each_cpu_wrap starts AT start when it is set.
    let w: Vec<u32> = m.iter_wrap(CpuId(5)).map(|c| c.0).collect();
    assert_eq!(w, [5, 9, 15, 2]);
    let w: Vec<u32> = m.iter_wrap(CpuId(6)).map(|c| c.0).collect();
    assert_eq!(w, [9, 15, 2, 5]);
    let w: Vec<u32> = m.iter_wrap(CpuId(0)).map(|c| c.0).collect();
    assert_eq!(w, [2, 5, 9, 15]);
    assert_eq!(Cpumask::new(16).first(), None);
    assert_eq!(Cpumask::new(16).last(), None);
}

#[test]
fn wrap_walk_skipping_covered() {
    let span = mask(16, &[1, 3, 5, 7, 9]);
    let covered = mask(16, &[7, 1]);
    let mut seen = Vec::new();
    let start = CpuId(5);
    let mut next = span.next_andnot_wrap(&covered, start);
    while let Some(c) = next {
        seen.push(c.0);
        next = span.next_andnot_wrap_after(&covered, c, start);
    }
    assert_eq!(seen, [5, 9, 3]);
}

#[test]
fn tail_bits_stay_clear() {
    let full = Cpumask::full(70);
    assert_eq!(full.weight(), 70);
    assert_eq!(full.as_words()[1], (1 << 6) - 1);
    assert!(full.is_full());
    assert_eq!(Cpumask::new(70).andnot(&Cpumask::new(70)).weight(), 0);
    assert!(!Cpumask::new(70).test(CpuId(500)));
}

fn arb_mask(n: usize) -> impl Strategy<Value = Cpumask> {
    proptest::collection::vec(any::<bool>(), n).prop_map(move |bits| {
        Cpumask::from_cpus(n, (0..n).filter(|i| bits[*i]).map(|i| CpuId(i as u32)))
    })
}

fn arb_triple() -> impl Strategy<Value = (Cpumask, Cpumask, Cpumask)> {
    (1usize..200).prop_flat_map(|n| (arb_mask(n), arb_mask(n), arb_mask(n)))
}

proptest! {
    /// Invariant: printing a mask as a cpulist and parsing it back gives the same mask.
    #[test]
    fn cpulist_round_trip((a, _, _) in arb_triple()) {
        let text = a.to_cpulist();
        prop_assert_eq!(Cpumask::parse_cpulist(&text, a.nr_cpu_ids()).unwrap(), a);
    }

    /// Invariant: printing a mask as kernel hex and parsing it back gives the same mask.
    #[test]
    fn hex_round_trip((a, _, _) in arb_triple()) {
        let text = a.to_hex();
        prop_assert_eq!(Cpumask::parse_hex(&text, a.nr_cpu_ids()).unwrap(), a);
    }

    /// Invariant: set algebra laws hold (De Morgan through andnot, absorption,
    /// subset/intersects/weight consistency, and the set operations agree with a bit-by-bit reference).
    #[test]
    fn set_algebra((a, b, c) in arb_triple()) {
        let n = a.nr_cpu_ids();
        let all = Cpumask::full(n);
        let not = |m: &Cpumask| all.andnot(m);
        prop_assert_eq!(not(&a.or(&b)), not(&a).and(&not(&b)));
        prop_assert_eq!(not(&a.and(&b)), not(&a).or(&not(&b)));
        prop_assert_eq!(a.andnot(&b), a.and(&not(&b)));
        prop_assert_eq!(a.or(&a.and(&b)), a.clone());
        prop_assert_eq!(a.and(&b.or(&c)), a.and(&b).or(&a.and(&c)));
        prop_assert!(a.and(&b).is_subset(&a));
        prop_assert!(a.is_subset(&a.or(&b)));
        prop_assert_eq!(a.intersects(&b), !a.and(&b).is_empty());
        prop_assert_eq!(a.weight_and(&b), a.and(&b).weight());
        prop_assert_eq!(a.weight() + b.weight(), a.or(&b).weight() + a.and(&b).weight());
        prop_assert_eq!(a.is_subset(&b), a.andnot(&b).is_empty());
        prop_assert_eq!(a.first_and(&b), a.and(&b).first());
        for i in 0..n {
            let cpu = CpuId(i as u32);
            prop_assert_eq!(a.and(&b).test(cpu), a.test(cpu) && b.test(cpu));
            prop_assert_eq!(a.or(&b).test(cpu), a.test(cpu) || b.test(cpu));
            prop_assert_eq!(a.andnot(&b).test(cpu), a.test(cpu) && !b.test(cpu));
        }
        let listed: Vec<CpuId> = a.iter().collect();
        prop_assert_eq!(listed.len(), a.weight());
        prop_assert!(listed.windows(2).all(|w| w[0] < w[1]));
    }

    /// Invariant: the wrap walk visits every CPU once, starting at the first CPU at or after `start`.
    #[test]
    fn wrap_visits_all_once((a, _, _) in arb_triple(), start in 0usize..200) {
        let start = CpuId((start % a.nr_cpu_ids()) as u32);
        let w: Vec<CpuId> = a.iter_wrap(start).collect();
        let mut sorted = w.clone();
        sorted.sort();
        prop_assert_eq!(sorted, a.iter().collect::<Vec<_>>());
        if let Some(first) = w.first() {
            let expect = a.next_from(start).or(a.first());
            prop_assert_eq!(Some(*first), expect);
        }
    }
}
