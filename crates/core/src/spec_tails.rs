//! What a run keeps of its spec's tasks once every one of them is created.
//!
//! Creating a task reads its spec (program, policy, affinity, cgroup, start time); after
//! that the run needs only what the end of the run reports of it, its part and its fairness
//! group. A run of tens of thousands of tasks would otherwise keep a `TaskSpec` (136 bytes and
//! a group string) per task all run long beside the task's own state, so the core swaps the
//! spec's tasks for this table when the last of them is created.

use lbsim_workload::TaskSpec;

/// Each task of the spec's part and fairness group, in TaskRef order.
#[derive(Debug, Default)]
pub(crate) struct SpecTails {
    /// Per task of the spec: its part and the index of its group in `groups`.
    tasks: Vec<(u16, u32)>,
    /// The groups, one entry per run of consecutive tasks with the same group (a generator's
    /// tasks come in such runs: a few entries for thousands of tasks).
    groups: Vec<String>,
}

impl SpecTails {
    /// The tails of `specs`, whose group strings it takes.
    pub(crate) fn take_from(specs: Vec<TaskSpec>) -> SpecTails {
        let mut tails = SpecTails {
            tasks: Vec::with_capacity(specs.len()),
            groups: Vec::new(),
        };
        for spec in specs {
            if tails.groups.last() != Some(&spec.group) {
                tails.groups.push(spec.group);
            }
            let g = u32::try_from(tails.groups.len() - 1).expect("fewer than 2^32 groups");
            tails.tasks.push((spec.part, g));
        }
        tails
    }

    /// Task `i`'s part and group.
    pub(crate) fn get(&self, i: usize) -> (u16, &str) {
        let (part, g) = self.tasks[i];
        (part, &self.groups[g as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(group: &str, part: u16) -> TaskSpec {
        let mut w = lbsim_workload::parse_workloads(&["busy:threads=1"]).expect("workload");
        let mut t = w.tasks.remove(0);
        t.group = group.to_string();
        t.part = part;
        t
    }

    #[test]
    fn keeps_each_tasks_part_and_group() {
        let specs = vec![
            spec("a", 0),
            spec("a", 0),
            spec("b", 1),
            spec("a", 1),
            spec("a", 2),
        ];
        let want: Vec<(u16, String)> = specs.iter().map(|s| (s.part, s.group.clone())).collect();
        let tails = SpecTails::take_from(specs);
        for (i, (part, group)) in want.iter().enumerate() {
            assert_eq!(tails.get(i), (*part, group.as_str()));
        }
        assert_eq!(tails.groups.len(), 3, "one entry per run of equal groups");
    }
}
