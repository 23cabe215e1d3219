//! From a trace's events to per-task programs.
//!
//! Each traced task becomes a program of the events it went through, in order:
//! - a run burst ([`Event::Run`]) per stretch of run time between two points where it blocked
//!   or woke another task: the CPU time it received (its `sched_switch` in to out, minus the
//!   time it was switched out while runnable), as work at capacity 1024;
//! - a wake-up of a traced task it was running when the wakee's `sched_waking` fired
//!   ([`Event::SemPost`] on the wakee's own semaphore) at that point of its run; a wakee
//!   still on its CPU then (woken at its blocking point before `__schedule()` took it off)
//!   gets its [`Event::SemWait`] at that point of its own run;
//! - a blocking point where it switched out in a sleeping state: a [`Event::SemWait`] on its
//!   own semaphore when a traced task woke it, else a timed [`Event::Sleep`] as long as the
//!   recorded sleep (an interrupt, the idle task or an untraced task woke it);
//! - a [`Event::Spawn`] of each traced child it forked (`sched_process_fork` while it ran),
//!   and an [`Event::Exit`] where it exited.
//!
//! A semaphore counts, so a wake-up the waker's replay issues before the wakee's replay has
//! reached its blocking point is not lost: the wakee then does not sleep, as a task woken
//! before it calls `schedule()` does not.
//!
//! The run time a trace records holds the scheduler's own work, which the replaying
//! scheduler charges again: the bursts are the recorded run time less that work. A kernel
//! trace does not say what it was, so the extraction takes off assumed costs
//! ([`Options::switch_cost_ns`] per switch-in, [`Options::wake_cost_ns`] per wake-up issued).
//! lbsim's own traces record their charges (`lbsim_charge`: each wake-up's cost with
//! select_task_rq()'s scan, the tick's and the softirq's balancer work, a fork's placement,
//! and the newly idle balance between a block and its switch); from such a trace those are
//! taken off as recorded, in place of `wake_cost_ns` (the switch cost, a constant in lbsim,
//! is still `switch_cost_ns`).
//!
//! The balancer's decisions are not replayed: `sched_migrate_task` and the CPUs the tasks ran
//! on are ignored (unless `affinity=as-observed` keeps the set of CPUs each ran on).

use std::collections::{BTreeMap, BTreeSet};

use super::record::{Ev, LeftAs, Parsed};
use crate::program::Event;

/// What the user asked of the replay.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Pin each task to the CPUs it was seen running on.
    pub as_observed: bool,
    /// Events before this trace time (ns) are dropped; times count from here.
    pub from_ns: Option<u64>,
    /// Events at or after this trace time (ns) are dropped.
    pub to_ns: Option<u64>,
    /// Keep tasks whose comm matches one of these patterns (`*` at the end: a prefix; `!` in
    /// front: exclude).
    pub comm: Vec<String>,
    /// Keep only these pids.
    pub pids: Option<Vec<u32>>,
    /// CPU time the replaying scheduler charges a task each time it is switched in, taken
    /// off the recorded run time that follows (the recording already paid its own).
    pub switch_cost_ns: u64,
    /// CPU time the replaying scheduler charges a waker per wake-up, taken off the waker's
    /// recorded run time that follows.
    pub wake_cost_ns: u64,
    /// The recording machine's CPU capacities, by CPU (`capacity=`), in place of those the
    /// trace records; `None`: the trace's, else 1024.
    pub capacity: Option<Vec<u64>>,
    /// How a sleep an interrupt ended is replayed.
    pub sleeps: Sleeps,
}

/// How a sleep that an interrupt (a timer) ended is replayed (`sleeps=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sleeps {
    /// Per task: absolute when its interrupt wake-ups are periodic ([`is_periodic`]),
    /// relative otherwise.
    #[default]
    Auto,
    /// Until the recorded wake-up time, as a timer of the task's own whose expiries are the
    /// recorded ones (`clock_nanosleep(TIMER_ABSTIME)`, rt-app's `timer`): a task that gets
    /// there late does not sleep, and the next expiry keeps its time.
    Absolute,
    /// For the recorded length from the point the task blocks (`nanosleep()`).
    Relative,
}

/// How a replayed task starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// At this time (ns from the window's start).
    At(u64),
    /// Forked by this traced task.
    SpawnedBy(u32),
}

/// One step of a task's extracted program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Run this much CPU time (ns).
    Run(u64),
    /// Wake this traced task.
    Wake(u32),
    /// Wake this traced task with `WF_SYNC`, as the recording did (lbsim's traces say so).
    WakeSync(u32),
    /// Block until woken by a traced task.
    Wait,
    /// Sleep this long (ns).
    Sleep(u64),
    /// Sleep until this time (ns from the window's start), the next expiry of the task's
    /// periodic timer (a sleep an interrupt ended, replayed as absolute).
    Timer(u64),
    /// Fork this traced task.
    Spawn(u32),
    /// Exit.
    Exit,
}

/// A task of the trace and what the replay makes of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskProgram {
    /// pid.
    pub pid: u32,
    /// comm (the last one seen).
    pub comm: String,
    /// prio (the first one seen).
    pub prio: i32,
    /// How it starts.
    pub start: Start,
    /// Its steps.
    pub steps: Vec<Step>,
    /// CPUs it ran on.
    pub cpus: BTreeSet<u32>,
    /// It was runnable or running when the window starts (its first event a switch).
    pub live_at_start: bool,
    /// Wake-ups it received from untraced tasks (become timed sleeps).
    pub untraced_wakes: u64,
    /// Blocks whose wake-up the trace lacks (the next switch-in ends them as a timed sleep).
    pub missing_wakes: u64,
    /// CPU time it received in the window, ns (its bursts hold this less the overheads); a
    /// recorded newly idle balance after a block (`lbsim_charge`) is not counted.
    pub received_ns: u64,
    /// Its sleeps an interrupt ended are replayed as timer expiries ([`Step::Timer`]).
    pub absolute: bool,
}

impl TaskProgram {
    /// Total run time of its bursts, ns.
    pub fn run_ns(&self) -> u64 {
        self.steps
            .iter()
            .map(|s| if let Step::Run(n) = s { *n } else { 0 })
            .sum()
    }

    /// How many steps satisfy `f`.
    pub fn count(&self, f: impl Fn(&Step) -> bool) -> usize {
        self.steps.iter().filter(|s| f(s)).count()
    }
}

/// The result of the extraction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Extracted {
    /// Kept tasks, by pid.
    pub tasks: Vec<TaskProgram>,
    /// The trace's CPU count.
    pub nr_cpus: u32,
    /// Window length, ns (last kept event minus the window's start).
    pub span_ns: u64,
    /// Events in the window.
    pub events: u64,
    /// Tasks left out by `comm=`/`pid=`.
    pub filtered_out: u64,
    /// Wake-ups of tasks that had not blocked, not kept: a `sched_waking` of a running task
    /// from an interrupt or an untraced task, or of a task preempted while runnable.
    pub wakes_of_running: u64,
    /// Tasks with a real-time prio (replayed as nice 0).
    pub rt_tasks: u64,
    /// The wake-up cost taken off the wakers' run, ns (0 when the trace records its charges).
    pub wake_cost_ns: u64,
    /// The trace's own `lbsim_charge` records (lbsim's traces): how many, and their total ns;
    /// `None` for a trace without them.
    pub recorded_charges: Option<(u64, u64)>,
    /// The CPU capacities the bursts were scaled by, by CPU, and where they came from.
    pub capacities: Vec<u64>,
    /// Where [`Extracted::capacities`] came from.
    pub capacity_source: CapacitySource,
}

/// Where the capacities a replay scales bursts by came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CapacitySource {
    /// Neither the trace nor `capacity=` said: 1024 everywhere.
    #[default]
    Assumed,
    /// The trace's capacity events (CPUs it has none for: 1024).
    Trace,
    /// The `capacity=` key.
    Key,
}

fn comm_matches(pats: &[String], comm: &str) -> bool {
    let one = |p: &str| match p.strip_suffix('*') {
        Some(pre) => comm.starts_with(pre),
        None => comm == p,
    };
    let (neg, pos): (Vec<&String>, Vec<&String>) = pats.iter().partition(|p| p.starts_with('!'));
    if neg.iter().any(|p| one(&p[1..])) {
        return false;
    }
    pos.is_empty() || pos.iter().any(|p| one(p))
}

#[derive(Default)]
struct Live {
    comms: Vec<String>,
    prio: Option<i32>,
    start: Option<Start>,
    steps: Vec<Step>,
    run_since: Option<u64>,
    accum: u64,
    blocked_at: Option<u64>,
    /// The CPU of the run stretch since `run_since`.
    run_cpu: u32,
    /// `accum` weighted by the capacity of the CPU each part ran on (ns x capacity).
    accum_cap: u128,
    /// Its sleeps an interrupt ended: when they ended and how long they were.
    irq_sleeps: Vec<(u64, u64)>,
    exited: bool,
    cpus: BTreeSet<u32>,
    live_at_start: bool,
    untraced_wakes: u64,
    missing_wakes: u64,
    /// Overhead the replay will charge that the recorded run time since it also holds.
    owed: u64,
    /// Run time received, before the overheads are taken off.
    received: u64,
    /// Of that, the recorded newly idle balances between its blocks and their switches,
    /// which its run time does not hold.
    newidle: u64,
    /// Its last `Wake` step: the time of its `sched_waking` and the step's index (a sync
    /// wake-up's `lbsim_charge` follows it).
    last_wake: Option<(u64, usize)>,
    /// A traced task's `sched_waking` found this task still on its CPU and its wait is
    /// recorded, already satisfied: the wake-up is either `ttwu_runnable()` (its
    /// `sched_wakeup` follows while the task still runs) or one that caught the task between
    /// `__schedule()`'s dequeue and its traced switch (the newly idle balance runs between
    /// them): then the `sched_switch` with a sleeping state that follows is not a new block,
    /// and the `sched_wakeup` after it is this one's.
    woken_on_cpu: bool,
    /// That waking's time, and the index of the run step its flush pushed before the wait.
    woken_wait: Option<(u64, Option<usize>)>,
}

impl Live {
    /// Adds the run from `run_since` to `t` on `run_cpu` to the current burst.
    fn add_run(&mut self, t: u64, caps: &[u64]) {
        if let Some(s) = self.run_since {
            let d = t.saturating_sub(s);
            self.accum += d;
            self.accum_cap += u128::from(d) * u128::from(cap_of(caps, self.run_cpu));
        }
    }

    /// Ends the current burst at `t` (the task keeps running): its run time less the
    /// overheads it holds that the replay charges again, as work at capacity 1024 (lbsim's
    /// charges are time on the CPU, whatever its capacity, so they come off the run time
    /// before it is scaled: a burst of run time R on a CPU of capacity C holding overheads O
    /// is (R - O) * C / 1024 of work; a burst over CPUs of different capacities is scaled by
    /// their mean, weighted by the time on each).
    fn flush(&mut self, t: u64, caps: &[u64]) {
        if self.run_since.is_some() {
            self.add_run(t, caps);
            self.run_since = Some(t);
        }
        self.received += self.accum;
        let paid = self.owed.min(self.accum);
        self.owed -= paid;
        let left = self.accum - paid;
        if left > 0 {
            let work = u128::from(left) * self.accum_cap / (u128::from(self.accum) * 1024);
            if work > 0 {
                self.steps.push(Step::Run(work as u64));
            }
        }
        self.accum = 0;
        self.accum_cap = 0;
    }

    /// Ends the current burst at a block or exit: overhead not yet found in the run time is
    /// forgotten.
    fn flush_last(&mut self, t: u64, caps: &[u64]) {
        self.flush(t, caps);
        self.owed = 0;
    }

    fn note(&mut self, comm: &str, prio: Option<i32>) {
        if self.comms.last().map(String::as_str) != Some(comm) {
            self.comms.push(comm.to_string());
        }
        if self.prio.is_none() {
            self.prio = prio;
        }
    }
}

/// Extracts per-task programs from `p` under `o`.
pub fn extract(p: &Parsed, o: &Options) -> Extracted {
    let mut recs: Vec<&super::record::Record> = p
        .records
        .iter()
        .filter(|r| {
            o.from_ns.is_none_or(|f| r.time_ns >= f) && o.to_ns.is_none_or(|t| r.time_ns < t)
        })
        .collect();
    recs.sort_by_key(|r| r.time_ns);
    // lbsim's traces mark a wake-up from an interrupt (a timer) in the `lbsim_charge` that
    // follows its `sched_waking` on that CPU at that time: such a waking has no waking task,
    // as one with the kernel's `h`/`s` flags has none.
    let mut from_irq = vec![false; recs.len()];
    for i in 0..recs.len() {
        if let Ev::Charge { irq: true, .. } = recs[i].ev
            && let Some(j) = (0..i)
                .rev()
                .take_while(|&j| recs[j].time_ns == recs[i].time_ns)
                .find(|&j| {
                    recs[j].cpu == recs[i].cpu
                        && matches!(recs[j].ev, Ev::Wake { waking: true, .. })
                })
        {
            from_irq[j] = true;
        }
    }
    let t0 = o
        .from_ns
        .unwrap_or_else(|| recs.first().map_or(0, |r| r.time_ns));
    let end = recs.last().map_or(t0, |r| r.time_ns) - t0;
    // lbsim's traces say what they charged: then those charges are taken off, not assumed.
    let recorded_charges = recs
        .iter()
        .any(|r| matches!(r.ev, Ev::Charge { .. }))
        .then(|| {
            recs.iter().fold((0, 0), |(n, ns), r| match r.ev {
                Ev::Charge { cost_ns, .. } => (n + 1, u64::saturating_add(ns, cost_ns)),
                _ => (n, ns),
            })
        });
    let wake_cost_ns = if recorded_charges.is_some() {
        0
    } else {
        o.wake_cost_ns
    };
    // The capacities run time is scaled by: `capacity=`, else the trace's (1024 for a CPU it
    // gives none), else 1024.
    let nr_cpus = p.cpus();
    let (caps, capacity_source) = match (&o.capacity, p.capacities.is_empty()) {
        (Some(c), _) => (c.clone(), CapacitySource::Key),
        (None, false) => (
            (0..nr_cpus.max(p.capacities.keys().last().map_or(0, |c| c + 1)))
                .map(|c| p.capacities.get(&c).copied().unwrap_or(1024))
                .collect(),
            CapacitySource::Trace,
        ),
        (None, true) => (vec![1024; nr_cpus as usize], CapacitySource::Assumed),
    };

    // Pass 1: every task and its comms, to decide who is kept.
    let mut comms: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut saw = |pid: u32, comm: &str| {
        if pid != 0 {
            let c = comms.entry(pid).or_default();
            if !c.iter().any(|x| x == comm) {
                c.push(comm.to_string());
            }
        }
    };
    for r in &recs {
        match &r.ev {
            Ev::Switch {
                prev_pid,
                prev_comm,
                next_pid,
                next_comm,
                ..
            } => {
                if let Some(pp) = prev_pid {
                    saw(*pp, prev_comm.as_deref().unwrap_or(""));
                }
                saw(*next_pid, next_comm);
            }
            Ev::Wake { pid, comm, .. } | Ev::WakeupNew { pid, comm, .. } => saw(*pid, comm),
            Ev::Fork {
                child_pid,
                child_comm,
                ..
            } => saw(*child_pid, child_comm),
            Ev::Exit { pid } => saw(*pid, ""),
            Ev::Charge { .. } => {}
        }
    }
    let kept: BTreeSet<u32> = comms
        .iter()
        .filter(|(pid, cs)| {
            o.pids.as_ref().is_none_or(|ps| ps.contains(pid))
                && cs
                    .iter()
                    .filter(|c| !c.is_empty())
                    .any(|c| comm_matches(&o.comm, c))
        })
        .map(|(pid, _)| *pid)
        .collect();
    let mut out = Extracted {
        nr_cpus: p.cpus(),
        span_ns: end,
        events: recs.len() as u64,
        filtered_out: (comms.len() - kept.len()) as u64,
        wake_cost_ns,
        recorded_charges,
        capacities: caps.clone(),
        capacity_source,
        ..Extracted::default()
    };

    // Pass 2: the programs.
    let mut live: BTreeMap<u32, Live> = kept.iter().map(|&p| (p, Live::default())).collect();
    // With recorded charges, each CPU's scheduler work as lbsim queues it (Core::charge():
    // from the later of the charge and the work already queued; a switch adds its cost the
    // same way): work still unpaid at a switch is paid by the task switched in, not by the
    // one that left, as lbsim's run time counts it.
    let mut busy: BTreeMap<u32, u64> = BTreeMap::new();
    let recorded = recorded_charges.is_some();
    for (ri, r) in recs.iter().enumerate() {
        let t = r.time_ns - t0;
        let irq_waking = from_irq[ri];
        // A task current on a CPU before anything said it started: running since the window
        // starts.
        if let Some(l) = r
            .common_pid
            .filter(|&c| c != 0)
            .and_then(|c| live.get_mut(&c))
            .filter(|l| l.start.is_none())
        {
            l.start = Some(Start::At(0));
            l.live_at_start = true;
            l.run_since = Some(0);
            l.run_cpu = r.cpu;
            l.cpus.insert(r.cpu);
        }
        match &r.ev {
            Ev::Switch {
                prev_pid,
                prev_comm,
                prev_prio,
                prev_state,
                next_pid,
                next_comm,
                next_prio,
            } => {
                let spill = busy.get(&r.cpu).map_or(0, |b| b.saturating_sub(t));
                if recorded {
                    let b = busy.entry(r.cpu).or_default();
                    *b = (*b).max(t).saturating_add(o.switch_cost_ns);
                }
                if let Some(l) = prev_pid.filter(|&p| p != 0).and_then(|p| live.get_mut(&p)) {
                    l.note(prev_comm.as_deref().unwrap_or(""), *prev_prio);
                    if l.start.is_none() {
                        // Running when the window starts.
                        l.start = Some(Start::At(0));
                        l.live_at_start = true;
                        l.run_since = Some(0);
                        l.run_cpu = r.cpu;
                        l.cpus.insert(r.cpu);
                    }
                    if l.run_since.is_some() {
                        l.add_run(t, &caps);
                        l.run_since = None;
                        // Charged to it, paid after it left.
                        l.owed = l.owed.saturating_sub(spill);
                    }
                    let woken = std::mem::take(&mut l.woken_on_cpu);
                    l.woken_wait = None;
                    match prev_state {
                        LeftAs::Runnable => {}
                        // Woken between its dequeue and this switch: its wait is recorded
                        // and satisfied, so it leaves as a preempted task would, and the
                        // sched_wakeup that follows (it finds no block) is dropped.
                        LeftAs::Blocked if woken => {}
                        LeftAs::Blocked if !l.exited => {
                            l.flush_last(t, &caps);
                            l.blocked_at = Some(t);
                        }
                        LeftAs::Blocked => {}
                        LeftAs::Dead => {
                            if !l.exited {
                                l.flush_last(t, &caps);
                                l.steps.push(Step::Exit);
                                l.exited = true;
                            }
                        }
                    }
                }
                if let Some(l) = live.get_mut(next_pid).filter(|_| *next_pid != 0) {
                    l.note(next_comm, Some(*next_prio));
                    if l.start.is_none() {
                        l.start = Some(Start::At(0));
                        l.live_at_start = true;
                    }
                    if let Some(b) = l.blocked_at.take() {
                        l.missing_wakes += 1;
                        l.steps.push(Step::Sleep(t - b));
                    }
                    l.run_since = Some(t);
                    l.run_cpu = r.cpu;
                    l.owed = l
                        .owed
                        .saturating_add(o.switch_cost_ns.saturating_add(spill));
                    l.cpus.insert(r.cpu);
                }
            }
            Ev::Wake {
                pid,
                comm,
                prio,
                waking,
            } => {
                let waker = r
                    .common_pid
                    .filter(|_| !irq_waking)
                    .filter(|&w| w != 0 && w != *pid && kept.contains(&w))
                    .filter(|w| live.get(w).is_some_and(|x| x.run_since.is_some()));
                let Some(l) = live.get_mut(pid) else {
                    continue;
                };
                l.note(comm, Some(*prio));
                let first = l.start.is_none();
                let on_cpu = l.run_since.is_some();
                if !first && l.blocked_at.is_none() {
                    // A sched_waking of a task still on its CPU: try_to_wake_up() traces it
                    // only once ttwu_state_match() has found it in a sleeping state, so it
                    // had reached a blocking point and is woken before __schedule() took it
                    // off (ttwu_runnable()). That wait is kept, satisfied by the waker's post
                    // at this point of both programs; the recording charged no wake-up cost
                    // for it. A sched_wakeup after its sched_waking, a waking from outside
                    // the traced tasks or of a task preempted while runnable is dropped.
                    if !*waking && on_cpu {
                        // ttwu_runnable()'s sched_wakeup: the task goes on running.
                        l.woken_on_cpu = false;
                        l.woken_wait = None;
                    }
                    match waker.filter(|_| *waking && on_cpu) {
                        Some(w) => {
                            let before = l.steps.len();
                            l.flush(t, &caps);
                            l.woken_on_cpu = true;
                            l.woken_wait = Some((t, (l.steps.len() > before).then_some(before)));
                            l.steps.push(Step::Wait);
                            let wl = live.get_mut(&w).expect("kept");
                            wl.flush(t, &caps);
                            wl.last_wake = Some((t, wl.steps.len()));
                            wl.steps.push(Step::Wake(*pid));
                        }
                        None if *waking => out.wakes_of_running += 1,
                        None => {}
                    }
                    continue;
                }
                let untraced = !irq_waking
                    && r.common_pid
                        .is_some_and(|w| w != 0 && w != *pid && !kept.contains(&w));
                // No task woke it: a waking in interrupt context (the `h`/`s` flags, lbsim's
                // `irq=1`) or from the idle task (an interrupt on an idle CPU), a timer's.
                let interrupt = irq_waking || r.common_pid.is_none_or(|w| w == 0);
                if let Some(w) = waker {
                    let wl = live.get_mut(&w).expect("kept");
                    wl.flush(t, &caps);
                    wl.last_wake = Some((t, wl.steps.len()));
                    wl.steps.push(Step::Wake(*pid));
                    wl.owed = wl.owed.saturating_add(wake_cost_ns);
                }
                let l = live.get_mut(pid).expect("kept");
                if first {
                    l.live_at_start = false;
                    l.start = Some(Start::At(if waker.is_some() { 0 } else { t }));
                    if waker.is_some() {
                        l.steps.push(Step::Wait);
                    }
                } else {
                    let b = l.blocked_at.take().expect("blocked");
                    l.steps.push(if waker.is_some() {
                        Step::Wait
                    } else if interrupt {
                        // Absolute or relative: decided once the task's interrupt wake-ups
                        // are all known.
                        l.irq_sleeps.push((t, t - b));
                        Step::Timer(t)
                    } else {
                        Step::Sleep(t - b)
                    });
                }
                if untraced {
                    l.untraced_wakes += 1;
                }
            }
            Ev::WakeupNew { pid, comm, prio } => {
                if let Some(l) = live.get_mut(pid) {
                    l.note(comm, Some(*prio));
                    if l.start.is_none() {
                        l.start = Some(Start::At(t));
                    }
                }
            }
            Ev::Fork {
                parent_pid,
                child_pid,
                child_comm,
            } => {
                if !kept.contains(child_pid) || live[child_pid].start.is_some() {
                    continue;
                }
                let by = r
                    .common_pid
                    .filter(|&c| c == *parent_pid && c != 0)
                    .filter(|c| live.get(c).is_some_and(|x| x.run_since.is_some()));
                if let Some(pp) = by {
                    let pl = live.get_mut(&pp).expect("kept");
                    pl.flush(t, &caps);
                    pl.steps.push(Step::Spawn(*child_pid));
                }
                let l = live.get_mut(child_pid).expect("kept");
                l.note(child_comm, None);
                l.start = Some(by.map_or(Start::At(t), Start::SpawnedBy));
            }
            Ev::Charge {
                cost_ns,
                newidle,
                sync,
                ..
            } => {
                if !*newidle {
                    let b = busy.entry(r.cpu).or_default();
                    *b = (*b).max(t).saturating_add(*cost_ns);
                }
                // Charged to the task current on the CPU, paid from this point of its run
                // (a newly idle balance: before the switch that ends the burst); what it
                // has not paid when it leaves goes to the next (above).
                if let Some(l) = r
                    .common_pid
                    .filter(|&c| c != 0)
                    .and_then(|c| live.get_mut(&c))
                    .filter(|l| l.run_since.is_some())
                {
                    let mut owed = *cost_ns;
                    if *newidle {
                        l.newidle = l.newidle.saturating_add(*cost_ns);
                        // Woken on its CPU during this balance: its wait is where it blocked,
                        // when the balance began, not at the waking; the balance's part
                        // before the waking comes off the run before the wait.
                        if let Some((tw, run)) = l.woken_wait.take() {
                            let pre = tw.saturating_sub(t.saturating_sub(*cost_ns)).min(owed);
                            owed -= pre;
                            // The burst is work: the balance's part, time on this CPU, is
                            // scaled as the burst was.
                            let pre =
                                (u128::from(pre) * u128::from(cap_of(&caps, r.cpu)) / 1024) as u64;
                            if let Some(i) = run
                                && let Some(&Step::Run(n)) = l.steps.get(i)
                            {
                                if n > pre {
                                    l.steps[i] = Step::Run(n - pre);
                                } else {
                                    l.steps.remove(i);
                                    // The steps after it moved down by one.
                                    l.last_wake = match l.last_wake {
                                        Some((_, j)) if j == i => None,
                                        Some((at, j)) if j > i => Some((at, j - 1)),
                                        w => w,
                                    };
                                }
                            }
                        }
                    }
                    l.owed = l.owed.saturating_add(owed);
                    // The wake-up just traced passed WF_SYNC.
                    if *sync
                        && let Some((at, i)) = l.last_wake
                        && at == t
                        && let Some(&Step::Wake(p)) = l.steps.get(i)
                    {
                        l.steps[i] = Step::WakeSync(p);
                    }
                }
            }
            Ev::Exit { pid } => {
                if let Some(l) = live.get_mut(pid) {
                    if l.start.is_none() {
                        l.start = Some(Start::At(0));
                        l.live_at_start = true;
                    }
                    if !l.exited {
                        l.flush_last(t, &caps);
                        l.steps.push(Step::Exit);
                        l.exited = true;
                    }
                }
            }
        }
    }
    for (pid, mut l) in live {
        if !l.exited {
            l.flush(end, &caps);
        }
        let prio = l.prio.unwrap_or(120);
        if !(100..=139).contains(&prio) {
            out.rt_tasks += 1;
        }
        let absolute = match o.sleeps {
            Sleeps::Absolute => !l.irq_sleeps.is_empty(),
            Sleeps::Relative => false,
            Sleeps::Auto => is_periodic(&l.irq_sleeps),
        };
        if !absolute {
            let mut irq = l.irq_sleeps.iter();
            for s in &mut l.steps {
                if let Step::Timer(_) = s {
                    let (_, len) = irq.next().expect("one per timer step");
                    *s = Step::Sleep(*len);
                }
            }
        }
        out.tasks.push(TaskProgram {
            pid,
            comm: l
                .comms
                .last()
                .cloned()
                .unwrap_or_else(|| format!("pid{pid}")),
            prio,
            start: l.start.unwrap_or(Start::At(0)),
            steps: l.steps,
            cpus: l.cpus,
            live_at_start: l.live_at_start,
            untraced_wakes: l.untraced_wakes,
            missing_wakes: l.missing_wakes,
            received_ns: l.received.saturating_sub(l.newidle),
            absolute,
        });
    }
    out
}

/// The capacity of `cpu` in `caps` (1024 past its end).
fn cap_of(caps: &[u64], cpu: u32) -> u64 {
    caps.get(cpu as usize).copied().unwrap_or(1024)
}

/// Whether a task's interrupt wake-ups (`(wake-up time, sleep length)`, in trace order) are
/// those of a periodic timer, whose expiries are fixed in time whatever the task does between
/// them: at least three, and of the intervals between two consecutive ones, three in four or
/// more on the period's grid (within a tolerance of a whole number of periods: a period
/// missed while the task ran late shows as a double one; the others are where a timer that
/// re-bases on a missed expiry, rt-app's relative `timer`, moved its grid), the period their
/// median interval, the tolerance a quarter of it but at least 50 us (a wake-up is traced when
/// the interrupt is taken: late by up to the default `timer_slack_ns`, 50 us, that a fair
/// task's hrtimer may fire late by, and by the exit latency of the idle state the CPU was in,
/// about 1.5 ms for hikey960's cluster-off state, so that the intervals of a 10 ms timer's
/// wake-ups there are 8.5 to 11.5 ms); and the sleeps not clearly steadier than the intervals
/// on the grid (the intervals' mean distance from it at most twice the sleeps' mean distance
/// from their median). A task that sleeps a fixed time after its work has steady sleeps and
/// intervals that vary with its run; a periodic task has steady intervals and sleeps that
/// take up what its run left of the period. Where both are as steady (a task whose run never
/// varies, or whose wake-ups vary only by the interrupt's latency) it is taken as periodic:
/// a relative sleep of the recorded length holds the recording's wake-up latency, which the
/// replay adds again at each sleep, so its periods drift, while a timer's expiries do not.
pub fn is_periodic(irq_sleeps: &[(u64, u64)]) -> bool {
    if irq_sleeps.len() < 3 {
        return false;
    }
    let intervals: Vec<u64> = irq_sleeps
        .windows(2)
        .map(|w| w[1].0.saturating_sub(w[0].0))
        .collect();
    let median = |v: &[u64]| {
        let mut v = v.to_vec();
        v.sort_unstable();
        v[v.len() / 2]
    };
    let period = median(&intervals);
    if period == 0 {
        return false;
    }
    let tol = (period / 4).max(50_000);
    let on_grid: Vec<u64> = intervals
        .iter()
        .map(|&i| {
            // The nearest whole number of periods (at least one), rounded without overflow
            // for any recorded interval.
            let k = (i / period + u64::from(i % period >= period - period / 2)).max(1);
            i.abs_diff(k.saturating_mul(period))
        })
        .filter(|&d| d <= tol)
        .collect();
    if on_grid.len() * 4 < intervals.len() * 3 {
        return false;
    }
    let off_grid: u128 = on_grid.iter().map(|&d| u128::from(d)).sum();
    let lens: Vec<u64> = irq_sleeps.iter().map(|s| s.1).collect();
    let m = median(&lens);
    let off_len: u128 = lens.iter().map(|&l| u128::from(l.abs_diff(m))).sum();
    // Mean against mean.
    off_grid * lens.len() as u128 <= 2 * off_len * on_grid.len() as u128
}

/// The workload events of `t`'s steps: `sem(pid)` is a traced task's wake-up semaphore,
/// `task(pid)` its task.
pub fn events(
    t: &TaskProgram,
    sem: &dyn Fn(u32) -> crate::ids::SemId,
    task: &dyn Fn(u32) -> crate::ids::TaskRef,
) -> Vec<Event> {
    let mut ev = Vec::with_capacity(t.steps.len() + 1);
    // The timer's expiries are the recorded wake-up times: each period is the time since the
    // previous expiry, the first counted from the task's start (rt-app's `t_first`, the
    // interpreter's `start_ns`: its start time, 0 for a spawned task).
    let mut expiry = match t.start {
        Start::At(ns) => ns,
        Start::SpawnedBy(_) => 0,
    };
    for s in &t.steps {
        ev.push(match *s {
            Step::Timer(at) => {
                let period_ns = at.saturating_sub(expiry);
                expiry = expiry.max(at);
                Event::Timer {
                    timer: crate::ids::TimerId::Local(0),
                    period_ns,
                }
            }
            Step::Run(ns) => Event::Run { work_ns: ns },
            Step::Wake(p) => Event::SemPost(sem(p)),
            Step::WakeSync(p) => Event::SemPostSync(sem(p)),
            Step::Wait => Event::SemWait(sem(t.pid)),
            Step::Sleep(ns) => Event::Sleep { ns },
            Step::Spawn(p) => Event::Spawn(task(p)),
            Step::Exit => Event::Exit,
        });
    }
    if ev.last() != Some(&Event::Exit) {
        ev.push(Event::Exit);
    }
    ev
}
