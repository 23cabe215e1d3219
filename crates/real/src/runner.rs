//! The run: one scoped OS thread per task, a start gate, the programs' actions performed for
//! real, the stop at the run's end, and the per-thread counters gathered.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};
use std::thread::Scope;

use lbsim_workload::{
    Action, ProbeRecord, ProbeTag, RunObservations, SyncState, TaskObservation, TaskRef, TaskSpec,
    WorkloadSpec,
};
use rand_pcg::Pcg64Mcg;

use crate::objects::{Objects, Token};
use crate::proc::{self, Counters};
use crate::schedstat::{Availability, SchedstatError, Snapshot};
use crate::{RealError, sys};

/// How to run.
#[derive(Clone, Copy, Debug)]
pub struct RunOptions {
    /// How long the run lasts, ns, from the moment every initial thread is ready; a workload
    /// whose tasks all exit earlier ends then.
    pub duration_ns: u64,
    /// Seeds the tasks' random streams (rt-app's jitter).
    pub seed: u64,
}

/// What a real run observed.
#[derive(Clone, Debug)]
pub struct RealRun {
    /// Per task and probe, as the engine fills them (`wakeups` stays empty: the kernel's own
    /// wake-up latencies are not read).
    pub observations: RunObservations,
    /// What this kernel did not show, one line each.
    pub lacks: Vec<String>,
    /// The whole machine's busy and total CPU time during the run, ns (`/proc/stat`, from
    /// the start gate to the stop): with the tasks' runtime it tells how much other work
    /// (other processes, the hypervisor's steal) shared the CPUs.
    pub machine_cpu_ns: Option<(u64, u64)>,
    /// What `/proc/schedstat` counted during the run (the after snapshot less the before,
    /// read beside `machine_cpu_ns`), per CPU and per domain; `None` where the file is
    /// absent, does not parse or its counters stand still (`sched_schedstats` off), each
    /// said in `lacks`.
    pub schedstat: Option<crate::schedstat::Snapshot>,
}

/// Everything the threads share.
struct Shared<'a> {
    spec: &'a WorkloadSpec,
    opts: RunOptions,
    /// The interpreter's shared state (tickets, stamps, shared timers, fork numbers).
    model: Mutex<SyncState>,
    objects: Objects,
    tokens: RwLock<Vec<&'a Token>>,
    /// This process's CPUs: the affinity of a task without `cpus`.
    all_cpus: Vec<u32>,
    stop: AtomicBool,
    /// 0 until every initial thread is ready, then 1.
    gate: AtomicU32,
    t0_ns: AtomicU64,
    ready: AtomicU32,
    alive: AtomicU32,
    next_task: AtomicU32,
    records: Mutex<Vec<Option<TaskObservation>>>,
    probes: Mutex<Vec<ProbeRecord>>,
    errors: Mutex<Vec<RealError>>,
    lacks: Mutex<BTreeSet<String>>,
}

impl Shared<'_> {
    fn now_ns(&self) -> u64 {
        sys::monotonic_ns().saturating_sub(self.t0_ns.load(Ordering::Acquire))
    }

    fn end_abs_ns(&self) -> u64 {
        self.t0_ns.load(Ordering::Acquire) + self.opts.duration_ns
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn fail(&self, e: RealError) {
        self.errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(e);
    }

    fn token(&self, t: TaskRef) -> Option<&Token> {
        let tokens = self.tokens.read().unwrap_or_else(|e| e.into_inner());
        tokens.get(t.index()).copied()
    }
}

/// Runs `spec` for real.
///
/// # Errors
/// An unsupported event or CPU (before anything starts), a failed system call, a failed fork.
pub fn run(spec: &WorkloadSpec, opts: RunOptions) -> Result<RealRun, RealError> {
    let all_cpus = sys::affinity().map_err(|source| RealError::Sys {
        task: "(runner)".into(),
        what: "sched_getaffinity".into(),
        source,
    })?;
    crate::check::check_spec(spec, &all_cpus)?;
    let objects = Objects::new(&spec.sync).map_err(|source| RealError::Sys {
        task: "(runner)".into(),
        what: "pipe".into(),
        source,
    })?;
    // Tokens for every task the run may have: the initial ones and rt-app's fork limit of each
    // template.
    let max_tasks =
        spec.tasks.len() + spec.templates.len() * lbsim_workload::spec::FORKS_LIMIT as usize;
    let token_store: Vec<Token> = (0..max_tasks).map(|_| Token::default()).collect();
    let n_initial = spec.tasks.len() as u32;
    let sh = Shared {
        spec,
        opts,
        model: Mutex::new(spec.new_sync_state()),
        objects,
        tokens: RwLock::new(token_store.iter().collect()),
        all_cpus,
        stop: AtomicBool::new(false),
        gate: AtomicU32::new(0),
        t0_ns: AtomicU64::new(0),
        ready: AtomicU32::new(0),
        alive: AtomicU32::new(0),
        next_task: AtomicU32::new(n_initial),
        records: Mutex::new(vec![None; spec.tasks.len()]),
        probes: Mutex::new(Vec::new()),
        errors: Mutex::new(Vec::new()),
        lacks: Mutex::new(BTreeSet::new()),
    };
    let (mut machine_before, mut machine_after) = (None, None);
    let (mut schedstat_before, mut schedstat_after) = (None, None);
    std::thread::scope(|s| {
        for (i, t) in spec.tasks.iter().enumerate() {
            spawn(s, &sh, TaskRef(i as u32), t.clone(), true);
        }
        while sh.ready.load(Ordering::Acquire) < n_initial {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        machine_before = crate::machine_cpu_ns();
        schedstat_before = Some(crate::schedstat::read());
        sh.t0_ns.store(sys::monotonic_ns(), Ordering::Release);
        sh.gate.store(1, Ordering::Release);
        sys::futex_wake(&sh.gate, u32::MAX);
        let end = sh.end_abs_ns();
        loop {
            let now = sys::monotonic_ns();
            if now >= end || sh.alive.load(Ordering::Acquire) == 0 {
                break;
            }
            sys::sleep_until_ns(end.min(now + 10_000_000));
        }
        sh.stop.store(true, Ordering::SeqCst);
        machine_after = crate::machine_cpu_ns();
        schedstat_after = Some(crate::schedstat::read());
        let give_up = sys::monotonic_ns() + 5_000_000_000;
        while sh.alive.load(Ordering::Acquire) > 0 {
            let tokens: Vec<&Token> = sh.tokens.read().unwrap_or_else(|e| e.into_inner()).clone();
            sh.objects.release(&tokens);
            if sys::monotonic_ns() > give_up {
                // A bug in the release protocol: the scope would wait for them forever, so
                // the process ends with the one-line error lbsim's errors take.
                eprintln!(
                    "lbsim: error: {} threads of the real run did not stop within 5 s of its end",
                    sh.alive.load(Ordering::Acquire)
                );
                std::process::exit(2);
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    });
    let sim_time_ns = sh.now_ns().min(opts.duration_ns);
    let schedstat = schedstat_delta(
        schedstat_before,
        schedstat_after,
        &mut sh.lacks.lock().unwrap_or_else(|e| e.into_inner()),
    );
    let errors = std::mem::take(&mut *sh.errors.lock().unwrap_or_else(|e| e.into_inner()));
    if let Some(e) = errors.into_iter().next() {
        return Err(e);
    }
    let records = std::mem::take(&mut *sh.records.lock().unwrap_or_else(|e| e.into_inner()));
    let tasks = records
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            r.unwrap_or_else(|| {
                TaskObservation::not_created(spec.tasks.get(i).unwrap_or(&spec.tasks[0]))
            })
        })
        .collect();
    let mut probes = std::mem::take(&mut *sh.probes.lock().unwrap_or_else(|e| e.into_inner()));
    probes.sort_by_key(|p| (p.time_ns, p.task));
    Ok(RealRun {
        observations: RunObservations {
            sim_time_ns,
            tasks,
            probes: probes.into(),
            wakeups: Default::default(),
        },
        machine_cpu_ns: machine_before
            .zip(machine_after)
            .map(|((b0, t0), (b1, t1))| (b1.saturating_sub(b0), t1.saturating_sub(t0))),
        lacks: std::mem::take(&mut *sh.lacks.lock().unwrap_or_else(|e| e.into_inner()))
            .into_iter()
            .collect(),
        schedstat,
    })
}

/// The thread's name: the task's, cut to the 15 bytes `pthread_setname_np()` takes.
fn thread_name(name: &str) -> String {
    let mut end = name.len().min(15);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_owned()
}

fn spawn<'scope, 'env>(
    s: &'scope Scope<'scope, 'env>,
    sh: &'scope Shared<'env>,
    task: TaskRef,
    spec: TaskSpec,
    initial: bool,
) {
    sh.alive.fetch_add(1, Ordering::AcqRel);
    // std names the thread with pthread_setname_np().
    let b = std::thread::Builder::new().name(thread_name(&spec.name));
    let name = spec.name.clone();
    let r = b.spawn_scoped(s, move || {
        task_thread(s, sh, task, &spec, initial);
        sh.alive.fetch_sub(1, Ordering::AcqRel);
    });
    if let Err(source) = r {
        sh.alive.fetch_sub(1, Ordering::AcqRel);
        if initial {
            sh.ready.fetch_add(1, Ordering::AcqRel);
        }
        sh.fail(RealError::Sys {
            task: name,
            what: "pthread_create".into(),
            source,
        });
    }
}

fn sys_err(task: &TaskSpec, what: &str, source: std::io::Error) -> RealError {
    RealError::Sys {
        task: task.name.clone(),
        what: what.to_owned(),
        source,
    }
}

fn set_affinity(
    sh: &Shared<'_>,
    t: &TaskSpec,
    set: Option<lbsim_workload::CpusetId>,
) -> Result<(), RealError> {
    let cpus = set.map_or(sh.all_cpus.as_slice(), |c| sh.spec.cpuset(c));
    sys::set_affinity(cpus).map_err(|e| sys_err(t, "sched_setaffinity", e))
}

fn task_thread<'scope, 'env>(
    s: &'scope Scope<'scope, 'env>,
    sh: &'scope Shared<'env>,
    task: TaskRef,
    t: &TaskSpec,
    initial: bool,
) {
    let setup = set_affinity(sh, t, t.affinity)
        .and_then(|()| sys::set_sched(t.policy, t.nice).map_err(|e| sys_err(t, "setpriority", e)));
    if let Err(e) = setup {
        sh.fail(e);
        sh.stop.store(true, Ordering::SeqCst);
        if initial {
            sh.ready.fetch_add(1, Ordering::AcqRel);
        }
        return;
    }
    let tid = sys::gettid();
    let mut lacks = BTreeSet::new();
    let before = proc::read(tid, &mut lacks);
    if initial {
        sh.ready.fetch_add(1, Ordering::AcqRel);
        while sh.gate.load(Ordering::Acquire) == 0 {
            sys::futex_wait(&sh.gate, 0);
        }
        if t.start_ns > 0 {
            sys::sleep_until_ns(
                sh.end_abs_ns()
                    .min(sh.t0_ns.load(Ordering::Acquire) + t.start_ns),
            );
        }
    }
    let created_ns = sh.now_ns();
    let mut state = t.start(task);
    let mut rng = Pcg64Mcg::new((u128::from(sh.opts.seed) << 64 | u128::from(task.0)) | 1);
    let mut probes = Vec::new();
    let mut exited = false;
    while !sh.stopped() {
        let now = sh.now_ns();
        let action = {
            let mut m = sh.model.lock().unwrap_or_else(|e| e.into_inner());
            state.next_action(now, &mut rng, &mut m)
        };
        if let Err(e) = perform(s, sh, task, t, &action, &mut probes) {
            sh.fail(e);
            sh.stop.store(true, Ordering::SeqCst);
            break;
        }
        if action == Action::Exit {
            exited = true;
            break;
        }
    }
    let end_ns = sh.now_ns();
    if let Some((count, max)) = state.take_tally() {
        probes.push((end_ns, ProbeTag::TallyCount, count));
        probes.push((end_ns, ProbeTag::TallyMaxLatency, max));
    }
    let after = proc::read(tid, &mut lacks);
    let obs = observation(t, created_ns, exited.then_some(end_ns), &before, &after);
    {
        let mut r = sh.records.lock().unwrap_or_else(|e| e.into_inner());
        if r.len() <= task.index() {
            r.resize(task.index() + 1, None);
        }
        r[task.index()] = Some(obs);
    }
    sh.probes
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .extend(probes.into_iter().map(|(time_ns, tag, value)| ProbeRecord {
            task,
            time_ns,
            tag,
            value,
        }));
    sh.lacks
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .extend(lacks);
}

/// The counters' growth between `a` and `b`.
fn delta(a: Option<u64>, b: Option<u64>) -> u64 {
    b.unwrap_or(0).saturating_sub(a.unwrap_or(0))
}

fn observation(
    t: &TaskSpec,
    created_ns: u64,
    exited_ns: Option<u64>,
    a: &Counters,
    b: &Counters,
) -> TaskObservation {
    let runtime_ns = delta(a.sum_exec_runtime_ns, b.sum_exec_runtime_ns);
    TaskObservation {
        exited_ns,
        runtime_ns,
        // Work at capacity 1024: the host's CPUs are taken as full capacity.
        work_ns: runtime_ns,
        wait_ns: delta(a.wait_ns, b.wait_ns),
        max_wait_ns: b.wait_max_ns.unwrap_or(0),
        nr_waits: delta(a.nr_waits, b.nr_waits),
        nr_voluntary_switches: delta(a.nr_voluntary_switches, b.nr_voluntary_switches),
        nr_involuntary_switches: delta(a.nr_involuntary_switches, b.nr_involuntary_switches),
        nr_migrations: delta(a.nr_migrations, b.nr_migrations),
        last_cpu: sys::current_cpu(),
        ..TaskObservation::new(t, created_ns)
    }
}

/// Spins until `done()`, or the run stops.
fn spin(sh: &Shared<'_>, done: impl Fn() -> bool) {
    while !done() && !sh.stopped() {
        std::hint::spin_loop();
    }
}

/// Spins until the thread's CPU time has grown by `work_ns`, or the run stops. Reading
/// `CLOCK_THREAD_CPUTIME_ID` is a system call, so between two reads the loop spins in user
/// space for about a thousandth of what remains (at most a few tens of microseconds): the
/// work is mostly user time, as a real spinner's is, and overshoots by little.
fn spin_cpu(sh: &Shared<'_>, work_ns: u64) {
    let until = sys::thread_cpu_ns() + work_ns;
    loop {
        let now = sys::thread_cpu_ns();
        if now >= until || sh.stopped() {
            return;
        }
        for _ in 0..((until - now) / 1000).clamp(1, 1024) {
            std::hint::spin_loop();
        }
    }
}

/// Performs one action of `task`'s program.
fn perform<'scope, 'env>(
    s: &'scope Scope<'scope, 'env>,
    sh: &'scope Shared<'env>,
    task: TaskRef,
    t: &TaskSpec,
    action: &Action,
    probes: &mut Vec<(u64, ProbeTag, u64)>,
) -> Result<(), RealError> {
    let stop = &sh.stop;
    let o = &sh.objects;
    match *action {
        Action::Run { work_ns } => spin_cpu(sh, work_ns),
        Action::RunWall { ns } => {
            let until = sys::monotonic_ns() + ns;
            spin(sh, || sys::monotonic_ns() >= until);
        }
        Action::Sleep { ns } => {
            sys::sleep_until_ns(sh.end_abs_ns().min(sys::monotonic_ns() + ns));
        }
        Action::SleepUntil { abs_ns } => {
            let t0 = sh.t0_ns.load(Ordering::Acquire);
            sys::sleep_until_ns(sh.end_abs_ns().min(t0 + abs_ns));
        }
        Action::Yield => std::thread::yield_now(),
        Action::Lock(m) => o.mutexes[m.index()].lock(stop),
        Action::Unlock(m) => o.mutexes[m.index()].unlock(),
        Action::Wait { cond, mutex } => o.conds[cond.index()].wait(&o.mutexes[mutex.index()], stop),
        Action::Signal(c) => o.conds[c.index()].wake(false),
        Action::Broadcast(c) => o.conds[c.index()].wake(true),
        Action::Barrier(b) => o.barriers[b.index()].arrive(stop),
        Action::SemWait(x) => o.sems[x.index()].wait(stop),
        Action::SemPost(x) | Action::SemPostSync(x) => o.sems[x.index()].post(),
        Action::Suspend => {
            if let Some(tok) = sh.token(task) {
                tok.suspend(stop);
            }
        }
        Action::Resume(other) => {
            if let Some(tok) = sh.token(other) {
                tok.resume();
            }
        }
        Action::Send { chan, msgs } => {
            if let Some(p) = &o.chans[chan.index()] {
                p.send(msgs).map_err(|e| sys_err(t, "write", e))?;
            }
        }
        Action::Recv { chan } => {
            if let Some(p) = &o.chans[chan.index()] {
                p.recv().map_err(|e| sys_err(t, "read", e))?;
            }
        }
        Action::Fork(tpl) => {
            let new = TaskRef(sh.next_task.fetch_add(1, Ordering::AcqRel));
            let child = {
                let mut m = sh.model.lock().unwrap_or_else(|e| e.into_inner());
                sh.spec.fork_task(tpl, &mut m, new)?
            };
            spawn(s, sh, new, child, false);
        }
        Action::Probe { tag, value } => probes.push((sh.now_ns(), tag, value)),
        Action::SetAffinity(set) => set_affinity(sh, t, set)?,
        Action::SetSched(a) => {
            sys::set_sched(a.policy, a.nice).map_err(|e| sys_err(t, "setpriority", e))?;
        }
        // Refused before the run (check.rs); `Exit` ends the thread in the caller.
        _ => {}
    }
    Ok(())
}

/// The run's `/proc/schedstat` counters from the reads before and after it, adding to `lacks`
/// why there are none.
fn schedstat_delta(
    before: Option<Result<Availability, SchedstatError>>,
    after: Option<Result<Availability, SchedstatError>>,
    lacks: &mut BTreeSet<String>,
) -> Option<Snapshot> {
    let mut note = |s: String| {
        lacks.insert(s);
    };
    match (before?, after?) {
        (Ok(Availability::Counting(b)), Ok(Availability::Counting(a))) => match a.delta(&b) {
            Ok(d) => Some(d),
            Err(e) => {
                note(format!("this run's balancer counters: {e}"));
                None
            }
        },
        (Ok(Availability::Absent), _) | (_, Ok(Availability::Absent)) => {
            note(
                "no /proc/schedstat (CONFIG_SCHEDSTATS off): no balancer counters (lb_*, alb_*, ttwu_*)"
                    .to_owned(),
            );
            None
        }
        (Ok(Availability::Off), _) | (_, Ok(Availability::Off)) => {
            note(
                "sched_schedstats off (/proc/sys/kernel/sched_schedstats): /proc/schedstat's counters stand still"
                    .to_owned(),
            );
            None
        }
        (Err(e), _) | (_, Err(e)) => {
            note(format!("a /proc/schedstat lbsim reads: {e}"));
            None
        }
    }
}
