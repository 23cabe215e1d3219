use super::*;

fn machine(spec: &str) -> Machine {
    lbsim_topology::parse_machine(spec).unwrap()
}

#[test]
fn machine_limits_name_the_count_the_limit_and_the_flag() {
    let b = MachineBudget {
        max_cpus: 8,
        max_nodes: 2,
    };
    assert!(b.check("--topology", "hikey", &machine("hikey")).is_ok());
    assert_eq!(
        b.check("--topology", "9", &machine("9"))
            .unwrap_err()
            .to_string(),
        "--topology `9`: the machine has 9 CPUs, more than the limit of 8 (--max-cpus N raises it, up to 8192)"
    );
    assert_eq!(
        b.check("--topology", "nodes=3", &machine("nodes=3"))
            .unwrap_err()
            .to_string(),
        "--topology `nodes=3`: the machine has 3 NUMA nodes, more than the limit of 2 (--max-nodes N raises it, up to 1024)"
    );
}

#[test]
fn workload_limits_name_their_flag() {
    let b = Budget {
        max_tasks: 4,
        max_cpusets: 1,
        ..Budget::default()
    };
    let e = lbsim_workload::parse_workloads_within(&["busy:threads=5"], b.workload_limits())
        .unwrap_err();
    assert_eq!(
        Budget::workload_error(e).to_string(),
        "--workload: the run's workloads make 5 tasks, more than the limit of 4 (--max-tasks N raises it)"
    );
    let e = lbsim_workload::parse_workloads_within(&["hogs:cpus=0-1"], b.workload_limits())
        .unwrap_err();
    assert_eq!(
        Budget::describe(&e),
        "the run's workloads make 2 cpusets, more than the limit of 1 (--max-cpusets N raises it)"
    );
}
