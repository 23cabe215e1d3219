use super::*;

#[test]
fn axes_take_lists_and_inclusive_ranges() {
    let a = parse_axis("busy:threads=8..10,16").unwrap();
    assert_eq!(a.name, "busy:threads");
    assert_eq!(a.values, ["8", "9", "10", "16"]);
    assert_eq!(
        parse_axis("LB_RELAX_BY_FAILED=on,off").unwrap().values,
        ["on", "off"]
    );
    for bad in [
        "imbalance_pct",
        "=1",
        "x=",
        "x=1,,2",
        "x=5..3",
        "x=a..3",
        "x=0..100000",
    ] {
        assert!(parse_axis(bad).is_err(), "{bad}");
    }
}

#[test]
fn the_grid_is_every_combination_first_axis_outermost() {
    let axes = [parse_axis("a=1,2").unwrap(), parse_axis("b=x,y,z").unwrap()];
    let labels: Vec<String> = grid(&axes).iter().map(|p| p.label(&axes)).collect();
    assert_eq!(
        labels,
        [
            "a=1 b=x", "a=1 b=y", "a=1 b=z", "a=2 b=x", "a=2 b=y", "a=2 b=z"
        ]
    );
}

#[test]
fn a_workload_key_is_replaced_or_added() {
    assert_eq!(with_key("busy:threads=4", "threads", "8"), "busy:threads=8");
    assert_eq!(
        with_key("busy:threads=4", "nice", "5"),
        "busy:threads=4,nice=5"
    );
    assert_eq!(with_key("pipe", "loops", "10"), "pipe:loops=10");
}

#[test]
fn shards_are_k_of_n() {
    assert_eq!(parse_shard("2/3").unwrap(), (2, 3));
    for bad in ["0/3", "4/3", "1/0", "1", "a/b"] {
        assert!(parse_shard(bad).is_err(), "{bad}");
    }
}
