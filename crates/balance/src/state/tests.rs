use lbsim_topology::{CpuId, SdParams, Topology, parse_machine};

use super::*;

fn topo(spec: &str) -> Topology {
    Topology::build(&parse_machine(spec).unwrap(), &SdParams::default()).unwrap()
}

/// Rule (sd_init, init_sched_groups_capacity, update_max_interval): every domain starts
/// with `balance_interval = sd_weight` ms and `last_balance = jiffies`; each LLC's
/// `nr_busy_cpus` is its weight; group capacities are the topology's; the longest interval
/// is `HZ * nr_cpus / 10` jiffies.
#[test]
fn boot_state_of_hikey() {
    let t = topo("hikey");
    let st = BalanceState::new(&t, 7, 1000);
    for c in 0..8 {
        let cpu = CpuId(c);
        assert_eq!(st.nr_domains(cpu), t.domains(cpu).len());
        for (level, sd) in t.domains(cpu).iter().enumerate() {
            let d = st.sd(cpu, level);
            assert_eq!(d.balance_interval, u64::from(sd.span_weight));
            assert_eq!(
                (d.last_balance, d.nr_balance_failed, d.max_newidle_lb_cost),
                (7, 0, 0)
            );
        }
        assert_eq!(st.sd_llc_shared(&t, cpu).unwrap().nr_busy_cpus, 4);
    }
    for g in t.all_groups() {
        assert_eq!(st.sgc(g.sgc).capacity, g.capacity);
        assert!(!st.sgc(g.sgc).imbalance);
    }
    assert_eq!(st.max_load_balance_interval, 800);
    assert_eq!(
        BalanceState::new(&topo("cores=1"), 0, 250).max_load_balance_interval,
        25
    );
}

/// Rule (msecs_to_jiffies): rounds up to whole jiffies.
#[test]
fn msecs_to_jiffies_rounds_up() {
    assert_eq!(msecs_to_jiffies(8, 1000), 8);
    assert_eq!(msecs_to_jiffies(8, 250), 2);
    assert_eq!(msecs_to_jiffies(9, 250), 3);
    assert_eq!(msecs_to_jiffies(1, 100), 1);
    assert_eq!(msecs_to_jiffies(0, 250), 0);
    assert_eq!(msecs_to_jiffies(10, 300), 3);
}

/// The per-(cpu, level) index is dense and the LLC shared state is one per LLC.
#[test]
fn indexing() {
    let t = topo("llcs=2,cores=2,threads=2");
    let mut st = BalanceState::new(&t, 0, 1000);
    st.sd_mut(CpuId(5), 1).nr_balance_failed = 3;
    assert_eq!(st.sd(CpuId(5), 1).nr_balance_failed, 3);
    assert_eq!(st.sd(CpuId(4), 1).nr_balance_failed, 0);
    st.sd_llc_shared_mut(&t, CpuId(0)).unwrap().has_idle_cores = true;
    assert!(st.sd_llc_shared(&t, CpuId(3)).unwrap().has_idle_cores);
    assert!(!st.sd_llc_shared(&t, CpuId(4)).unwrap().has_idle_cores);
}
