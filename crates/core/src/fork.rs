//! Task creation: `fork()` and `wake_up_new_task()`.
//!
//! Follows core.c: sched_fork(), wake_up_new_task() (v6.12).

use crate::prelude::*;

impl<B: Balancer> Core<B> {
    pub(crate) fn start_task(&mut self, i: u32) {
        // The task's name, moved out of the run's spec (the runqueue task keeps it, and the
        // end of the run takes it from there), and its spec, shared.
        let (name, spec) = self.spec.take(i as usize);
        // Top-level tasks are forked by the launcher (rt-app's or the benchmark's main thread),
        // which lbsim places on CPU 0, or on the task's first allowed CPU.
        // (A task allowed every CPU is allowed CPU 0: no mask to build for it.)
        let parent = match spec.affinity {
            None => CpuId(0),
            Some(id) => {
                let nr = self.rqs.len();
                let mask =
                    Cpumask::from_cpus(nr, self.cfg.workload.cpuset(id).iter().map(|&c| CpuId(c)));
                if mask.test(CpuId(0)) {
                    CpuId(0)
                } else {
                    mask.first().unwrap_or(CpuId(0))
                }
            }
        };
        self.create_workload_task(&spec, name, parent, Some(TaskRef(i)));
    }

    /// A spawned task of the spec (`pthread_create()` by the task running on `cpu`).
    pub(crate) fn spawn_task(&mut self, r: TaskRef, cpu: CpuId) {
        match self.by_ref.get(r.index()) {
            Some(&NOT_CREATED) => {}
            created => {
                // The name of a created task of the spec is its runqueue task's.
                let name = created.map_or("?", |&ri| &self.tasks[self.runs[ri as usize].id].name);
                self.error.get_or_insert(SimError::Workload(format!(
                    "task {name} is spawned a second time"
                )));
                return;
            }
        }
        let (name, spec) = self.spec.take(r.index());
        let parent = self.rqs[cpu.index()].curr;
        self.create_workload_task_of(&spec, name, cpu, Some(r), parent);
    }

    /// The mask of the workload's cpuset `set` (`None`: every CPU), shared by every task
    /// given it.
    pub(crate) fn affinity_mask(&mut self, set: Option<lbsim_workload::CpusetId>) -> Arc<Cpumask> {
        let nr = self.rqs.len();
        let workload = &self.cfg.workload;
        let m = self.masks.entry(set.map(|id| id.0)).or_insert_with(|| {
            Arc::new(match set {
                None => Cpumask::full(nr),
                Some(id) => Cpumask::from_cpus(nr, workload.cpuset(id).iter().map(|&c| CpuId(c))),
            })
        });
        Arc::clone(m)
    }

    /// `fork()` + `wake_up_new_task()` from `parent_cpu` of a task of the spec (`Some(its
    /// TaskRef)`) or of a fork template's new instance (`None`: the next TaskRef), named
    /// `name` (a task of the spec moves its name into its runqueue task; a forked task's
    /// observation keeps the name of `spec`, and the runqueue task a copy).
    pub(crate) fn create_workload_task(
        &mut self,
        spec: &lbsim_workload::TaskSpec,
        name: String,
        parent_cpu: CpuId,
        of_spec: Option<TaskRef>,
    ) {
        let parent = self.rqs[parent_cpu.index()].curr;
        self.create_workload_task_of(spec, name, parent_cpu, of_spec, parent);
    }

    /// [`Self::create_workload_task`] with the forking task (`None`: the run's launcher,
    /// whose group is the root).
    fn create_workload_task_of(
        &mut self,
        spec: &lbsim_workload::TaskSpec,
        name: String,
        parent_cpu: CpuId,
        of_spec: Option<TaskRef>,
        parent: Option<TaskId>,
    ) {
        let wref = of_spec.unwrap_or_else(|| self.next_forked_ref());
        let mask = self.affinity_mask(spec.affinity);
        if mask.is_empty() {
            self.error.get_or_insert(SimError::Workload(format!(
                "task {name} has an empty affinity"
            )));
            return;
        }
        let policy = spec.policy;
        // The task's affinity as set_affinity() would set it: Task::new() counts the mask's
        // CPUs, the capacity is set here.
        let max_allowed_capacity = self.max_allowed_capacity(&mask);
        let mut task = Task::new(
            name,
            policy,
            spec.nice,
            mask,
            parent_cpu,
            self.cfg.tunables.base_slice_ns,
        );
        task.max_allowed_capacity = max_allowed_capacity;
        if let Some(slice) = spec.custom_slice_ns {
            task.se.slice = slice;
            task.se.custom_slice = true;
        }
        let mut autogroup = 0;
        if let Some(tree) = &self.tg_tree {
            // sched_fork() -> sched_cgroup_fork(): the cgroup's group, or the session's
            // autogroup (sched_get_task_group() -> autogroup_task_group()).
            let tg = spec.cgroup.as_deref().map_or(0, |path| {
                tree.find(path).expect("every named cgroup is in the tree")
            });
            let ag = spec
                .session
                .filter(|&s| s != 0)
                .and_then(|s| tree.find_autogroup(s));
            task.tg = lbsim_rq::group::autogroup_task_group(
                self.cfg.tunables.sched_autogroup_enabled,
                tg,
                ag,
            );
            autogroup = ag.unwrap_or(0);
            // A task whose spec names neither cgroup nor session, forked by a workload task
            // (rt-app's `fork` of a template without a `taskgroup`): cgroup_fork() gives the
            // child its parent's css_set and the autogroup is the thread group's
            // (signal->autogroup), so it starts in its parent's group as the parent is now,
            // phase-level moves included. (A template that names a taskgroup starts there at
            // once: rt-app moves it at its first phase, before it runs anything; the instants
            // differ by its first wake-up only.)
            if spec.cgroup.is_none()
                && spec.session.is_none()
                && let Some(p) = parent
                && let Some(&pri) = self.run_of.get(p)
                && matches!(self.runs[pri as usize].kind, Kind::Workload { .. })
            {
                task.tg = self.tasks[p].tg;
                autogroup = self.runs[pri as usize].autogroup;
            }
        }
        let id = self.tasks.insert(task);
        let program = spec.start(wref);
        let rng = self.streams.rng(Stream::Task, u64::from(wref.0));
        let ri = self.add_run(id, Kind::Workload { program, rng });
        self.runs[ri as usize].autogroup = autogroup;
        // The idle-while-overloaded summary keeps the waiting tasks' affinities per CPU
        // (set_affinity()'s mark, for the task's CPU: its parent's).
        self.iwo.mark(parent_cpu);
        if of_spec.is_some() {
            self.by_ref[wref.index()] = ri;
            self.not_created -= 1;
        } else {
            self.by_ref.push(ri);
            self.forked.push(TaskObservation::new(spec, self.now));
        }
        // fork: sched_fork() / task_fork_fair() on the parent's CPU.
        let now = self.now;
        self.rqs[parent_cpu.index()].task_fork_fair(&mut self.tasks, id, now);
        // wake_up_new_task(): select_task_rq(WF_FORK) from the parent's CPU.
        let placement = self
            .ctx_call(|b, ctx| b.select_task_rq(ctx, id, parent_cpu, parent_cpu, WakeFlags::FORK));
        let cost = self.cfg.cost.charge(&placement.work);
        self.charge(parent_cpu, cost);
        let cpu = self.checked_placement(id, placement.cpu);
        // kernel_clone(): sched_process_fork from the parent (the task current on its CPU),
        // before wake_up_new_task().
        if self.trace.is_some() {
            let parent_pid = self.pid(self.rqs[parent_cpu.index()].curr);
            self.trace_task(now, parent_cpu, id, |child_pid| {
                crate::trace::TraceEvent::Fork {
                    parent_pid,
                    child_pid,
                }
            });
        }
        self.trace_task(now, parent_cpu, id, |pid| {
            crate::trace::TraceEvent::WakeupNew {
                pid,
                target_cpu: cpu.0,
            }
        });
        self.trace_charge(parent_cpu, crate::trace::Charge::Fork, cost);
        self.account(cpu);
        self.tasks[id].cpu = cpu;
        self.tasks[id].wake_cpu = cpu;
        // A new task's first run is not a wake-up: no latency sample (perf sched counts
        // sched_wakeup_new apart from sched_wakeup).
        self.rqs[cpu.index()].wake_up_new_task(&mut self.tasks, id, now);
        self.after_enqueue(cpu, parent_cpu);
    }

    /// The [`TaskRef`] of the next task forked from a template: after the spec's tasks and
    /// those forked so far.
    pub(crate) fn next_forked_ref(&self) -> TaskRef {
        TaskRef((self.spec.len() + self.forked.len()) as u32)
    }

    pub(crate) fn checked_placement(&mut self, p: TaskId, cpu: CpuId) -> CpuId {
        let t = &self.tasks[p];
        if cpu.index() >= self.rqs.len() || !t.cpus_mask.test(cpu) {
            self.error.get_or_insert(SimError::Invariant {
                time_ns: self.now,
                cpu: cpu.0,
                task: format!(" task {}", t.name),
                detail: format!(
                    "select_task_rq chose cpu {} outside the task's affinity {}",
                    cpu.0,
                    t.cpus_mask.to_cpulist()
                ),
            });
            return t.cpus_mask.first().unwrap_or(CpuId(0));
        }
        cpu
    }
}
