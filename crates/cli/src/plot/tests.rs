use super::axis::Categories;
use super::run::series_period_ns;
use super::*;

const MS: u64 = 1_000_000;

/// 1 ms up to 2 s on a small machine; then the least whole ms keeping 2000 samples; a large
/// machine keeps 4 million values a series.
#[test]
fn series_period_is_a_whole_ms() {
    assert_eq!(series_period_ns(1, 8), MS);
    assert_eq!(series_period_ns(2000 * MS, 8), MS);
    assert_eq!(series_period_ns(2001 * MS, 8), 2 * MS);
    assert_eq!(series_period_ns(10_000 * MS, 8), 5 * MS);
    // 8192 CPUs: 488 samples.
    assert_eq!(series_period_ns(1000 * MS, 8192), 3 * MS);
}

#[test]
fn tick_labels_are_short() {
    assert_eq!(tick(0.0), "0");
    assert_eq!(tick(1.5), "1.5");
    assert_eq!(tick(120.0), "120");
    assert_eq!(tick(0.25), "0.25");
    assert_eq!(tick(12345.6), "12346");
}

#[test]
fn categories_tick_at_their_centres() {
    let c = Categories { n: 3 };
    assert_eq!(c.key_points(10usize), vec![0.5, 1.5, 2.5]);
    assert_eq!(c.key_points(2usize), vec![0.5, 2.5]);
    assert_eq!(Categories::index(1.5), 1);
    assert_eq!(c.map(&1.5, (0, 300)), 150);
}

#[test]
fn value_ranges_start_at_zero_and_leave_room() {
    let r = value_range([2.0, 4.0]);
    assert_eq!(r.start, 0.0);
    assert!(r.end > 4.0);
    let r = value_range([-2.0, 1.0]);
    assert!(r.start < -2.0);
    assert_eq!(value_range([0.0]), 0.0..1.15);
}

#[test]
fn plot_paths_must_be_svg() {
    let e = plot_file(Some(std::path::Path::new("x.png")), false).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--plot x.png: lbsim draws SVG only; name the file FILE.svg"
    );
    assert!(plot_file(None, false).unwrap().is_none());
}
