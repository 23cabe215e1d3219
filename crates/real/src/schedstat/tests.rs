use lbsim_balance::lb::{CpuIdleType, MigrationType};
use lbsim_balance::schedstat::{Schedstat, SchedstatVersion};
use lbsim_topology::{CpuId, SdParams, Topology, parse_machine};

use super::*;

/// The sample committed in tests/data: v6.12's layout (version 16) on 4 CPUs, SMT pairs under
/// one MC domain.
const SAMPLE: &str = include_str!("../../tests/data/schedstat-v6.12.txt");

/// Rule (stats.c show_schedstat(), v6.12, and sched-stats.rst): the cpu line is yld_count, a
/// 0, sched_count, sched_goidle, ttwu_count, ttwu_local, rq_cpu_time, run_delay, pcount; a
/// version-16 domain line is the span, 8 counters for each of busy, idle and newly idle, then
/// alb_count alb_failed alb_pushed, sbe_* and sbf_* (3 each) and ttwu_wake_remote
/// ttwu_move_affine ttwu_move_balance.
#[test]
fn reads_the_v6_12_sample() {
    let s = parse(SAMPLE).unwrap();
    assert_eq!((s.version, s.timestamp), (16, 4_295_123_456));
    assert_eq!(s.cpus.len(), 4);
    let c = &s.cpus[0];
    assert_eq!(
        (c.cpu, c.yld_count, c.sched_count, c.sched_goidle),
        (0, 3, 812_345, 401_234)
    );
    assert_eq!((c.ttwu_count, c.ttwu_local), (390_011, 201_100));
    assert_eq!(
        (c.rq_cpu_time, c.run_delay, c.pcount),
        (98_765_432_101, 1_234_567_890, 812_000)
    );
    assert_eq!(c.domains.len(), 2);
    let d = &c.domains[0];
    assert_eq!(
        (d.level, d.name.as_deref(), d.span.as_str()),
        (0, None, "3")
    );
    let busy = &d.lb[0];
    assert_eq!(
        (
            busy.lb_count,
            busy.lb_balanced,
            busy.lb_failed,
            busy.lb_imbalance
        ),
        (82202, 49915, 5740, 150527)
    );
    assert_eq!(busy.lb_imbalance_by_type, None);
    assert_eq!(
        (
            busy.lb_gained,
            busy.lb_hot_gained,
            busy.lb_nobusyq,
            busy.lb_nobusyg
        ),
        (12506, 44, 23, 31623)
    );
    assert_eq!(d.lb[1].lb_count, 55920);
    assert_eq!(d.lb[2].lb_count, 39045);
    assert_eq!(d.lb[2].lb_nobusyg, 18881);
    assert_eq!((d.alb_count, d.alb_failed, d.alb_pushed), (17, 1, 16));
    assert_eq!((d.sbe, d.sbf), ([0; 3], [0; 3]));
    assert_eq!(
        (d.ttwu_wake_remote, d.ttwu_move_affine, d.ttwu_move_balance),
        (8513, 713, 0)
    );
    assert_eq!(s.cpus[3].domains[1].span, "f");
}

/// Columns numbered 1..=36 (1..=45 in version 17) land in the field of that column, in each
/// version's idle-type order: version 15 prints CPU_IDLE, CPU_NOT_IDLE, CPU_NEWLY_IDLE, later
/// versions the busy type first.
#[test]
fn columns_map_to_fields_in_each_version() {
    let line = |n: usize, name: &str| {
        let nums: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
        format!(
            "version {}\ntimestamp 0\ncpu0 1 0 2 3 4 5 6 7 8\ndomain0 {name}1 {}\n",
            if n == 45 {
                17
            } else if name == "v15" {
                15
            } else {
                16
            },
            nums.join(" ")
        )
        .replace("v15", "")
        .replace("v16", "")
    };
    let v16 = parse(&line(36, "v16")).unwrap();
    let d = &v16.cpus[0].domains[0];
    assert_eq!(
        [d.lb[0].lb_count, d.lb[1].lb_count, d.lb[2].lb_count],
        [1, 9, 17]
    );
    assert_eq!((d.lb[0].lb_imbalance, d.lb[2].lb_nobusyg), (4, 24));
    assert_eq!(
        (d.alb_count, d.alb_pushed, d.sbe[0], d.sbf[2]),
        (25, 27, 28, 33)
    );
    assert_eq!(
        (d.ttwu_wake_remote, d.ttwu_move_affine, d.ttwu_move_balance),
        (34, 35, 36)
    );
    let v15 = parse(&line(36, "v15")).unwrap();
    let d = &v15.cpus[0].domains[0];
    // The first block is CPU_IDLE's.
    assert_eq!(
        [d.lb[0].lb_count, d.lb[1].lb_count, d.lb[2].lb_count],
        [9, 1, 17]
    );
    let v17 = parse(&line(45, "MC ")).unwrap();
    let d = &v17.cpus[0].domains[0];
    assert_eq!(d.name.as_deref(), Some("MC"));
    assert_eq!(d.lb[0].lb_imbalance_by_type, Some([4, 5, 6, 7]));
    assert_eq!(d.lb[0].lb_imbalance, 4 + 5 + 6 + 7);
    assert_eq!(
        (d.lb[0].lb_gained, d.lb[1].lb_count, d.lb[2].lb_nobusyg),
        (8, 12, 33)
    );
    assert_eq!((d.alb_count, d.ttwu_move_balance), (34, 45));
}

/// lbsim's own /proc/schedstat text (lbsim-balance's Schedstat::format_version(), which the
/// simulated runs print) reads back as the counters it was made from, in every version, on a
/// machine with SMT, MC and PKG levels and more than 32 CPUs (a span of two hex chunks).
#[test]
fn round_trip_of_lbsims_own_text() {
    let t = Topology::build(
        &parse_machine("sockets=2,cores=10,threads=2").unwrap(),
        &SdParams::default(),
    )
    .unwrap();
    let mut ss = Schedstat::new(&t);
    let mut k = 1u32;
    let mut next = || {
        k = k.wrapping_mul(2_654_435_761).wrapping_add(12345);
        k % 100_000
    };
    for c in 0..t.nr_cpus() {
        let cpu = CpuId(c as u32);
        let s = &mut ss.cpus[c];
        s.yld_count = next();
        s.sched_count = next();
        s.sched_goidle = next();
        s.ttwu_count = next();
        s.ttwu_local = next();
        s.rq_cpu_time = u64::from(next()) * 1_000_003;
        s.run_delay = u64::from(next()) * 999;
        s.pcount = u64::from(next());
        for level in 0..t.domains(cpu).len() {
            let d = ss.sd_mut(cpu, level);
            for idle in CpuIdleType::ALL {
                let l = d.lb_mut(idle);
                l.lb_count = next();
                l.lb_balanced = next();
                l.lb_failed = next();
                l.lb_gained = next();
                l.lb_hot_gained = next();
                l.lb_nobusyq = next();
                l.lb_nobusyg = next();
                for m in [
                    MigrationType::Load,
                    MigrationType::Util,
                    MigrationType::Task,
                ] {
                    let v = i64::from(next());
                    d.add_imbalance(idle, m, v);
                }
            }
            d.alb_count = next();
            d.alb_failed = next();
            d.alb_pushed = next();
            d.ttwu_wake_remote = next();
            d.ttwu_move_affine = next();
        }
    }
    for v in SchedstatVersion::ALL {
        let text = ss.format_version(&t, 777, v);
        let p = parse(&text).unwrap_or_else(|e| panic!("version {}: {e}", v.number()));
        assert_eq!((p.version, p.timestamp), (v.number(), 777));
        assert_eq!(p.cpus.len(), t.nr_cpus());
        for (c, pc) in p.cpus.iter().enumerate() {
            let cpu = CpuId(c as u32);
            let s = &ss.cpus[c];
            assert_eq!(pc.cpu, c as u32);
            assert_eq!(
                [
                    pc.yld_count,
                    pc.sched_count,
                    pc.sched_goidle,
                    pc.ttwu_count,
                    pc.ttwu_local
                ],
                [
                    s.yld_count,
                    s.sched_count,
                    s.sched_goidle,
                    s.ttwu_count,
                    s.ttwu_local
                ]
                .map(u64::from)
            );
            assert_eq!(
                [pc.rq_cpu_time, pc.run_delay, pc.pcount],
                [s.rq_cpu_time, s.run_delay, s.pcount]
            );
            assert_eq!(pc.domains.len(), t.domains(cpu).len());
            for (level, (pd, sd)) in pc.domains.iter().zip(t.domains(cpu)).enumerate() {
                let d = ss.sd(cpu, level);
                assert_eq!(pd.span, t.span(sd.span).to_hex());
                let want_name = (v == SchedstatVersion::V17).then(|| sd.name.to_string());
                assert_eq!(pd.name, want_name);
                for (i, idle) in CpuIdleType::ALL.into_iter().enumerate() {
                    let (l, pl) = (d.lb(idle), &pd.lb[i]);
                    assert_eq!(
                        [
                            pl.lb_count,
                            pl.lb_balanced,
                            pl.lb_failed,
                            pl.lb_gained,
                            pl.lb_hot_gained,
                            pl.lb_nobusyq,
                            pl.lb_nobusyg
                        ],
                        [
                            l.lb_count,
                            l.lb_balanced,
                            l.lb_failed,
                            l.lb_gained,
                            l.lb_hot_gained,
                            l.lb_nobusyq,
                            l.lb_nobusyg
                        ]
                        .map(u64::from),
                        "version {} cpu{c} domain{level} {}",
                        v.number(),
                        IDLE_TYPES[i]
                    );
                    let sum = l.lb_imbalance.iter().fold(0u32, |a, &x| a.wrapping_add(x));
                    assert_eq!(pl.lb_imbalance, u64::from(sum));
                    let by = (v == SchedstatVersion::V17).then(|| l.lb_imbalance.map(u64::from));
                    assert_eq!(pl.lb_imbalance_by_type, by);
                }
                assert_eq!(
                    [
                        pd.alb_count,
                        pd.alb_failed,
                        pd.alb_pushed,
                        pd.ttwu_wake_remote,
                        pd.ttwu_move_affine,
                        pd.ttwu_move_balance
                    ],
                    [
                        d.alb_count,
                        d.alb_failed,
                        d.alb_pushed,
                        d.ttwu_wake_remote,
                        d.ttwu_move_affine,
                        d.ttwu_move_balance
                    ]
                    .map(u64::from)
                );
            }
        }
        // A snapshot less itself is all zeros; less lbsim's zeroed counters, itself.
        let zero = parse(&Schedstat::new(&t).format_version(&t, 700, v)).unwrap();
        let d = p.delta(&zero).unwrap();
        assert_eq!(d.timestamp, 77);
        assert_eq!(d.cpus, p.cpus);
        assert!(p.delta(&p).unwrap().totals().iter().all(|&(_, n)| n == 0));
    }
}

/// Rule (the counters are `unsigned int`): a delta is taken modulo 2^32, so a counter that
/// wrapped during the run diffs to what was added; u64 times diff as u64.
#[test]
fn delta_per_cpu_and_domain_wraps_as_the_kernel_counts() {
    let before = parse(SAMPLE).unwrap();
    let mut after = before.clone();
    after.timestamp += 250;
    after.cpus[1].ttwu_count += 40;
    after.cpus[1].rq_cpu_time += 5_000_000_000;
    after.cpus[2].domains[1].lb[2].lb_count += 7;
    after.cpus[2].domains[1].alb_pushed += 1;
    let mut wrapped = before.clone();
    wrapped.cpus[0].domains[0].lb[0].lb_count = u64::from(u32::MAX) - 2;
    let mut after_wrap = wrapped.clone();
    after_wrap.cpus[0].domains[0].lb[0].lb_count = 4;
    let d = after.delta(&before).unwrap();
    assert_eq!(d.timestamp, 250);
    assert_eq!(d.cpus[1].ttwu_count, 40);
    assert_eq!(d.cpus[1].rq_cpu_time, 5_000_000_000);
    assert_eq!(d.cpus[2].domains[1].lb[2].lb_count, 7);
    assert_eq!(d.cpus[2].domains[1].lb[0].lb_count, 0);
    let tot: std::collections::BTreeMap<_, _> = d.totals().into_iter().collect();
    assert_eq!(
        (tot["lb_count"], tot["alb_pushed"], tot["ttwu_count"]),
        (7, 1, 40)
    );
    assert_eq!(tot["lb_failed"], 0);
    let w = after_wrap.delta(&wrapped).unwrap();
    assert_eq!(w.cpus[0].domains[0].lb[0].lb_count, 7);
}

/// Snapshots of different machines or layouts do not diff.
#[test]
fn delta_of_different_machines_is_an_error() {
    let a = parse(SAMPLE).unwrap();
    let mut b = a.clone();
    b.cpus.pop();
    assert!(matches!(a.delta(&b), Err(SchedstatError::Mismatch(_))));
    let mut b = a.clone();
    b.cpus[0].domains[1].span = "ff".into();
    let e = a.delta(&b).unwrap_err().to_string();
    assert_eq!(
        e,
        "/proc/schedstat snapshots differ in cpu0 domain1 (span ff then f): cannot diff them"
    );
    let mut b = a.clone();
    b.version = 15;
    assert!(matches!(a.delta(&b), Err(SchedstatError::Mismatch(_))));
}

/// Bad or cut text is a typed error naming the line, never a panic: every prefix of the
/// sample (cut mid-line or at a line end) either parses or errs, and the errors say where.
#[test]
fn bad_and_partial_text_are_typed_errors() {
    let err = |t: &str| parse(t).unwrap_err().to_string();
    assert_eq!(err(""), "/proc/schedstat: no `version` line");
    assert_eq!(
        err("version 14\ntimestamp 1\n"),
        "/proc/schedstat line 1: version 14: lbsim reads versions 15, 16 and 17 (kernels v4.x to v6.14+)"
    );
    assert_eq!(err("version 16\n"), "/proc/schedstat: no `timestamp` line");
    assert_eq!(
        err("version 16\ntimestamp 5\n"),
        "/proc/schedstat: no `cpu<N>` line"
    );
    assert_eq!(
        err("version 16\ntimestamp 5\ncpu0 1 0 2 3 4 5 6 7\n"),
        "/proc/schedstat line 3: ends before pcount"
    );
    assert_eq!(
        err("version 16\ntimestamp 5\ncpu0 1 0 2 3 4 5 6 7 8 9 10 11 12\n"),
        "/proc/schedstat line 3: more than the 9 counters of a cpu line of this version"
    );
    assert_eq!(
        err("version 16\ntimestamp 5\ncpu0 1 0 -2 3 4 5 6 7 8\n"),
        "/proc/schedstat line 3: sched_count `-2` is not a non-negative integer"
    );
    assert_eq!(
        err("version 16\ntimestamp 5\ncpu0 4294967296 0 2 3 4 5 6 7 8\n"),
        "/proc/schedstat line 3: yld_count 4294967296 does not fit the kernel's unsigned int"
    );
    assert_eq!(
        err("version 16\ntimestamp 5\ndomain0 3 1\n"),
        "/proc/schedstat line 3: a domain line before any cpu line"
    );
    assert_eq!(
        err("version 16\ntimestamp 5\ncpu0 1 0 2 3 4 5 6 7 8\ndomain0 zz 1\n"),
        "/proc/schedstat line 4: span `zz` is not a cpumask"
    );
    assert_eq!(
        err("version 16\ntimestamp 5\ncpu0 1 0 2 3 4 5 6 7 8\nprocs 3\n"),
        "/proc/schedstat line 4: `procs`: expected a `cpu<N>` or `domain<N>` line"
    );
    // A version-17 line read as version 16 has nine columns too many.
    let v17 = SAMPLE.replacen("version 16", "version 17", 1);
    assert!(
        err(&v17).starts_with("/proc/schedstat line 4: "),
        "{}",
        err(&v17)
    );
    let mut ok = 0;
    for cut in 0..SAMPLE.len() {
        match parse(&SAMPLE[..cut]) {
            Ok(_) => ok += 1,
            Err(e) => assert!(e.to_string().starts_with("/proc/schedstat"), "{e}"),
        }
    }
    // Cut inside a number the text can still parse (a smaller number); cut inside a line's
    // field list it cannot.
    assert!(ok > 0 && ok < SAMPLE.len() / 2, "{ok}");
}
