use super::{Effects, Ev};

/// Drains `fx`, returning `(slot, at_ns)` of each event handed to the engine.
fn drained(fx: &mut Effects) -> Vec<(u32, u64)> {
    let mut out = Vec::new();
    fx.drain(|e| out.push((e.key.slot(), e.at_ns)));
    out
}

#[test]
fn a_cancel_before_the_drain_drops_the_event_and_frees_its_slot() {
    let mut fx = Effects::default();
    let a = fx.at(10, Ev::Tick { cpu: 0 });
    let b = fx.at(20, Ev::SegEnd { cpu: 0 });
    let c = fx.at(30, Ev::Tick { cpu: 1 });
    fx.cancel(b);
    // The others keep their order; nothing is left for the engine to skip.
    assert_eq!(drained(&mut fx), [(a.slot(), 10), (c.slot(), 30)]);
    assert_eq!(fx.cancelled(), 0);
    // The freed slot is reused under a new generation, so the old key names no event.
    let d = fx.at(40, Ev::SegEnd { cpu: 0 });
    assert_eq!(d.slot(), b.slot());
    assert_ne!(d, b);
}

#[test]
fn a_cancel_after_the_drain_marks_the_event_for_the_engine() {
    let mut fx = Effects::default();
    let a = fx.at(10, Ev::Tick { cpu: 0 });
    assert_eq!(drained(&mut fx), [(a.slot(), 10)]);
    fx.cancel(a);
    assert_eq!(fx.cancelled(), 1);
    assert!(fx.take_cancelled(a.slot()));
    assert_eq!(fx.cancelled(), 0);
}

#[test]
fn a_reschedule_leaves_what_a_cancel_then_a_new_event_leave() {
    // The event rescheduled is the last one (in place) or an earlier one.
    for last in [true, false] {
        let (mut one, mut two) = (Effects::default(), Effects::default());
        for fx in [&mut one, &mut two] {
            fx.at(5, Ev::Tick { cpu: 1 });
            fx.at(10, Ev::SegEnd { cpu: 0 });
            if !last {
                fx.at(15, Ev::Tick { cpu: 0 });
            }
        }
        let old = one.ops[1].key;
        let a = one.reschedule(old, 30, Ev::SegEnd { cpu: 0 });
        two.cancel(old);
        let b = two.at(30, Ev::SegEnd { cpu: 0 });
        assert_eq!(a, b);
        assert_eq!(one.ops, two.ops);
        assert_eq!(one.free, two.free);
        assert_eq!(drained(&mut one), drained(&mut two));
    }
}
