//! Crate-level tests: a tiny single-CPU reference executor runs generated programs and checks
//! their bookkeeping; sync objects and the interpreter are checked against their semantics.

use std::collections::VecDeque;

use rand_core::SeedableRng;
use rand_pcg::Pcg64Mcg;

use super::*;

/// How the reference executor shares its one CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Share {
    /// A task runs until it blocks, sleeps, yields or exits.
    RunToBlock,
    /// After every `Run`/`RunWall` the task goes to the back of the queue.
    RoundRobin,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Status {
    Runnable,
    Blocked(Action),
    Sleeping(u64),
    Exited,
    /// A spawned task before its spawn.
    NotCreated,
}

struct Task {
    state: ProgramState,
    rng: Pcg64Mcg,
    status: Status,
    /// A woken blocked task re-applies this when it runs.
    retry: Option<Action>,
}

/// Runs a workload on one CPU of capacity 1024 with no scheduler costs: actions in order,
/// sync objects resolved by [`SyncState`], forks created, probes recorded. Enough to check that
/// programs and sync objects do their bookkeeping exactly.
pub(crate) struct RefExec {
    pub(crate) spec: WorkloadSpec,
    pub(crate) sync: SyncState,
    tasks: Vec<Task>,
    queue: VecDeque<usize>,
    pub(crate) now: u64,
    pub(crate) obs: RunObservations,
    share: Share,
    /// Completed `apply` calls per task and action kind name.
    pub(crate) done_suspends: Vec<u64>,
    actions: u64,
}

impl RefExec {
    pub(crate) fn new(spec: WorkloadSpec, share: Share) -> RefExec {
        let sync = spec.new_sync_state();
        let mut ex = RefExec {
            spec,
            sync,
            tasks: Vec::new(),
            queue: VecDeque::new(),
            now: 0,
            obs: RunObservations::default(),
            share,
            done_suspends: Vec::new(),
            actions: 0,
        };
        for i in 0..ex.spec.tasks.len() {
            let ts = ex.spec.tasks[i].clone();
            ex.create(ts);
        }
        ex
    }

    fn create(&mut self, ts: TaskSpec) {
        let i = self.tasks.len();
        let r = TaskRef(i as u32);
        let status = if ts.spawned {
            Status::NotCreated
        } else if ts.start_ns > self.now {
            Status::Sleeping(ts.start_ns)
        } else {
            self.queue.push_back(i);
            Status::Runnable
        };
        self.tasks.push(Task {
            state: ts.start(r),
            rng: Pcg64Mcg::seed_from_u64(0x5eed ^ i as u64),
            status,
            retry: None,
        });
        self.obs.tasks.push(if ts.spawned {
            TaskObservation::not_created(&ts)
        } else {
            TaskObservation::new(&ts, self.now)
        });
        self.done_suspends.push(0);
    }

    fn wake(&mut self, t: TaskRef) {
        let i = t.index();
        if let Status::Blocked(a) = &self.tasks[i].status {
            self.tasks[i].retry = Some(a.clone());
            self.tasks[i].status = Status::Runnable;
            self.queue.push_back(i);
        }
    }

    fn advance(&mut self, i: usize, ns: u64) {
        self.now += ns;
        self.obs.tasks[i].runtime_ns += ns;
        self.obs.tasks[i].work_ns += ns;
    }

    /// Runs until every task exited, nothing can run (deadlock or all blocked), or `limit`.
    pub(crate) fn run(&mut self, limit: u64) {
        loop {
            if self.now >= limit {
                break;
            }
            let Some(i) = self.queue.pop_front() else {
                // Nothing runnable: jump to the earliest sleeper.
                let next = self
                    .tasks
                    .iter()
                    .enumerate()
                    .filter_map(|(i, t)| match t.status {
                        Status::Sleeping(at) => Some((at, i)),
                        _ => None,
                    })
                    .min();
                match next {
                    Some((at, i)) => {
                        self.now = self.now.max(at);
                        self.tasks[i].status = Status::Runnable;
                        self.queue.push_back(i);
                        continue;
                    }
                    None => break,
                }
            };
            self.run_task(i, limit);
        }
        self.obs.sim_time_ns = self.now;
    }

    fn run_task(&mut self, i: usize, limit: u64) {
        let r = TaskRef(i as u32);
        loop {
            if self.now >= limit {
                self.queue.push_front(i);
                return;
            }
            self.actions += 1;
            assert!(self.actions < 50_000_000, "reference executor runaway");
            let action = match self.tasks[i].retry.take() {
                Some(a) => a,
                None => {
                    let t = &mut self.tasks[i];
                    t.state.next_action(self.now, &mut t.rng, &mut self.sync)
                }
            };
            match action {
                Action::Run { work_ns } => {
                    self.advance(i, work_ns);
                    if self.share == Share::RoundRobin {
                        self.queue.push_back(i);
                        return;
                    }
                }
                Action::RunWall { ns } => {
                    self.advance(i, ns);
                    if self.share == Share::RoundRobin {
                        self.queue.push_back(i);
                        return;
                    }
                }
                Action::Sleep { ns } => {
                    self.tasks[i].status = Status::Sleeping(self.now + ns);
                    return;
                }
                Action::SleepUntil { abs_ns } => {
                    if abs_ns > self.now {
                        self.tasks[i].status = Status::Sleeping(abs_ns);
                        return;
                    }
                }
                Action::Yield => {
                    self.queue.push_back(i);
                    return;
                }
                Action::Fork(t) => {
                    let ts = self
                        .spec
                        .fork_task(t, &mut self.sync, TaskRef(self.tasks.len() as u32))
                        .expect("fork");
                    self.create(ts);
                }
                Action::Spawn(t) => {
                    let j = t.index();
                    assert_eq!(self.tasks[j].status, Status::NotCreated, "spawned twice");
                    self.tasks[j].status = Status::Runnable;
                    self.obs.tasks[j] = TaskObservation::new(&self.spec.tasks[j], self.now);
                    self.queue.push_back(j);
                }
                Action::Probe { tag, value } => self.obs.probes.push(ProbeRecord {
                    task: r,
                    time_ns: self.now,
                    tag,
                    value,
                }),
                Action::SetAffinity(_) | Action::SetSched(_) | Action::SetTaskGroup(_) => {}
                Action::Exit => {
                    self.tasks[i].status = Status::Exited;
                    self.obs.tasks[i].exited_ns = Some(self.now);
                    return;
                }
                a if a.is_sync() => {
                    let mut wakes = Wakes::new();
                    let out = self.sync.apply(r, &a, self.now, &mut wakes);
                    for w in wakes {
                        self.wake(w.task);
                    }
                    match out {
                        Outcome::Done => {
                            if a == Action::Suspend {
                                self.done_suspends[i] += 1;
                            }
                        }
                        Outcome::Blocked => {
                            self.tasks[i].status = Status::Blocked(a);
                            return;
                        }
                    }
                }
                other => panic!("unhandled action {other:?}"),
            }
        }
    }

    pub(crate) fn probes(&self, tag: ProbeTag) -> impl Iterator<Item = ProbeRecord> {
        self.obs.probes.iter().filter(move |p| p.tag == tag)
    }

    pub(crate) fn all_exited(&self) -> bool {
        self.tasks.iter().all(|t| t.status == Status::Exited)
    }
}

fn spec(arg: &str) -> WorkloadSpec {
    parse_workload(arg).unwrap_or_else(|e| panic!("{arg}: {e}"))
}

// ---------------------------------------------------------------------------------------
// Generators: exact bookkeeping.

#[test]
fn sysbench_completes_exactly_the_requested_requests() {
    for share in [Share::RunToBlock, Share::RoundRobin] {
        for (threads, requests) in [(1, 7), (8, 1000), (3, 10)] {
            let s = spec(&format!(
                "sysbench-cpu:threads={threads},requests={requests},cost=1ms,jitter=20"
            ));
            let mut ex = RefExec::new(s, share);
            ex.run(u64::MAX);
            assert!(ex.all_exited(), "{share:?} {threads}x{requests}");
            assert_eq!(ex.probes(ProbeTag::Request).count() as u64, requests);
            assert_eq!(ex.sync.claimed(CounterId(0)), requests);
            // Jitter stays within 20% of 1 ms, and is really drawn (not all equal).
            let lats: Vec<u64> = ex.probes(ProbeTag::Request).map(|p| p.value).collect();
            if share == Share::RunToBlock {
                assert!(lats.iter().all(|&l| (800_000..=1_200_000).contains(&l)));
                if requests > 2 {
                    assert!(lats.iter().any(|&l| l != lats[0]));
                }
            }
        }
    }
}

#[test]
fn sysbench_time_limit_stops_claims() {
    let s = spec("sysbench-cpu:threads=2,time=10ms,cost=1ms");
    let mut ex = RefExec::new(s, Share::RoundRobin);
    ex.run(u64::MAX);
    assert!(ex.all_exited());
    // One CPU: requests end back to back; a claim at or after 10 ms is refused.
    assert_eq!(ex.probes(ProbeTag::Request).count(), 10);
}

#[test]
fn hackbench_delivers_groups_fds_fds_loops_messages() {
    for ipc in ["socket", "pipe"] {
        for datasize in [100, 20_000] {
            for share in [Share::RunToBlock, Share::RoundRobin] {
                let arg =
                    format!("hackbench:groups=2,fds=3,loops=40,ipc={ipc},datasize={datasize}");
                let s = spec(&arg);
                let chans = s.sync.chans.len();
                let mut ex = RefExec::new(s, share);
                ex.run(u64::MAX);
                assert!(
                    ex.all_exited(),
                    "{arg} {share:?}: {:?}",
                    ex.sync.waiting_tasks()
                );
                let (sent, received) = (0..chans)
                    .map(|c| ex.sync.chan_counts(ChanId(c as u32)))
                    .fold((0, 0), |(a, b), (x, y)| (a + x, b + y));
                assert_eq!(sent, 2 * 3 * 3 * 40, "{arg}");
                assert_eq!(received, 2 * 3 * 3 * 40, "{arg}");
                assert_eq!(ex.probes(ProbeTag::Start).count(), 12);
            }
        }
    }
}

#[test]
fn hackbench_blocks_writers_on_full_buffers() {
    // 20000-byte messages: a pipe holds 3, a socket 6 (sndbuf 212992 / 32 KiB truesize).
    assert_eq!(
        generators::hackbench::capacity_msgs(ChanKind::Pipe, 20_000),
        3
    );
    assert_eq!(
        generators::hackbench::capacity_msgs(ChanKind::Socket, 20_000),
        6
    );
    assert_eq!(
        generators::hackbench::capacity_msgs(ChanKind::Socket, 100),
        277
    );
    assert_eq!(
        generators::hackbench::capacity_msgs(ChanKind::Pipe, 100),
        640
    );
}

#[test]
fn pipe_makes_two_handoffs_per_loop() {
    for share in [Share::RunToBlock, Share::RoundRobin] {
        let s = spec("pipe:loops=1000");
        let mut ex = RefExec::new(s, share);
        ex.run(u64::MAX);
        assert!(ex.all_exited());
        let handoffs: u64 = (0..2).map(|c| ex.sync.chan_counts(ChanId(c)).1).sum();
        assert_eq!(handoffs, 2 * 1000);
        // Each round trip costs one write and one read on each side: 2 * 0.9 us.
        assert_eq!(ex.now, 1000 * 2 * 900);
    }
}

#[test]
fn schbench_records_one_sample_per_worker_wakeup() {
    let s = spec("schbench:m=2,t=3,cputime=1ms,sleeptime=2ms,runtime=1s");
    let n_tasks = s.tasks.len();
    let mut ex = RefExec::new(s, Share::RoundRobin);
    ex.run(2_000_000_000);
    let mut total = 0;
    for i in 0..n_tasks {
        if &*ex.obs.tasks[i].group != "schbench-worker" {
            continue;
        }
        let samples = ex
            .probes(ProbeTag::Wakeup)
            .filter(|p| p.task.index() == i)
            .count() as u64;
        assert_eq!(samples, ex.done_suspends[i], "worker {i}");
        total += samples;
    }
    // Sometimes: the run really went through many rounds.
    assert!(total > 100, "only {total} wake-ups");
}

#[test]
fn pingpong_alternates_and_stamps_each_wakeup() {
    let s = spec("pingpong:cpus=2,5,sleep=10us,work=5us");
    assert_eq!(s.cpuset(s.tasks[0].affinity.unwrap()), &[2]);
    assert_eq!(s.cpuset(s.tasks[1].affinity.unwrap()), &[5]);
    let mut ex = RefExec::new(s, Share::RunToBlock);
    ex.run(1_000_000);
    let w: Vec<_> = ex.probes(ProbeTag::Wakeup).collect();
    assert!(w.len() > 10);
    for pair in w.windows(2) {
        assert_ne!(pair[0].task, pair[1].task, "turns alternate");
    }
    // On one idle CPU a posted task runs at once: zero latency.
    assert!(w.iter().all(|p| p.value == 0));
}

#[test]
fn tbench_tallies_every_operation() {
    let s = spec("tbench:clients=2,runtime=2,warmup=0");
    let mut ex = RefExec::new(s, Share::RoundRobin);
    ex.run(10_000_000_000);
    let clients_done = (0..4)
        .step_by(2)
        .all(|i| ex.tasks[i].status == Status::Exited);
    assert!(clients_done);
    let tallied: u64 = ex.probes(ProbeTag::TallyCount).map(|p| p.value).sum();
    // Every request a client sent was answered and counted.
    let replies: u64 = [1u32, 3]
        .iter()
        .map(|&c| ex.sync.chan_counts(ChanId(c)).1)
        .sum();
    assert_eq!(tallied, replies);
    assert!(tallied > 1000);
}

#[test]
fn ebizzy_records_are_tallied_at_exit() {
    let s = spec("ebizzy:threads=3,runtime=1");
    let mut ex = RefExec::new(s, Share::RoundRobin);
    ex.run(u64::MAX);
    assert!(ex.all_exited());
    let records: u64 = ex.probes(ProbeTag::TallyCount).map(|p| p.value).sum();
    let cpu: u64 = ex.obs.tasks.iter().map(|t| t.runtime_ns).sum();
    // Each thread's first record is 1 + 90 + 5 us of work (mmap, copy and search, munmap),
    // every later one 90 us (glibc's dynamic mmap threshold), and the threads stop between
    // records.
    assert_eq!(3 * 96_000 + (records - 3) * 90_000, cpu);
    assert!(records > 10_000);
}

#[test]
fn combined_workloads_keep_their_bookkeeping() {
    let s = parse_workloads(&[
        "pipe:loops=50",
        "hackbench:groups=1,fds=2,loops=5",
        "pipe:loops=7",
    ])
    .unwrap();
    assert_eq!(s.parts.len(), 3);
    assert_eq!(s.parts[1].tasks, 2..6);
    assert_eq!(s.sync.chans.len(), 2 + 2 + 2);
    s.validate().unwrap();
    let mut ex = RefExec::new(s, Share::RoundRobin);
    ex.run(u64::MAX);
    assert!(ex.all_exited());
    assert_eq!(
        ex.sync.chan_counts(ChanId(0)).1 + ex.sync.chan_counts(ChanId(1)).1,
        100
    );
    assert_eq!(
        ex.sync.chan_counts(ChanId(2)).1 + ex.sync.chan_counts(ChanId(3)).1,
        2 * 2 * 5
    );
    assert_eq!(
        ex.sync.chan_counts(ChanId(4)).1 + ex.sync.chan_counts(ChanId(5)).1,
        14
    );
    let reports = ex.spec.reports(&ex.obs);
    assert_eq!(reports.len(), 3);
    assert!(reports[2].text.contains("Executed 7 pipe operations"));
}

#[test]
fn generator_errors_name_the_key() {
    let cases = [
        (
            "sysbench-cpu:threads=0",
            "sysbench-cpu: threads=\"0\": expected an integer in 1..=100000",
        ),
        (
            "sysbench-cpu:thread=4",
            "sysbench-cpu: unknown key \"thread\" (valid keys: threads, requests, time, cost, jitter, format)",
        ),
        (
            "sysbench-cpu:requests=0",
            "sysbench-cpu: requests=0 (unlimited) needs a time limit",
        ),
        (
            "hackbench:mode=fiber",
            "hackbench: mode=\"fiber\": expected one of process, thread",
        ),
        (
            "schbench:cputime=3x",
            "schbench: cputime=\"3x\": expected a duration like 30ms, 1.5s, 500us or a number of us",
        ),
        (
            "tbench:runtime=10",
            "tbench: missing required key \"clients\"",
        ),
        (
            "tbench:clients=2,runtime=1.5",
            "tbench: runtime=\"1500000000ns\": expected whole seconds (dbench counts in seconds)",
        ),
        ("hogs:per_cpu=2", "hogs: missing required key \"cpus\""),
        (
            "hogs:cpus=3-1",
            "hogs: cpus=\"3-1\": expected a CPU list like 0-3,8 (range 3-1 is descending)",
        ),
        (
            "pingpong:cpus=1,2,3",
            "pingpong: cpus=\"1,2,3\": expected two different CPUs, A,B",
        ),
        (
            "busy:threads=2,nice=20",
            "busy: nice=\"20\": expected an integer in -20..=19",
        ),
        (
            "stress:x=1",
            "unknown workload \"stress\" (valid: rtapp, trace, sysbench-cpu, hackbench, schbench, tbench, ebizzy, pipe, hogs, pingpong, busy, periodic)",
        ),
    ];
    for (arg, msg) in cases {
        match parse_workload(arg) {
            Ok(_) => panic!("{arg} parsed"),
            Err(e) => assert_eq!(e.to_string(), msg, "{arg}"),
        }
    }
}

#[test]
fn defaults_follow_the_tools() {
    let s = spec("hackbench");
    assert_eq!(s.tasks.len(), 400);
    let s = spec("schbench");
    // main() and 2 message threads with 16 workers each.
    assert_eq!(s.tasks.len(), 1 + 2 * 17);
    assert_eq!(s.duration_ns, Some(30_000_000_000));
    use generators::parse_params;
    let generators::schbench::Params {
        cputime_ns,
        sleeptime_ns,
        ..
    } = parse_params::<generators::schbench::Schbench>("").unwrap();
    assert_eq!((cputime_ns, sleeptime_ns), (30_000_000, 30_000_000));
    let p = parse_params::<generators::sysbench::SysbenchCpu>("threads=8").unwrap();
    assert_eq!((p.requests, p.cost_ns), (10_000, 1_300_000));
    let p = parse_params::<generators::sysbench::SysbenchCpu>("threads=8,time=2").unwrap();
    assert_eq!((p.requests, p.time_ns), (0, Some(2_000_000_000)));
    let p = parse_params::<generators::tbench::Tbench>("clients=96").unwrap();
    assert_eq!((p.runtime_s, p.warmup_s), (600, 120));
    let p = parse_params::<generators::hackbench::Hackbench>("").unwrap();
    assert_eq!((p.send_ns, p.recv_ns, p.datasize), (2_000, 1_500, 100));
    let p = parse_params::<generators::pipe::Pipe>("").unwrap();
    assert_eq!((p.loops, p.read_ns, p.write_ns), (1_000_000, 400, 500));
    assert_eq!(
        parse_params::<generators::ebizzy::Ebizzy>("threads=4")
            .unwrap()
            .runtime_s,
        10
    );
}

#[test]
fn hogs_pin_each_thread() {
    let s = spec("hogs:cpus=0-1,4,per_cpu=2");
    let pins: Vec<&[u32]> = s
        .tasks
        .iter()
        .map(|t| s.cpuset(t.affinity.unwrap()))
        .collect();
    assert_eq!(pins, [&[0][..], &[0], &[1], &[1], &[4], &[4]]);
    assert_eq!(s.max_cpu(), Some(4));
    let s = spec("busy:threads=3,nice=5,cpus=2-3");
    assert!(
        s.tasks
            .iter()
            .all(|t| t.nice == 5 && s.cpuset(t.affinity.unwrap()) == [2, 3])
    );
}

#[test]
fn periodic_wakes_on_its_period() {
    let s = spec("periodic:threads=1,run=2ms,period=10ms");
    let mut ex = RefExec::new(s, Share::RunToBlock);
    ex.run(95_000_000);
    // Runs at 0, 10, ..., 90 ms: 10 runs of 2 ms.
    assert_eq!(ex.obs.tasks[0].runtime_ns, 10 * 2_000_000);
}

// ---------------------------------------------------------------------------------------
// Sync objects.

fn apply(s: &mut SyncState, t: u32, a: Action) -> (Outcome, Vec<u32>) {
    let mut w = Wakes::new();
    let o = s.apply(TaskRef(t), &a, 0, &mut w);
    (o, w.iter().map(|w| w.task.0).collect())
}

#[test]
fn mutex_wakes_one_waiter_who_retries() {
    let mut spec = SyncSpec::default();
    let m = spec.add_mutex("m");
    let mut s = SyncState::new(&spec, 0);
    assert_eq!(apply(&mut s, 0, Action::Lock(m)), (Outcome::Done, vec![]));
    assert_eq!(
        apply(&mut s, 1, Action::Lock(m)),
        (Outcome::Blocked, vec![])
    );
    assert_eq!(
        apply(&mut s, 2, Action::Lock(m)),
        (Outcome::Blocked, vec![])
    );
    // Unlock wakes the first waiter only, FIFO.
    assert_eq!(
        apply(&mut s, 0, Action::Unlock(m)),
        (Outcome::Done, vec![1])
    );
    // Task 0 barges in before the woken task runs: the retry blocks again, at the tail.
    assert_eq!(apply(&mut s, 0, Action::Lock(m)), (Outcome::Done, vec![]));
    assert_eq!(
        apply(&mut s, 1, Action::Lock(m)),
        (Outcome::Blocked, vec![])
    );
    assert_eq!(
        apply(&mut s, 0, Action::Unlock(m)),
        (Outcome::Done, vec![2])
    );
    assert_eq!(apply(&mut s, 2, Action::Lock(m)), (Outcome::Done, vec![]));
    assert_eq!(s.mutex_owner(m), Some(TaskRef(2)));
}

#[test]
fn mutex_unlock_wakes_only_when_the_futex_word_says_contended() {
    // glibc's lowlevellock: 0 free, 1 taken, 2 taken with possible waiters.
    let mut spec = SyncSpec::default();
    let m = spec.add_mutex("m");
    let mut s = SyncState::new(&spec, 0);
    assert_eq!(apply(&mut s, 0, Action::Lock(m)).0, Outcome::Done); // 0 -> 1
    assert_eq!(apply(&mut s, 1, Action::Lock(m)).0, Outcome::Blocked); // -> 2
    assert_eq!(apply(&mut s, 2, Action::Lock(m)).0, Outcome::Blocked);
    assert_eq!(
        apply(&mut s, 0, Action::Unlock(m)),
        (Outcome::Done, vec![1])
    ); // 2 -> 0
    // Task 3 takes the free lock with the fast path (0 -> 1) before the woken task 1 runs;
    // its unlock sees 1 and wakes nobody, although task 2 still waits.
    assert_eq!(apply(&mut s, 3, Action::Lock(m)), (Outcome::Done, vec![]));
    assert_eq!(apply(&mut s, 3, Action::Unlock(m)), (Outcome::Done, vec![]));
    // Task 1 retries with the exchange: the lock was free, it takes it as contended (2), so
    // its unlock passes the wake-up on to task 2.
    assert_eq!(apply(&mut s, 1, Action::Lock(m)), (Outcome::Done, vec![]));
    assert_eq!(
        apply(&mut s, 1, Action::Unlock(m)),
        (Outcome::Done, vec![2])
    );
    assert_eq!(apply(&mut s, 2, Action::Lock(m)), (Outcome::Done, vec![]));
    assert_eq!(
        apply(&mut s, 2, Action::Unlock(m)),
        (Outcome::Done, vec![]),
        "no waiter"
    );
    // A later fast-path lock by task 1 is uncontended again.
    assert_eq!(apply(&mut s, 1, Action::Lock(m)), (Outcome::Done, vec![]));
    assert_eq!(apply(&mut s, 1, Action::Unlock(m)), (Outcome::Done, vec![]));
}

#[test]
fn condvar_wait_releases_the_mutex_and_completes_once_signalled() {
    let mut spec = SyncSpec::default();
    let m = spec.add_mutex("m");
    let c = spec.add_cond("c");
    let mut s = SyncState::new(&spec, 0);
    let wait = Action::Wait { cond: c, mutex: m };
    assert_eq!(apply(&mut s, 0, Action::Lock(m)).0, Outcome::Done);
    assert_eq!(apply(&mut s, 1, Action::Lock(m)).0, Outcome::Blocked);
    // Waiting releases the mutex and wakes its waiter.
    assert_eq!(apply(&mut s, 0, wait.clone()), (Outcome::Blocked, vec![1]));
    assert_eq!(
        apply(&mut s, 0, wait.clone()),
        (Outcome::Blocked, vec![]),
        "spurious retry"
    );
    assert_eq!(apply(&mut s, 1, Action::Lock(m)).0, Outcome::Done);
    assert_eq!(
        apply(&mut s, 1, Action::Signal(c)),
        (Outcome::Done, vec![0])
    );
    assert_eq!(
        apply(&mut s, 1, Action::Signal(c)),
        (Outcome::Done, vec![]),
        "no waiter left"
    );
    assert_eq!(apply(&mut s, 0, wait), (Outcome::Done, vec![]));
    // The program then re-takes the mutex, still held by task 1.
    assert_eq!(apply(&mut s, 0, Action::Lock(m)).0, Outcome::Blocked);
}

#[test]
fn broadcast_and_barrier_release_everyone() {
    let mut spec = SyncSpec::default();
    let m = spec.add_mutex("m");
    let c = spec.add_cond("c");
    let b = spec.add_barrier("b", 3);
    let mut s = SyncState::new(&spec, 0);
    for t in 0..3 {
        s.apply(
            TaskRef(t),
            &Action::Wait { cond: c, mutex: m },
            0,
            &mut Wakes::new(),
        );
    }
    assert_eq!(
        apply(&mut s, 9, Action::Broadcast(c)),
        (Outcome::Done, vec![0, 1, 2])
    );
    for t in 0..3 {
        let (o, _) = apply(&mut s, t, Action::Wait { cond: c, mutex: m });
        assert_eq!(o, Outcome::Done);
        s.apply(TaskRef(t), &Action::Unlock(m), 0, &mut Wakes::new());
    }
    assert_eq!(
        apply(&mut s, 0, Action::Barrier(b)),
        (Outcome::Blocked, vec![])
    );
    assert_eq!(
        apply(&mut s, 1, Action::Barrier(b)),
        (Outcome::Blocked, vec![])
    );
    assert_eq!(
        apply(&mut s, 2, Action::Barrier(b)),
        (Outcome::Done, vec![0, 1])
    );
    assert_eq!(apply(&mut s, 0, Action::Barrier(b)).0, Outcome::Done);
    assert_eq!(apply(&mut s, 1, Action::Barrier(b)).0, Outcome::Done);
    // The barrier is reusable.
    assert_eq!(apply(&mut s, 1, Action::Barrier(b)).0, Outcome::Blocked);
}

#[test]
fn semaphore_and_token_never_lose_a_post() {
    let mut spec = SyncSpec::default();
    let sem = spec.add_sem("s", 1);
    let mut s = SyncState::new(&spec, 0);
    assert_eq!(apply(&mut s, 0, Action::SemWait(sem)).0, Outcome::Done);
    assert_eq!(apply(&mut s, 0, Action::SemWait(sem)).0, Outcome::Blocked);
    assert_eq!(
        apply(&mut s, 1, Action::SemPost(sem)),
        (Outcome::Done, vec![0])
    );
    assert_eq!(apply(&mut s, 0, Action::SemWait(sem)).0, Outcome::Done);
    // Resume before Suspend: the token waits.
    assert_eq!(
        apply(&mut s, 1, Action::Resume(TaskRef(0))),
        (Outcome::Done, vec![])
    );
    assert_eq!(apply(&mut s, 0, Action::Suspend).0, Outcome::Done);
    assert_eq!(apply(&mut s, 0, Action::Suspend).0, Outcome::Blocked);
    assert_eq!(
        apply(&mut s, 1, Action::Resume(TaskRef(0))),
        (Outcome::Done, vec![0])
    );
    assert_eq!(apply(&mut s, 0, Action::Suspend).0, Outcome::Done);
    s.apply(
        TaskRef(1),
        &Action::Resume(TaskRef(0)),
        0,
        &mut Wakes::new(),
    );
    s.clear_token(TaskRef(0));
    assert_eq!(
        apply(&mut s, 0, Action::Suspend).0,
        Outcome::Blocked,
        "token cleared"
    );
}

#[test]
fn pipe_and_socket_wake_rules() {
    let mut spec = SyncSpec::default();
    let p = spec.add_chan("p", ChanKind::Pipe, 2);
    let k = spec.add_chan("k", ChanKind::Socket, 8);
    let mut s = SyncState::new(&spec, 0);
    // Two readers wait on an empty pipe; a write wakes one (it was empty).
    assert_eq!(
        apply(&mut s, 0, Action::Recv { chan: p }).0,
        Outcome::Blocked
    );
    assert_eq!(
        apply(&mut s, 1, Action::Recv { chan: p }).0,
        Outcome::Blocked
    );
    assert_eq!(
        apply(&mut s, 5, Action::Send { chan: p, msgs: 1 }),
        (Outcome::Done, vec![0])
    );
    // Not empty any more: the second write wakes nobody...
    assert_eq!(
        apply(&mut s, 5, Action::Send { chan: p, msgs: 1 }),
        (Outcome::Done, vec![])
    );
    // ...and the pipe is full.
    assert_eq!(
        apply(&mut s, 5, Action::Send { chan: p, msgs: 1 }).0,
        Outcome::Blocked
    );
    // The woken reader reads: the pipe was full, so it wakes the writer; it had waited and
    // data remains, so it wakes the next reader.
    assert_eq!(
        apply(&mut s, 0, Action::Recv { chan: p }),
        (Outcome::Done, vec![5, 1])
    );
    // A third writer barges in before the woken writer runs and fills the pipe again; the
    // woken writer's retry blocks.
    assert_eq!(
        apply(&mut s, 7, Action::Send { chan: p, msgs: 1 }),
        (Outcome::Done, vec![])
    );
    assert_eq!(
        apply(&mut s, 5, Action::Send { chan: p, msgs: 1 }).0,
        Outcome::Blocked
    );
    // Reader 1 (woken earlier) reads: the pipe was full, so it wakes writer 5.
    assert_eq!(
        apply(&mut s, 1, Action::Recv { chan: p }),
        (Outcome::Done, vec![5])
    );
    // Writer 5 had waited, but the pipe is full after its write: no chain.
    assert_eq!(
        apply(&mut s, 5, Action::Send { chan: p, msgs: 1 }),
        (Outcome::Done, vec![])
    );
    // Two writers wait on the full pipe; reads make room for both, but only the first read
    // (the pipe was full) wakes a writer; that writer, having waited, wakes the next one.
    assert_eq!(
        apply(&mut s, 7, Action::Send { chan: p, msgs: 1 }).0,
        Outcome::Blocked
    );
    assert_eq!(
        apply(&mut s, 8, Action::Send { chan: p, msgs: 1 }).0,
        Outcome::Blocked
    );
    assert_eq!(
        apply(&mut s, 2, Action::Recv { chan: p }),
        (Outcome::Done, vec![7])
    );
    assert_eq!(
        apply(&mut s, 2, Action::Recv { chan: p }),
        (Outcome::Done, vec![])
    );
    assert_eq!(
        apply(&mut s, 7, Action::Send { chan: p, msgs: 1 }),
        (Outcome::Done, vec![8])
    );
    assert_eq!(
        apply(&mut s, 8, Action::Send { chan: p, msgs: 1 }),
        (Outcome::Done, vec![])
    );
    // Socket: every write wakes every reader; writers wake when the queue drains to 1/4.
    for t in 0..2 {
        assert_eq!(
            apply(&mut s, t, Action::Recv { chan: k }).0,
            Outcome::Blocked
        );
    }
    assert_eq!(
        apply(&mut s, 5, Action::Send { chan: k, msgs: 8 }),
        (Outcome::Done, vec![0, 1])
    );
    assert_eq!(
        apply(&mut s, 6, Action::Send { chan: k, msgs: 1 }).0,
        Outcome::Blocked
    );
    for _ in 0..5 {
        assert_eq!(
            apply(&mut s, 0, Action::Recv { chan: k }),
            (Outcome::Done, vec![])
        );
    }
    assert_eq!(
        apply(&mut s, 0, Action::Recv { chan: k }),
        (Outcome::Done, vec![6])
    );
    assert_eq!(s.chan_counts(k), (8, 6));
}

// ---------------------------------------------------------------------------------------
// Interpreter.

fn task_with(program: Program) -> TaskSpec {
    TaskSpec {
        name: "t".into(),
        policy: Policy::Normal,
        nice: 0,
        affinity: None,
        custom_slice_ns: None,
        start_ns: 0,
        jitter_pct: 0,
        group: "t".into(),
        part: 0,
        spawned: false,
        cgroup: None,
        session: None,
        program: std::sync::Arc::new(program),
    }
}

#[test]
fn relative_timer_rebases_on_a_miss_absolute_keeps_its_grid() {
    for (relative, expect) in [(true, vec![10, 45, 55, 65]), (false, vec![10, 40, 50, 60])] {
        let mut p = Program::forever(vec![Event::Timer {
            timer: TimerId::Local(0),
            period_ns: 10,
        }]);
        p.local_timers.push(sync::TimerSpec {
            name: "unique".into(),
            relative,
        });
        let t = task_with(p);
        let mut st = t.start(TaskRef(0));
        let mut sync = SyncState::new(&SyncSpec::default(), 0);
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        let mut got = Vec::new();
        // First expiry at 10; the task then runs late until 35 (missing 20 and 30).
        let mut now = 0;
        for wake in [0u64, 35, 35, 45] {
            now = now.max(wake);
            match st.next_action(now, &mut rng, &mut sync) {
                Action::SleepUntil { abs_ns } => {
                    got.push(abs_ns);
                    now = abs_ns;
                }
                a => panic!("{a:?}"),
            }
        }
        // At 35 the expiry at 20 is missed. Relative: the timer re-bases on 35 and the next
        // expiry is 45. Absolute: 30 is missed too (no sleep, no action), then 40.
        assert_eq!(got, expect, "relative={relative}");
    }
}

#[test]
fn jitter_is_deterministic_per_stream() {
    let draws = |seed| {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        (0..100)
            .map(|_| interp::jitter_work(1_000_000, 10, &mut rng))
            .collect::<Vec<_>>()
    };
    assert_eq!(draws(7), draws(7));
    assert_ne!(draws(7), draws(8));
    assert!(draws(7).iter().all(|w| (900_000..=1_100_000).contains(w)));
    let mut rng = Pcg64Mcg::seed_from_u64(7);
    assert_eq!(interp::jitter_work(5, 0, &mut rng), 5);
}

#[test]
fn phase_properties_emit_affinity_and_sched_changes_only_when_they_change() {
    let mut spec = WorkloadSpec::empty();
    let a = spec.add_cpuset(vec![1]);
    let mut p0 = Phase::once("p0", vec![Event::Run { work_ns: 1 }]);
    p0.cpus = Some(a);
    p0.sched = Some(SchedChange {
        policy: None,
        nice: Some(5),
    });
    let mut p1 = Phase::once("p1", vec![Event::Run { work_ns: 1 }]);
    p1.sched = Some(SchedChange {
        policy: Some(Policy::Batch),
        nice: None,
    });
    let program = Program {
        phases: vec![p0, p1],
        loops: Loops::Count(2),
        local_timers: Vec::new(),
        rtapp_log: false,
        cumulative_slack: false,
    };
    let t = task_with(program);
    let mut st = t.start(TaskRef(0));
    let mut sync = SyncState::new(&SyncSpec::default(), 0);
    let mut rng = Pcg64Mcg::seed_from_u64(1);
    let mut got = Vec::new();
    loop {
        let x = st.next_action(0, &mut rng, &mut sync);
        if x == Action::Exit {
            break;
        }
        got.push(x);
    }
    let nice5 = SchedAttr {
        policy: Policy::Normal,
        nice: 5,
    };
    let batch5 = SchedAttr {
        policy: Policy::Batch,
        nice: 5,
    };
    let run = Action::Run { work_ns: 1 };
    assert_eq!(
        got,
        vec![
            Action::SetAffinity(Some(a)),
            Action::SetSched(nice5),
            run.clone(),
            Action::SetAffinity(None),
            Action::SetSched(batch5),
            run.clone(),
            Action::SetAffinity(Some(a)),
            Action::SetSched(SchedAttr {
                policy: Policy::Batch,
                nice: 5
            }),
            run.clone(),
            Action::SetAffinity(None),
            run,
        ]
        .into_iter()
        // p0's change keeps the Batch policy (only nice is given), so its second iteration
        // changes nothing: drop that SetSched from the expectation.
        .enumerate()
        .filter(|(i, _)| *i != 7)
        .map(|(_, a)| a)
        .collect::<Vec<_>>()
    );
}

#[test]
fn exit_keeps_returning_exit_and_tally_flushes_first() {
    let p = Program {
        phases: vec![Phase::once(
            "p",
            vec![
                Event::Mark,
                Event::Run { work_ns: 5 },
                Event::Tally { interval_ns: 0 },
            ],
        )],
        loops: Loops::Count(3),
        local_timers: Vec::new(),
        rtapp_log: false,
        cumulative_slack: false,
    };
    let t = task_with(p);
    let mut st = t.start(TaskRef(0));
    let mut sync = SyncState::new(&SyncSpec::default(), 0);
    let mut rng = Pcg64Mcg::seed_from_u64(1);
    let mut now = 0;
    let mut out = Vec::new();
    for _ in 0..8 {
        let a = st.next_action(now, &mut rng, &mut sync);
        if let Action::Run { work_ns } = a {
            now += work_ns;
        }
        out.push(a);
    }
    assert_eq!(
        &out[3..],
        &[
            Action::Probe {
                tag: ProbeTag::TallyCount,
                value: 3
            },
            Action::Probe {
                tag: ProbeTag::TallyMaxLatency,
                value: 5
            },
            Action::Exit,
            Action::Exit,
            Action::Exit,
        ]
    );
    assert!(st.exited());
}

#[test]
fn zero_time_loops_are_rejected() {
    let mut spec = WorkloadSpec::empty();
    let m = spec.sync.add_mutex("m");
    spec.tasks.push(task_with(Program::forever(vec![
        Event::Lock(m),
        Event::Unlock(m),
    ])));
    assert_eq!(
        spec.validate(),
        Err(SpecError::ZeroTimeLoop {
            task: "t".into(),
            phase: "main".into()
        })
    );
}

#[test]
fn fork_names_follow_rtapp_and_stop_at_the_limit() {
    let mut spec = WorkloadSpec::empty();
    let mut t = task_with(Program::forever(vec![Event::Sleep { ns: 1 }]));
    t.name = "child".into();
    spec.templates.push(t);
    let mut sync = spec.new_sync_state();
    let a = spec
        .fork_task(TemplateId(0), &mut sync, TaskRef(4))
        .unwrap();
    let b = spec
        .fork_task(TemplateId(0), &mut sync, TaskRef(5))
        .unwrap();
    assert_eq!(
        (a.name.as_str(), b.name.as_str()),
        ("child-4-0000", "child-5-0001")
    );
    for i in 2..spec::FORKS_LIMIT {
        spec.fork_task(TemplateId(0), &mut sync, TaskRef(i + 4))
            .unwrap();
    }
    assert_eq!(
        spec.fork_task(TemplateId(0), &mut sync, TaskRef(9999)),
        Err(ForkError::Limit {
            template: "child".into(),
            limit: 1024
        })
    );
}

#[test]
fn needs_duration_only_for_endless_workloads() {
    for (arg, needs) in [
        ("hogs:cpus=0", true),
        ("busy:threads=2", true),
        ("periodic:threads=1,run=1ms,period=4ms", true),
        ("pingpong:cpus=0,1", true),
        ("sysbench-cpu:threads=4", false),
        ("sysbench-cpu:threads=4,time=1", false),
        ("hackbench:groups=1", false),
        ("pipe:loops=10", false),
        ("schbench", false),
        ("tbench:clients=1", false),
        ("ebizzy:threads=1", false),
    ] {
        assert_eq!(spec(arg).needs_duration(), needs, "{arg}");
    }
}

#[test]
fn a_phase_looped_zero_times_is_skipped() {
    let mut p0 = Phase::once("never", vec![Event::Run { work_ns: 7 }]);
    p0.loops = Loops::Count(0);
    let p1 = Phase::once("once", vec![Event::Run { work_ns: 3 }]);
    let t = task_with(Program {
        phases: vec![p0, p1],
        loops: Loops::Count(2),
        local_timers: Vec::new(),
        rtapp_log: false,
        cumulative_slack: false,
    });
    let mut st = t.start(TaskRef(0));
    let mut sync = SyncState::new(&SyncSpec::default(), 0);
    let mut rng = Pcg64Mcg::seed_from_u64(1);
    let got: Vec<Action> = (0..4)
        .map(|_| st.next_action(0, &mut rng, &mut sync))
        .collect();
    let run3 = Action::Run { work_ns: 3 };
    assert_eq!(got, [run3.clone(), run3, Action::Exit, Action::Exit]);
}

#[test]
fn add_cpuset_interns_many_lists_by_value() {
    // Issue 18, finding 5: `hogs:cpus=0-39999` interns 40,000 one-CPU sets; each lookup was
    // a linear search (10.9 s). The same list gets the same id, a different list a new one.
    let mut spec = WorkloadSpec::empty();
    let ids: Vec<CpusetId> = (0..40_000).map(|c| spec.add_cpuset(vec![c])).collect();
    assert!(ids.iter().enumerate().all(|(i, id)| id.index() == i));
    assert_eq!(spec.add_cpuset(vec![39_999]), ids[39_999]);
    assert_eq!(spec.add_cpuset(vec![7, 3, 7]), spec.add_cpuset(vec![3, 7]));
    let pair = spec.add_cpuset(vec![3, 7]);
    assert_eq!(pair.index(), 40_000);
    assert_eq!(spec.cpuset(pair), &[3, 7]);
    assert_eq!(spec.cpusets.len(), 40_001);
    // After combining, the appended sets are found too (each part keeps its own ids).
    let mut other = WorkloadSpec::empty();
    other.add_cpuset(vec![1, 2]);
    let mut both = WorkloadSpec::combine(vec![spec, other]);
    assert_eq!(both.add_cpuset(vec![1, 2]).index(), 40_001);
    assert_eq!(both.add_cpuset(vec![5]), CpusetId(5));
    assert_eq!(both.add_cpuset(vec![0, 1, 2]).index(), 40_002);
}

#[test]
fn spawned_threads_are_spawned_exactly_once_by_a_task_of_the_spec() {
    // schbench: main() 0 spawns the message thread 1, which spawns its workers 2 and 3.
    let s = spec("schbench:m=1,t=2");
    assert!(!s.tasks[0].spawned);
    assert!(s.tasks[1..].iter().all(|t| t.spawned));
    s.validate().unwrap();
    // A spawn of a task the launcher creates at the start would create it twice.
    let mut bad = s.clone();
    bad.tasks[1].spawned = false;
    let e = bad.validate().unwrap_err().to_string();
    assert!(e.contains("is created at the start"), "{e}");
    // A spawned task that nothing spawns would never run.
    let mut bad = s.clone();
    bad.tasks[0].spawned = true;
    let e = bad.validate().unwrap_err().to_string();
    assert!(e.contains("no task spawns"), "{e}");
}

#[test]
fn spawned_threads_start_when_spawned() {
    let s = spec("schbench:m=1,t=2,runtime=1");
    let mut ex = RefExec::new(s, Share::RunToBlock);
    ex.run(300_000_000);
    // main() ran first, then the message thread, then its workers, each at its creation.
    let created: Vec<Option<u64>> = ex.obs.tasks.iter().map(|t| t.created_ns).collect();
    assert_eq!(created[0], Some(0));
    assert!(created[1].unwrap() > 0, "{created:?}");
    assert!(created[2].unwrap() > created[1].unwrap(), "{created:?}");
    assert!(created[3].unwrap() > created[2].unwrap(), "{created:?}");
}

#[test]
fn a_phase_taskgroup_moves_the_thread_only_when_it_changes_and_sticks_after() {
    // rt-app's set_thread_taskgroup(): p0 moves to /a, p1 (no taskgroup) stays there, p2
    // moves to /b; on the next loop p0 moves back to /a. A phase naming the group the thread
    // is in (p3 after p2) moves nothing.
    let phase = |name: &str, tg: Option<&str>| {
        let mut p = Phase::once(name, vec![Event::Run { work_ns: 1 }]);
        p.taskgroup = tg.map(str::to_owned);
        p
    };
    let program = Program {
        phases: vec![
            phase("p0", Some("/a")),
            phase("p1", None),
            phase("p2", Some("/b")),
            phase("p3", Some("/b")),
        ],
        loops: Loops::Count(2),
        local_timers: Vec::new(),
        rtapp_log: false,
        cumulative_slack: false,
    };
    let mut t = task_with(program);
    t.cgroup = Some("/b".to_owned());
    let mut st = t.start(TaskRef(0));
    let mut sync = SyncState::new(&SyncSpec::default(), 0);
    let mut rng = Pcg64Mcg::seed_from_u64(1);
    let mut got = Vec::new();
    loop {
        let x = st.next_action(0, &mut rng, &mut sync);
        if x == Action::Exit {
            break;
        }
        got.push(x);
    }
    let run = Action::Run { work_ns: 1 };
    let to = |p: &str| Action::SetTaskGroup(p.to_owned());
    assert_eq!(
        got,
        vec![
            to("/a"),
            run.clone(),
            run.clone(),
            to("/b"),
            run.clone(),
            run.clone(),
            to("/a"),
            run.clone(),
            run.clone(),
            to("/b"),
            run.clone(),
            run,
        ]
    );
    // The root cgroup is "/": a thread created in it does not move there.
    let mut root = Phase::once("r", vec![Event::Run { work_ns: 1 }]);
    root.taskgroup = Some("/".to_owned());
    let t = task_with(Program {
        phases: vec![root],
        loops: Loops::Count(1),
        local_timers: Vec::new(),
        rtapp_log: false,
        cumulative_slack: false,
    });
    let mut st = t.start(TaskRef(0));
    assert_eq!(
        st.next_action(0, &mut rng, &mut sync),
        Action::Run { work_ns: 1 }
    );
}
