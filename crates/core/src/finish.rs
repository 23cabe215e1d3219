//! The end of a run: the last accounting, then the per-task, per-CPU and fairness tables and
//! /proc/schedstat.

use crate::prelude::*;

/// What the end of a run keeps of a created task's run once the runs are dropped.
struct Ended {
    id: TaskId,
    runtime_ns: u64,
    work_ns: u64,
    max_wait_ns: u64,
    created_ns: u64,
    exited_ns: Option<u64>,
}

impl<B: Balancer> Core<B> {
    /// The operations each live task had counted since its last tally probes, recorded as its
    /// last probes at the run's end (a run that stops before a benchmark's own end still
    /// reports what it did: `ProgramState::take_tally`).
    fn flush_tallies(&mut self) {
        for &ri in self.by_ref.iter().filter(|&&r| r != NOT_CREATED) {
            if let Kind::Workload { program, .. } = &mut self.runs[ri as usize].kind
                && let Some((count, max_latency_ns)) = program.take_tally()
            {
                for (tag, value) in [
                    (lbsim_workload::ProbeTag::TallyCount, count),
                    (lbsim_workload::ProbeTag::TallyMaxLatency, max_latency_ns),
                ] {
                    self.obs.probes.push(ProbeRecord {
                        task: program.task(),
                        time_ns: self.now,
                        tag,
                        value,
                    });
                }
            }
        }
    }

    pub(crate) fn finish(mut self) -> RunResult {
        let checks = self.check_report();
        for c in 0..self.cpus.len() {
            let cpu = CpuId(c as u32);
            // The runs of a pure loop that end by the end of the run, as their segment ends
            // would have been (the engine handles the events due at the end; where another
            // event of that instant took the task off first, the last would not have been).
            if self.cpus[c].seg_chain
                && let Some(p) = self.rqs[c].curr
                && self.cpus[c].newidle.is_none()
            {
                let _ = self.pass_pure_runs(cpu, p, self.now);
            }
            self.settle(cpu);
            if let Some(p) = self.rqs[c].curr {
                self.account_runtime(p);
            }
        }
        self.account_all();
        self.flush_tallies();
        let cpus = self
            .cpus
            .iter()
            .enumerate()
            .map(|(c, s)| CpuResult {
                cpu: c as u32,
                busy_ns: s.busy_ns,
                idle_ns: s.idle_ns,
                avg_nr_running: if self.now == 0 {
                    0.0
                } else {
                    s.nr_running_ns as f64 / self.now as f64
                },
                nr_switches: self.rqs[c].nr_switches,
                cpuidle: self.cpuidle_stats(CpuId(c as u32)),
            })
            .collect();
        // The runqueues are not needed any more: their timelines and task lists are dropped
        // before the per-task tables are built.
        drop(std::mem::replace(
            &mut self.rqs,
            lbsim_balance::rqs::Rqs::new(Vec::new()),
        ));
        // The per-task tables, built in two passes so that the end of a run with many tasks
        // never holds the runs (320 bytes a task), the runqueue tasks (312) and the
        // observations and results (168 each) at once: the first pass keeps what the runs
        // know (and the group moves of the tasks that moved), then the runs are dropped; the
        // second builds each task's observation and result from that, its runqueue task and
        // its spec (whose strings it moves: the spec is not needed any more), then the
        // runqueue tasks are dropped.
        let mut ended: Vec<Ended> = Vec::with_capacity(self.by_ref.len() - self.not_created);
        let mut moves = Vec::new();
        // By run index, for the lookups below (a run exits once).
        self.exits.sort_unstable();
        for &ri in &self.by_ref {
            if ri == NOT_CREATED {
                continue;
            }
            let r = &mut self.runs[ri as usize];
            if let Some(m) = r.tg_moves.take() {
                moves.push((ended.len(), *m));
            }
            ended.push(Ended {
                id: r.id,
                runtime_ns: r.runtime_ns,
                work_ns: (r.work_units / 1024) as u64,
                max_wait_ns: r.max_wait_ns,
                created_ns: r.created_ns,
                exited_ns: self
                    .exits
                    .binary_search_by_key(&ri, |&(r, _)| r)
                    .ok()
                    .map(|k| self.exits[k].1),
            });
        }
        drop(std::mem::take(&mut self.runs));
        let nr_spec = self.spec.len();
        let mut forked = std::mem::take(&mut self.forked).into_iter();
        let mut moves = moves.into_iter().peekable();
        let mut ended = ended.into_iter().enumerate();
        let mut observations = Vec::with_capacity(self.by_ref.len());
        let mut tasks = Vec::with_capacity(self.by_ref.len() - self.not_created);
        let mut migrations = 0;
        let mut switches = 0;
        for (i, &ri) in self.by_ref.iter().enumerate() {
            let mut o = if i < nr_spec {
                let (name, part, group) = self.spec.take_report(i);
                TaskObservation::not_created_named(name, part, group)
            } else {
                forked.next().expect("one observation per forked task")
            };
            if ri == NOT_CREATED {
                observations.push(o);
                continue;
            }
            let (k, e) = ended.next().expect("one entry per created task");
            let t = &mut self.tasks[e.id];
            // Moved out: the runqueue tasks are dropped below.
            let name = std::mem::take(&mut t.name).into_string();
            if i < nr_spec {
                // Its name went to its runqueue task at its creation (a copy into the empty
                // string: `clone()`, cheaper than `clone_from()` there).
                o.name = name.clone();
            }
            o.created_ns = Some(e.created_ns);
            o.exited_ns = e.exited_ns;
            o.runtime_ns = e.runtime_ns;
            o.work_ns = e.work_ns;
            o.wait_ns = t.sched_info.run_delay;
            o.max_wait_ns = e.max_wait_ns;
            // A task still queued, not running (sched_info's `last_queued` set): its wait so
            // far is the run's last delay, as `perf sched latency` counts it.
            o.final_wait_ns = t
                .sched_info
                .last_queued
                .map_or(0, |q| self.now.saturating_sub(q));
            o.nr_waits = t.sched_info.pcount + u64::from(t.sched_info.last_queued.is_some());
            o.nr_voluntary_switches = t.nvcsw;
            o.nr_involuntary_switches = t.nivcsw;
            o.nr_migrations = t.se.nr_migrations;
            o.last_cpu = Some(t.cpu.0);
            migrations += t.se.nr_migrations;
            switches += t.nvcsw + t.nivcsw;
            let tg = t.tg;
            // A moved task's stints: each group it left (with the runtime and time at the
            // move), then its group now.
            let mut task_group_stints = Vec::new();
            if let Some((_, tg_moves)) = moves.next_if(|&(m, _)| m == k) {
                let tree = self.tg_tree.as_ref().expect("moves need task groups");
                let (mut from_ns, mut ran) = (e.created_ns, 0);
                let ends = tg_moves
                    .iter()
                    .copied()
                    .chain([(tg, e.runtime_ns, self.now)]);
                for (tg, runtime_ns, at) in ends {
                    task_group_stints.push(crate::result::TaskGroupStint {
                        cgroup: tree.paths[tg as usize].clone(),
                        from_ns,
                        runtime_ns: runtime_ns - ran,
                    });
                    (from_ns, ran) = (at, runtime_ns);
                }
            }
            tasks.push(TaskResult {
                name,
                group: std::sync::Arc::clone(&o.group),
                cpu: t.cpu.0,
                runtime_ns: e.runtime_ns,
                work_ns: e.work_ns,
                wait_ns: t.sched_info.run_delay,
                nr_migrations: t.se.nr_migrations,
                nr_switches: t.nvcsw + t.nivcsw,
                cgroup: self
                    .tg_tree
                    .as_ref()
                    .filter(|tree| tg != 0 && tree.autogroup[tg as usize].is_none())
                    .map(|tree| tree.paths[tg as usize].clone()),
                autogroup: self
                    .tg_tree
                    .as_ref()
                    .filter(|tree| tree.autogroup[tg as usize].is_some())
                    .map(|tree| tree.paths[tg as usize].clone()),
                task_group_stints,
            });
            observations.push(o);
        }
        self.obs.tasks = observations;
        drop(std::mem::take(&mut self.tasks));
        self.obs.sim_time_ns = self.now;
        // Fairness compares tasks that do the same thing: the largest group (a benchmark's
        // workers, not its main thread).
        let main_group = lbsim_workload::report::largest_group(tasks.iter().map(|t| &*t.group));
        let shares: Vec<u64> = tasks
            .iter()
            .filter(|t| Some(&*t.group) == main_group)
            .map(|t| t.work_ns)
            .collect();
        let mut groups: Vec<GroupFairness> = Vec::new();
        let mut labels: Vec<&str> = tasks.iter().map(|t| &*t.group).collect();
        labels.sort_unstable();
        labels.dedup();
        for g in labels {
            let s: Vec<u64> = tasks
                .iter()
                .filter(|t| &*t.group == g)
                .map(|t| t.work_ns)
                .collect();
            let f = fairness(&s);
            groups.push(GroupFairness {
                group: g.to_owned(),
                tasks: s.len(),
                min_max_ratio: f.min_max_ratio,
                jain: f.jain,
            });
        }
        let mut task_groups: Vec<TaskGroupShare> = Vec::new();
        // A task's group as task_group_path() names it: its cgroup, or its autogroup.
        let tg_path = |t: &TaskResult| -> String {
            t.cgroup
                .clone()
                .or_else(|| t.autogroup.clone())
                .unwrap_or_else(|| "/".to_owned())
        };
        if tasks
            .iter()
            .any(|t| t.cgroup.is_some() || t.autogroup.is_some() || !t.task_group_stints.is_empty())
        {
            let total: u64 = tasks.iter().map(|t| t.runtime_ns).sum();
            // (group, task, runtime there): a task's one group, or each of its stints.
            let mut parts: Vec<(String, usize, u64)> = Vec::new();
            for (i, t) in tasks.iter().enumerate() {
                if t.task_group_stints.is_empty() {
                    parts.push((tg_path(t), i, t.runtime_ns));
                } else {
                    for s in &t.task_group_stints {
                        parts.push((s.cgroup.clone(), i, s.runtime_ns));
                    }
                }
            }
            let mut paths: Vec<&str> = parts.iter().map(|(p, _, _)| p.as_str()).collect();
            paths.sort_unstable();
            paths.dedup();
            for p in paths {
                let mut members: Vec<usize> = Vec::new();
                let mut runtime_ns = 0;
                for (_, i, ns) in parts.iter().filter(|(q, _, _)| q == p) {
                    runtime_ns += ns;
                    members.push(*i);
                }
                // Parts are in task order: a task's stints in one group are adjacent.
                members.dedup();
                task_groups.push(TaskGroupShare {
                    cgroup: p.to_owned(),
                    tasks: members.len(),
                    runtime_ns,
                    share: if total == 0 {
                        0.0
                    } else {
                        runtime_ns as f64 / total as f64
                    },
                });
            }
        }
        let jiffies = self.now / self.tick_nsec;
        let cpu_stats: Vec<CpuSchedstat> = self
            .cpus
            .iter()
            .map(|c| CpuSchedstat {
                rq_cpu_time: c.busy_ns,
                ..c.stat
            })
            .collect();
        let schedstat_counters = self.balancer.schedstat_mut().map(|ss| {
            ss.cpus.clone_from_slice(&cpu_stats);
            (ss.clone(), jiffies)
        });
        RunResult {
            // Formatted by a front end that shows it (`Schedstat::format_version`): at 4096
            // CPUs the text is megabytes and took a fifth of a short run's time.
            schedstat: None,
            schedstat_counters,
            checks,
            sim_time_ns: self.now,
            migrations,
            context_switches: switches,
            idle_while_overloaded_ns: self.iwo_ns,
            // The wake-up latencies are those of the run's wake-up log (the same samples: the
            // log keeps each wake-up's latency, so they are not kept twice during the run).
            wakeup_latency: Samples::of(self.obs.wakeups.iter().map(|w| w.latency_ns))
                .percentiles(),
            fairness: fairness(&shares),
            groups,
            task_groups,
            tasks,
            cpus,
            observations: {
                // The logs are complete: the room left in their last blocks goes back.
                self.obs.probes.shrink_to_fit();
                self.obs.wakeups.shrink_to_fit();
                self.obs
            },
            events: 0,
            event_hash: 0,
            trace: self.trace.filter(|_| self.trace_keep),
            cpu_series: self.series.map(|s| s.series),
        }
    }
}
