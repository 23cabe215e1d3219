//! The spec's tasks as the run keeps them: each task's name, and the rest of its spec shared
//! with the tasks around it that have the same.
//!
//! A generator's tasks differ in their names only, in runs of thousands (the busy threads,
//! the periodic ones, each schbench message thread and its workers), and the run needs each
//! task's spec until the task is created (at its start time, or when another task spawns it,
//! late in the run for some) and its part and group at the end of the run. Kept whole, a
//! `TaskSpec` (136 bytes and a group string) per task would stay all run long beside the
//! task's own state; here a task is its name and the index of its prototype, a `TaskSpec`
//! with an empty name that the run of tasks shares.

use std::sync::Arc;

use lbsim_workload::TaskSpec;

/// The spec's tasks, in TaskRef order: names and shared prototypes.
#[derive(Debug, Default)]
pub(crate) struct SpecTasks {
    /// Per task: its name (moved out when the task is created or reported).
    names: Vec<Box<str>>,
    /// The prototypes: one per run of consecutive tasks whose specs are the same but for the
    /// name (the program compared by its `Arc`), with an empty name.
    protos: Vec<Arc<TaskSpec>>,
    /// Per task: the index of its prototype in `protos` (beside the names rather than paired
    /// with each: 4 bytes less a task, the pair's padding).
    proto_of: Vec<u32>,
    /// Per prototype: its group, shared by the reports of its tasks.
    groups: Vec<Arc<str>>,
}

impl SpecTasks {
    /// The spec's tasks `specs`, whose strings it takes.
    pub(crate) fn new(specs: Vec<TaskSpec>) -> SpecTasks {
        let mut out = SpecTasks {
            names: Vec::with_capacity(specs.len()),
            protos: Vec::new(),
            proto_of: Vec::with_capacity(specs.len()),
            groups: Vec::new(),
        };
        for mut spec in specs {
            let name = std::mem::take(&mut spec.name).into_boxed_str();
            if out.protos.last().is_none_or(|p| !same_but_name(p, &spec)) {
                out.groups.push(spec.group.as_str().into());
                out.protos.push(Arc::new(spec));
            }
            let p = u32::try_from(out.protos.len() - 1).expect("fewer than 2^32 prototypes");
            out.names.push(name);
            out.proto_of.push(p);
        }
        out
    }

    /// The number of tasks of the spec.
    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }

    /// The index of task `i`'s prototype.
    fn proto(&self, i: usize) -> usize {
        self.proto_of[i] as usize
    }

    /// Task `i`'s spec (its name empty once taken).
    pub(crate) fn spec(&self, i: usize) -> &TaskSpec {
        &self.protos[self.proto(i)]
    }

    /// Task `i`'s name, moved out (to its runqueue task), and its spec (its prototype,
    /// whose name is empty), for its creation.
    pub(crate) fn take(&mut self, i: usize) -> (String, Arc<TaskSpec>) {
        let p = self.proto(i);
        (
            std::mem::take(&mut self.names[i]).into_string(),
            Arc::clone(&self.protos[p]),
        )
    }

    /// Task `i`'s name (moved out: empty for a created task, whose runqueue task has it),
    /// part and group (shared), for the end of the run.
    pub(crate) fn take_report(&mut self, i: usize) -> (String, u16, Arc<str>) {
        let p = self.proto(i);
        (
            std::mem::take(&mut self.names[i]).into_string(),
            self.protos[p].part,
            Arc::clone(&self.groups[p]),
        )
    }
}

/// Whether `a` and `b` are the same spec but for their names.
fn same_but_name(a: &TaskSpec, b: &TaskSpec) -> bool {
    let TaskSpec {
        name: _,
        policy,
        nice,
        affinity,
        custom_slice_ns,
        start_ns,
        jitter_pct,
        group,
        part,
        cgroup,
        session,
        spawned,
        program,
    } = a;
    *policy == b.policy
        && *nice == b.nice
        && *affinity == b.affinity
        && *custom_slice_ns == b.custom_slice_ns
        && *start_ns == b.start_ns
        && *jitter_pct == b.jitter_pct
        && *group == b.group
        && *part == b.part
        && *cgroup == b.cgroup
        && *session == b.session
        && *spawned == b.spawned
        && Arc::ptr_eq(program, &b.program)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs() -> Vec<TaskSpec> {
        let w = lbsim_workload::parse_workloads(&["busy:threads=3", "schbench:m=2,t=2"])
            .expect("workload");
        let mut tasks = w.tasks;
        tasks[1].nice = 5;
        tasks
    }

    #[test]
    fn gives_back_each_tasks_spec() {
        let want = specs();
        let mut spec = SpecTasks::new(specs());
        assert_eq!(spec.len(), want.len());
        assert!(
            spec.protos.len() < want.len(),
            "runs of equal specs share a prototype"
        );
        for (i, w) in want.iter().enumerate() {
            assert_eq!(spec.spec(i).start_ns, w.start_ns);
            let (name, s) = spec.take(i);
            assert_eq!(
                TaskSpec {
                    name,
                    ..(*s).clone()
                },
                *w
            );
            assert_eq!(spec.spec(i).spawned, w.spawned);
            let (name, part, group) = spec.take_report(i);
            assert_eq!(
                (name.as_str(), part, &*group),
                ("", w.part, w.group.as_str())
            );
        }
        let (name, ..) = SpecTasks::new(specs()).take_report(2);
        assert_eq!(name, want[2].name);
    }
}
