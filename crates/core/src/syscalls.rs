//! What a task's program asks of the kernel: the program (in lbsim-workload) gives the next
//! action; here each action becomes what the kernel does for it (an hrtimer sleep, a futex
//! wake or wait, `sched_yield()`, `fork()`, `sched_setaffinity()`, `exit()`).

use crate::prelude::*;

/// The most zero-time actions a task may take in a row before the run is stopped (a program
/// that never blocks nor consumes time would otherwise hang the simulation).
const MAX_ZERO_TIME_ACTIONS: u32 = 100_000;

impl<B: Balancer> Core<B> {
    /// The running task `ri` on `cpu` asks for actions until one takes time or blocks.
    ///
    /// The common case, a workload task whose next action takes time, is taken here; the
    /// others go on in [`Core::advance_loop`] (kept out of line, so that this short path
    /// does not carry the loop's set-up).
    #[inline]
    pub(crate) fn advance(&mut self, cpu: CpuId, ri: usize) {
        let now = self.now;
        let Core { runs, sync, .. } = self;
        let r = &mut runs[ri];
        if let (
            Cur::Idle | Cur::Run { .. } | Cur::RunWall { .. },
            Kind::Workload { program, rng, .. },
        ) = (&r.cur, &mut r.kind)
        {
            // As the loop's first step: the current action is over, the program gives the
            // next.
            let action = program.next_action(now, rng, sync);
            r.cur = match action {
                Action::Run { work_ns } => Cur::Run {
                    rem_units: work_ns.saturating_mul(1024),
                },
                Action::RunWall { ns } => Cur::RunWall { end_ns: now + ns },
                other => {
                    r.cur = Cur::Idle;
                    return self.advance_loop(cpu, ri, Some(other));
                }
            };
            self.arm_segment(cpu);
            return;
        }
        self.advance_loop(cpu, ri, None)
    }

    /// [`Core::advance`]'s loop: the actions of task `ri` on `cpu` until one takes time or
    /// blocks, starting with `first` if the program gave it already (as the first step; the
    /// task's state is then `Cur::Idle`, as the loop leaves it when it asks the program).
    #[inline(never)]
    fn advance_loop(&mut self, cpu: CpuId, ri: usize, mut first: Option<Action>) {
        let mut steps = 0u32;
        loop {
            steps += 1;
            if steps > MAX_ZERO_TIME_ACTIONS {
                self.error.get_or_insert(SimError::Workload(format!(
                    "task {} took {MAX_ZERO_TIME_ACTIONS} actions without consuming time",
                    self.tasks[self.runs[ri].id].name
                )));
                return;
            }
            debug_assert!(
                first.is_none() || matches!(self.runs[ri].cur, Cur::Idle),
                "advance() hands over an action with the task's state already taken"
            );
            let action = if let Some(a) = first.take() {
                a
            } else {
                match std::mem::replace(&mut self.runs[ri].cur, Cur::Idle) {
                    Cur::Blocked(a) => a,
                    waking @ Cur::Waking(_) => {
                        self.runs[ri].cur = waking;
                        if self.issue_wakes(cpu, ri) {
                            continue;
                        }
                        return;
                    }
                    _ => match &mut self.runs[ri].kind {
                        Kind::Workload { program, rng, .. } => {
                            program.next_action(self.now, rng, &mut self.sync)
                        }
                        Kind::Kworker { ran } => {
                            // A background kernel thread runs once per wake-up, then sleeps
                            // until the background source wakes it again.
                            if *ran {
                                self.block_current(cpu, ri);
                                return;
                            }
                            *ran = true;
                            Action::Run {
                                work_ns: self.cfg.engine.background_run_ns,
                            }
                        }
                    },
                }
            };
            match action {
                Action::Run { work_ns } => {
                    self.runs[ri].cur = Cur::Run {
                        rem_units: work_ns.saturating_mul(1024),
                    };
                    self.arm_segment(cpu);
                    return;
                }
                Action::RunWall { ns } => {
                    self.runs[ri].cur = Cur::RunWall {
                        end_ns: self.now + ns,
                    };
                    self.arm_segment(cpu);
                    return;
                }
                Action::Sleep { ns } => {
                    self.sleep_until(cpu, ri, self.now + ns);
                    return;
                }
                Action::SleepUntil { abs_ns } => {
                    if abs_ns <= self.now {
                        continue;
                    }
                    self.sleep_until(cpu, ri, abs_ns);
                    return;
                }
                Action::Probe { tag, value } => {
                    if let Kind::Workload { program, .. } = &self.runs[ri].kind {
                        self.obs.probes.push(ProbeRecord {
                            task: program.task(),
                            time_ns: self.now,
                            tag,
                            value,
                        });
                    }
                }
                a if a.is_sync() => {
                    let Kind::Workload { program, .. } = &self.runs[ri].kind else {
                        unreachable!("kernel threads take no sync action")
                    };
                    let wref = program.task();
                    let mut wakes = Wakes::new();
                    let outcome = self.sync.apply(wref, &a, self.now, &mut wakes);
                    let then_block = (outcome == Outcome::Blocked).then_some(a);
                    if wakes.is_empty() {
                        if let Some(a) = then_block {
                            self.runs[ri].cur = Cur::Blocked(a);
                            self.block_current(cpu, ri);
                            return;
                        }
                        continue;
                    }
                    let wakes = wakes
                        .iter()
                        .rev()
                        .map(|w| (self.by_ref[w.task.index()], w.sync))
                        // A post to a thread not created yet only sets its token.
                        .filter(|&(r, _)| r != NOT_CREATED)
                        .collect();
                    let w = self.wakings.insert(Waking { wakes, then_block });
                    self.runs[ri].cur = Cur::Waking(w);
                    if !self.issue_wakes(cpu, ri) {
                        return;
                    }
                }
                other => {
                    if self.rare_action(cpu, ri, other) {
                        return;
                    }
                }
            }
        }
    }

    /// The actions [`Core::advance_loop`] meets rarely (yield, fork, thread creation,
    /// affinity, scheduling attributes, cgroup moves, exit, and the unmodelled ones), out of
    /// its loop so that the loop's set-up stays small (what a task does between two segments
    /// of work is mostly a sync operation, a sleep or a probe). Returns whether the task's
    /// turn ends (the loop returns); otherwise the program goes on.
    #[inline(never)]
    #[cold]
    fn rare_action(&mut self, cpu: CpuId, ri: usize, action: Action) -> bool {
        // The loop takes the sync actions before it hands the others here.
        debug_assert!(!action.is_sync(), "{action:?} is a sync action");
        match action {
            Action::Yield => {
                self.cpus[cpu.index()].stat.yld_count += 1;
                self.cpus[cpu.index()].yielded = true;
                let now = self.now;
                self.rqs[cpu.index()].yield_task_fair(&mut self.tasks, now);
                self.leave_cpu(cpu);
                return true;
            }
            Action::Fork(t) => {
                let wref = self.next_forked_ref();
                match self.cfg.workload.fork_task(t, &mut self.sync, wref) {
                    Ok(spec) => {
                        let name = spec.name.clone();
                        self.create_workload_task(&spec, name, cpu, None);
                    }
                    Err(e) => {
                        self.error.get_or_insert(SimError::Workload(e.to_string()));
                        return true;
                    }
                }
            }
            Action::Spawn(r) => {
                self.spawn_task(r, cpu);
                if self.error.is_some() {
                    return true;
                }
            }
            Action::SetAffinity(set) => {
                let mask = self.affinity_mask(set);
                self.set_affinity(ri, mask);
                if !self.tasks[self.runs[ri].id].cpus_mask.test(cpu) {
                    // The task must leave this CPU: it blocks here and, once it is off it,
                    // is woken onto an allowed CPU (the kernel's caller waits in
                    // affine_move_task() while the stopper moves it; see PrevAction::Move).
                    self.runs[ri].moving = true;
                    self.block_current(cpu, ri);
                    return true;
                }
            }
            Action::SetSched(_) => {
                self.error.get_or_insert(SimError::Workload(
                    "sched_setattr/setpriority while running is not modelled (the runqueue model does not reweight a task)".to_owned(),
                ));
                return true;
            }
            Action::SetTaskGroup(path) => self.cgroup_attach_task(cpu, ri, &path),
            Action::Exit => {
                self.runs[ri].exit_pending = true;
                self.leave_cpu(cpu);
                return true;
            }
            other => {
                self.error.get_or_insert(SimError::Workload(format!(
                    "action {other:?} is not modelled by the engine"
                )));
                return true;
            }
        }
        false
    }

    /// Issues the wakes of the system call task `ri` is in ([`Cur::Waking`]), one after
    /// another: each `try_to_wake_up()` costs the waker its CPU time before the next one
    /// starts, so the k-th task woken becomes runnable after k wake costs, as the kernel's
    /// `wake_up_q()` loop does. Returns whether the program goes on now (every wake issued
    /// at no cost, and the call does not block); otherwise the rest continues when the
    /// current wake's cost has been paid (the task's segment ends then), or the task blocks.
    pub(crate) fn issue_wakes(&mut self, cpu: CpuId, ri: usize) -> bool {
        loop {
            let Cur::Waking(w) = self.runs[ri].cur else {
                unreachable!("issue_wakes outside a waking system call")
            };
            let Some((target, sync)) = self.wakings.get_mut(w).wakes.pop() else {
                let then_block = self.wakings.remove(w).then_block;
                self.runs[ri].cur = Cur::Idle;
                if let Some(a) = then_block {
                    self.runs[ri].cur = Cur::Blocked(a);
                    self.block_current(cpu, ri);
                    return false;
                }
                return true;
            };
            self.ttwu(target as usize, cpu, sync, false);
            if self.cpus[cpu.index()].busy_until > self.now {
                // The wake's cost runs until busy_until: the next wake (or the program's
                // next action) waits for it.
                self.arm_segment(cpu);
                return false;
            }
        }
    }

    /// `hrtimer_start()` + `schedule()`: task `ri` sleeps until `at`.
    pub(crate) fn sleep_until(&mut self, cpu: CpuId, ri: usize, at: u64) {
        self.arm_timer(ri, at);
        self.block_current(cpu, ri);
    }

    /// The running task `ri` blocks: the next `__schedule()` on `cpu` dequeues it.
    pub(crate) fn block_current(&mut self, cpu: CpuId, ri: usize) {
        self.runs[ri].block_pending = true;
        self.leave_cpu(cpu);
    }

    /// `cpu`'s current task stops its action and asks to be switched out (it blocks, exits
    /// or yields): `resched_curr()` on itself; the action's end is no longer an event.
    pub(crate) fn leave_cpu(&mut self, cpu: CpuId) {
        self.resched_cpu(cpu, cpu);
        self.cancel_segment(cpu);
    }

    /// (Re)arms task `ri`'s sleep timer for `at`, cancelling an earlier one.
    pub(crate) fn arm_timer(&mut self, ri: usize, at: u64) {
        self.cancel_timer(ri);
        let key = self.fx.at(at, Ev::Timer { run: ri as u32 });
        // The hrtimer is queued on the CPU the task sleeps on.
        let cpu = self.tasks[self.runs[ri].id].cpu.0;
        self.runs[ri].timer = Some((key, cpu, at));
        self.cpus[cpu as usize].timers.insert((at, ri as u32));
    }

    /// `hrtimer_cancel()` of task `ri`'s sleep timer, if one is pending.
    pub(crate) fn cancel_timer(&mut self, ri: usize) {
        if let Some((key, c, at)) = self.runs[ri].timer.take() {
            self.fx.cancel(key);
            self.cpus[c as usize].timers.remove(&(at, ri as u32));
        }
    }

    /// The running task `ri` on `cpu` writes its tid into the `tasks` file of the cgroup at
    /// `path` (rt-app's phase `taskgroup`): the cgroup core's `cgroup_attach_task()` calls the
    /// cpu controller's `cpu_cgroup_attach()`, which calls core.c: `sched_move_task()`
    /// (v6.12) with the group `sched_get_task_group()` gives (the cgroup's, or the task's
    /// autogroup if that cgroup is the root: `autogroup_task_group()`); the runqueue model
    /// does the move ([`lbsim_rq::Rq::sched_move_task`]) and asks the CPU to reschedule. The
    /// time the task ran until now is its old group's ([`TaskRun::tg_moves`]). The cgroup
    /// core's own work (css_set migration) is not modelled and costs no time.
    pub(crate) fn cgroup_attach_task(&mut self, cpu: CpuId, ri: usize, path: &str) {
        let id = self.runs[ri].id;
        let tree = self
            .tg_tree
            .as_ref()
            .expect("a run whose phases name cgroups has task groups");
        let cg = if path == "/" {
            0
        } else {
            tree.find(path)
                .expect("every phase's cgroup is in the tree")
        };
        let ag = self.runs[ri].autogroup;
        let tg = lbsim_rq::group::autogroup_task_group(
            self.cfg.tunables.sched_autogroup_enabled,
            cg,
            (ag != 0).then_some(ag),
        );
        let old = self.tasks[id].tg;
        if tg == old {
            return;
        }
        self.account_runtime(id);
        let r = &mut self.runs[ri];
        r.tg_moves
            .get_or_insert_default()
            .push((old, r.runtime_ns, self.now));
        let ci = cpu.index();
        let queued = self.tasks[id].on_rq_queued();
        let running = self.rqs[ci].curr == Some(id);
        self.rqs[ci].update_rq_clock(self.now);
        self.rqs[ci].sched_move_task(&mut self.tasks, id, tg);
        self.checker.counts.tg_moves_running += u64::from(running);
        self.checker.counts.tg_moves_queued += u64::from(queued && !running);
        let now = self.now;
        self.trace_task(now, cpu, id, |pid| crate::trace::TraceEvent::CgroupAttach {
            pid,
            cgroup: cg,
            tg,
        });
        if self.rqs[ci].need_resched() {
            self.resched_cpu(cpu, cpu);
        }
    }

    pub(crate) fn set_affinity(&mut self, ri: usize, mask: Arc<Cpumask>) {
        let id = self.runs[ri].id;
        let max_cap = self.max_allowed_capacity(&mask);
        let t = &mut self.tasks[id];
        // The idle-while-overloaded summary keeps the waiting tasks' affinities per CPU.
        self.iwo.mark(t.cpu);
        t.nr_cpus_allowed = mask.weight() as u32;
        t.cpus_mask = mask;
        t.max_allowed_capacity = max_cap;
    }

    /// The largest capacity among the CPUs of `mask` (`p->max_allowed_capacity` as
    /// set_task_max_allowed_capacity() computes it); no CPU has more than the machine's
    /// largest, so the scan stops there (at once for a full mask of a uniform machine).
    pub(crate) fn max_allowed_capacity(&self, mask: &Cpumask) -> u64 {
        let machine = self.cfg.topology.machine();
        let mut max_cap = None;
        for c in mask.iter() {
            let cap = u64::from(machine.capacity(c));
            max_cap = Some(max_cap.map_or(cap, |m: u64| m.max(cap)));
            if cap == self.max_cpu_capacity {
                break;
            }
        }
        max_cap.unwrap_or(1024)
    }
}
