//! rt-app JSON → [`WorkloadSpec`]. Follows rt-app_parse_config.c: parse_global(),
//! parse_task_data(), parse_task_phase_data(), parse_task_event_data(), obj_is_event().

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::ids::{CondId, CpusetId, MutexId, SemId, TemplateId, TimerId};
use crate::limits::{Room, Size};
use crate::program::{Event, Loops, Phase, Policy, Program, SchedChange};
use crate::rtapp::json::{self, Key, Node, Spanned};
use crate::rtapp::lenient;
use crate::rtapp::{RtappError, RtappReport};
use crate::spec::{Part, TaskSpec, Warning, WorkloadSpec};
use crate::sync::TimerSpec;

/// Bytes of `mem`/`iorun`/`memrun` per ns of work (a memset-speed copy, 10 GB/s).
pub(crate) const MEM_BYTES_PER_NS: u64 = 10;

/// Largest duration accepted, in microseconds (a day): keeps `us * 1000` far from overflow.
const MAX_US: i64 = 86_400_000_000;

/// Keys of a task object besides events.
const TASK_KEYS: &[&str] = &[
    "instance",
    "delay",
    "loop",
    "phases",
    "cpus",
    "policy",
    "priority",
    "dl-runtime",
    "dl-period",
    "dl-deadline",
    "period",
    "deadline",
    "util_min",
    "util_max",
    "taskgroup",
    "nodes_membind",
    "membind_nodes",
];

/// Keys of a phase object besides events.
const PHASE_KEYS: &[&str] = &[
    "loop",
    "cpus",
    "policy",
    "priority",
    "dl-runtime",
    "dl-period",
    "dl-deadline",
    "util_min",
    "util_max",
    "taskgroup",
    "nodes_membind",
    "membind_nodes",
];

const EVENT_NAMES: &str = "run, runtime, sleep, timer, lock, unlock, wait, signal, broad, sync, barrier, suspend, resume, yield, fork, mem, iorun, memrun, sem_post, sem_wait";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    RunTime,
    Run,
    Sleep,
    MemRun,
    Mem,
    IoRun,
    Lock,
    Unlock,
    Signal,
    Broad,
    Wait,
    Sync,
    Barrier,
    Timer,
    Resume,
    Suspend,
    Yield,
    Fork,
    SemPost,
    SemWait,
}

/// Classifies a key by prefix, in the order rt-app tests them (`runtime` before `run`,
/// `memrun` before `mem`), so that numbered and repeated keys all work.
fn event_kind(key: &str) -> Option<Kind> {
    const TABLE: &[(&str, Kind)] = &[
        ("runtime", Kind::RunTime),
        ("run", Kind::Run),
        ("sleep", Kind::Sleep),
        ("memrun", Kind::MemRun),
        ("mem", Kind::Mem),
        ("iorun", Kind::IoRun),
        ("lock", Kind::Lock),
        ("unlock", Kind::Unlock),
        ("signal", Kind::Signal),
        ("broad", Kind::Broad),
        ("wait", Kind::Wait),
        ("sync", Kind::Sync),
        ("barrier", Kind::Barrier),
        ("timer", Kind::Timer),
        ("resume", Kind::Resume),
        ("suspend", Kind::Suspend),
        ("yield", Kind::Yield),
        ("fork", Kind::Fork),
        ("sem_post", Kind::SemPost),
        ("sem_wait", Kind::SemWait),
    ];
    TABLE
        .iter()
        .find(|(p, _)| key.starts_with(p))
        .map(|&(_, k)| k)
}

struct TaskDef {
    name: String,
    instances: u32,
    delay_ns: u64,
    policy: Policy,
    nice: i32,
    cpus: Option<CpusetId>,
    custom_slice_ns: Option<u64>,
    /// The thread-level `taskgroup`: the cgroup every instance runs in.
    taskgroup: Option<String>,
    program: Program,
    phase_costs: Vec<(u64, u64)>,
}

struct Parser<'a> {
    src: &'a str,
    path: &'a str,
    spec: WorkloadSpec,
    warnings: Vec<Warning>,
    mutexes: BTreeMap<String, MutexId>,
    conds: BTreeMap<String, CondId>,
    barriers: BTreeMap<String, u32>,
    sems: BTreeMap<String, SemId>,
    timers: BTreeMap<String, u32>,
    def_names: Vec<String>,
    default_policy: Policy,
    cumulative_slack: bool,
    log_basename: String,
}

type R<T> = Result<T, RtappError>;

fn ctx(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

impl<'a> Parser<'a> {
    fn err(&self, at: usize, context: &str, message: impl Into<String>) -> RtappError {
        let (line, column) = json::line_col(self.src, at);
        RtappError::Invalid {
            path: self.path.to_string(),
            line,
            column,
            context: context.to_string(),
            message: message.into(),
        }
    }

    /// Object `obj` (at `context`) as rt-app's json-c holds it ([`json::json_c_object`]), with
    /// a warning for each key given twice: the later value replaces the earlier, in its place.
    fn json_c_object(
        &mut self,
        obj: &[(Key, Spanned)],
        context: &str,
        keep_repeats: impl Fn(&str) -> bool,
    ) -> Vec<(Key, Spanned)> {
        let (out, replaced) = json::json_c_object(obj, keep_repeats);
        for (first, later) in replaced {
            let (line, _) = json::line_col(self.src, first.at);
            let kc = ctx(context, &later.name);
            self.warn(
                later.at,
                &kc,
                format!(
                    "{:?} given twice (first at line {line}): as rt-app reads the file (json-c), \
                     the later value replaces the earlier, in the earlier's place; rename one \
                     to keep both",
                    later.name
                ),
            );
        }
        out
    }

    fn warn(&mut self, at: usize, context: &str, message: impl Into<String>) {
        let (line, column) = json::line_col(self.src, at);
        self.warnings.push(Warning {
            source: self.path.to_string(),
            location: Some((line, column)),
            message: format!("{context}: {}", message.into()),
        });
    }

    fn int(&self, v: &Spanned, c: &str) -> R<i64> {
        match v.node {
            Node::Int(i) => Ok(i),
            Node::UInt(_) => Err(self.err(v.at, c, "integer too large")),
            ref n => Err(self.err(
                v.at,
                c,
                format!("expected an integer, found {}", n.type_name()),
            )),
        }
    }

    /// A non-negative duration in microseconds, as ns.
    fn us(&self, v: &Spanned, c: &str) -> R<u64> {
        let i = self.int(v, c)?;
        if i < 0 {
            return Err(self.err(
                v.at,
                c,
                format!("expected a duration in microseconds >= 0, found {i}"),
            ));
        }
        if i > MAX_US {
            return Err(self.err(v.at, c, format!("{i} us is longer than a day")));
        }
        Ok(i as u64 * 1000)
    }

    fn string<'v>(&self, v: &'v Spanned, c: &str) -> R<&'v str> {
        match &v.node {
            Node::Str(s) => Ok(s),
            n => Err(self.err(
                v.at,
                c,
                format!("expected a string, found {}", n.type_name()),
            )),
        }
    }

    fn boolean(&self, v: &Spanned, c: &str) -> R<bool> {
        match v.node {
            Node::Bool(b) => Ok(b),
            ref n => Err(self.err(
                v.at,
                c,
                format!("expected true or false, found {}", n.type_name()),
            )),
        }
    }

    fn object<'v>(&self, v: &'v Spanned, c: &str) -> R<&'v [(Key, Spanned)]> {
        match &v.node {
            Node::Object(o) => Ok(o),
            n => Err(self.err(
                v.at,
                c,
                format!("expected an object, found {}", n.type_name()),
            )),
        }
    }

    /// A string field of an event object, with rt-app's default when missing.
    fn field_str(
        &mut self,
        obj: &[(Key, Spanned)],
        name: &str,
        default: &str,
        at: usize,
        c: &str,
    ) -> R<String> {
        match obj.iter().rev().find(|(k, _)| k.name == name) {
            Some((k, v)) => Ok(self.string(v, &ctx(c, &k.name))?.to_string()),
            None => {
                self.warn(at, c, format!("no \"{name}\": rt-app uses \"{default}\""));
                Ok(default.to_string())
            }
        }
    }

    fn policy(&self, v: &Spanned, c: &str) -> R<Policy> {
        match self.string(v, c)? {
            "SCHED_OTHER" | "SCHED_NORMAL" => Ok(Policy::Normal),
            "SCHED_BATCH" => Ok(Policy::Batch),
            "SCHED_IDLE" => Ok(Policy::Idle),
            p @ ("SCHED_FIFO" | "SCHED_RR" | "SCHED_DEADLINE") => Err(self.err(
                v.at,
                c,
                format!("{p} is not modelled: lbsim simulates the fair class only (SCHED_OTHER, SCHED_BATCH, SCHED_IDLE)"),
            )),
            p => Err(self.err(
                v.at,
                c,
                format!("unknown policy {p:?} (valid: SCHED_OTHER, SCHED_BATCH, SCHED_IDLE)"),
            )),
        }
    }

    fn nice(&self, v: &Spanned, c: &str) -> R<i32> {
        let i = self.int(v, c)?;
        if !(-20..=19).contains(&i) {
            return Err(self.err(v.at, c, format!("priority {i} is not a nice value in -20..=19 (rt-app passes it to setpriority() for SCHED_OTHER)")));
        }
        Ok(i as i32)
    }

    fn cpus(&mut self, v: &Spanned, c: &str) -> R<CpusetId> {
        let Node::Array(items) = &v.node else {
            return Err(self.err(
                v.at,
                c,
                format!(
                    "expected an array of CPU numbers, found {}",
                    v.node.type_name()
                ),
            ));
        };
        if items.is_empty() {
            return Err(self.err(v.at, c, "empty CPU list (sched_setaffinity would fail)"));
        }
        let mut cpus = Vec::with_capacity(items.len());
        for it in items {
            let i = self.int(it, c)?;
            if !(0..=i64::from(u16::MAX)).contains(&i) {
                return Err(self.err(it.at, c, format!("CPU {i} is out of range")));
            }
            cpus.push(i as u32);
        }
        Ok(self.spec.add_cpuset(cpus))
    }

    fn mutex(&mut self, name: &str) -> MutexId {
        if let Some(&m) = self.mutexes.get(name) {
            return m;
        }
        let m = self.spec.sync.add_mutex(name);
        self.mutexes.insert(name.to_string(), m);
        m
    }

    fn cond(&mut self, name: &str) -> CondId {
        if let Some(&c) = self.conds.get(name) {
            return c;
        }
        let c = self.spec.sync.add_cond(name);
        self.conds.insert(name.to_string(), c);
        c
    }

    fn sem(&mut self, name: &str) -> SemId {
        if let Some(&s) = self.sems.get(name) {
            return s;
        }
        let s = self.spec.sync.add_sem(name, 0);
        self.sems.insert(name.to_string(), s);
        s
    }

    /// rt-app: each reference to a barrier adds the referencing task's instance count to its
    /// users (init_barrier_resource() starts `waiting` at -1; parse_task_event_data() adds
    /// `num_instances` per event).
    fn barrier(&mut self, name: &str, instances: u32) -> crate::ids::BarrierId {
        if let Some(&b) = self.barriers.get(name) {
            self.spec.sync.barriers[b as usize].users += instances;
            return crate::ids::BarrierId(b);
        }
        let b = self.spec.sync.add_barrier(name, instances);
        self.barriers.insert(name.to_string(), b.0);
        b
    }

    fn mem_work(&mut self, bytes: u64, at: usize, c: &str, what: &str) -> Event {
        let work_ns = bytes.div_ceil(MEM_BYTES_PER_NS);
        self.warn(
            at,
            c,
            format!("{what} of {bytes} bytes is simulated as {work_ns} ns of CPU work (10 bytes/ns); memory and I/O are not modelled"),
        );
        Event::Run { work_ns }
    }

    // One argument per piece of the task's context an event may need; a struct would only
    // rename them.
    #[allow(clippy::too_many_arguments)]
    fn event(
        &mut self,
        kind: Kind,
        key: &Key,
        v: &Spanned,
        c: &str,
        def: &str,
        instances: u32,
        local_timers: &mut Vec<TimerSpec>,
        costs: &mut (u64, u64),
    ) -> R<Vec<Event>> {
        Ok(match kind {
            Kind::Run => {
                let work_ns = self.us(v, c)?;
                costs.0 += work_ns / 1000;
                vec![Event::Run { work_ns }]
            }
            Kind::RunTime => {
                let ns = self.us(v, c)?;
                costs.0 += ns / 1000;
                vec![Event::RunWall { ns }]
            }
            Kind::Sleep => vec![Event::Sleep { ns: self.us(v, c)? }],
            Kind::Mem | Kind::IoRun => {
                let bytes = self.int(v, c)?;
                if bytes < 0 {
                    return Err(self.err(
                        v.at,
                        c,
                        format!("expected a byte count >= 0, found {bytes}"),
                    ));
                }
                let what = if kind == Kind::Mem { "mem" } else { "iorun" };
                vec![self.mem_work(bytes as u64, key.at, c, what)]
            }
            Kind::MemRun => {
                let obj = self.object(v, c)?;
                let mut size = 0u64;
                let mut count = 1u64;
                for (k, fv) in obj {
                    let fc = ctx(c, &k.name);
                    match k.name.as_str() {
                        "size" | "count" => {
                            let n = self.int(fv, &fc)?;
                            if n < 0 {
                                return Err(self.err(fv.at, &fc, "expected a value >= 0"));
                            }
                            if k.name == "size" {
                                size = n as u64;
                            } else {
                                count = n as u64;
                            }
                        }
                        "type" | "pattern" | "ref" => {
                            self.string(fv, &fc)?;
                        }
                        "stride" => {
                            self.int(fv, &fc)?;
                        }
                        other => {
                            return Err(self.err(
                                k.at,
                                &fc,
                                format!("unknown memrun key {other:?} (valid: type, size, count, stride, pattern, ref)"),
                            ));
                        }
                    }
                }
                vec![self.mem_work(size.saturating_mul(count), key.at, c, "memrun")]
            }
            Kind::Lock => vec![Event::Lock(self.named(v, c).map(|n| self.mutex(&n))?)],
            Kind::Unlock => vec![Event::Unlock(self.named(v, c).map(|n| self.mutex(&n))?)],
            Kind::Signal => vec![Event::Signal(self.named(v, c).map(|n| self.cond(&n))?)],
            Kind::Broad => vec![Event::Broadcast(self.named(v, c).map(|n| self.cond(&n))?)],
            Kind::Wait | Kind::Sync => {
                let obj = self.object(v, c)?.to_vec();
                for (k, _) in &obj {
                    if k.name != "ref" && k.name != "mutex" {
                        return Err(self.err(
                            k.at,
                            &ctx(c, &k.name),
                            "unknown key (valid: ref, mutex)",
                        ));
                    }
                }
                let r = self.field_str(&obj, "ref", "unknown", key.at, c)?;
                let m = self.field_str(&obj, "mutex", "unknown", key.at, c)?;
                let (cond, mutex) = (self.cond(&r), self.mutex(&m));
                if kind == Kind::Sync {
                    vec![Event::Signal(cond), Event::Wait { cond, mutex }]
                } else {
                    vec![Event::Wait { cond, mutex }]
                }
            }
            Kind::Barrier => {
                let n = self.named(v, c)?;
                vec![Event::Barrier(self.barrier(&n, instances))]
            }
            Kind::Timer => {
                let obj = self.object(v, c)?.to_vec();
                let mut period_ns = 0;
                let mut absolute = false;
                for (k, fv) in &obj {
                    let fc = ctx(c, &k.name);
                    match k.name.as_str() {
                        "ref" => {
                            self.string(fv, &fc)?;
                        }
                        "period" => period_ns = self.us(fv, &fc)?,
                        "mode" => match self.string(fv, &fc)? {
                            "relative" => absolute = false,
                            "absolute" => absolute = true,
                            m => {
                                return Err(self.err(
                                    fv.at,
                                    &fc,
                                    format!("unknown timer mode {m:?} (valid: relative, absolute)"),
                                ));
                            }
                        },
                        _ => {
                            return Err(self.err(
                                k.at,
                                &fc,
                                "unknown key (valid: ref, period, mode)",
                            ));
                        }
                    }
                }
                if !obj.iter().any(|(k, _)| k.name == "period") {
                    self.warn(key.at, c, "no \"period\": rt-app uses 0");
                }
                let r = self.field_str(&obj, "ref", "unknown", key.at, c)?;
                costs.1 += period_ns / 1000;
                let timer = if r.starts_with("unique") {
                    let i = match local_timers.iter().position(|t| t.name == r) {
                        Some(i) => i,
                        None => {
                            local_timers.push(TimerSpec {
                                name: r.clone(),
                                relative: true,
                            });
                            local_timers.len() - 1
                        }
                    };
                    if absolute {
                        local_timers[i].relative = false;
                    }
                    TimerId::Local(i as u32)
                } else {
                    let i = match self.timers.get(&r) {
                        Some(&i) => i,
                        None => {
                            let i = self.spec.sync.add_timer(r.clone(), true);
                            self.timers.insert(r.clone(), i);
                            i
                        }
                    };
                    if absolute {
                        self.spec.sync.timers[i as usize].relative = false;
                    }
                    TimerId::Shared(i)
                };
                vec![Event::Timer { timer, period_ns }]
            }
            Kind::Suspend | Kind::Resume => {
                let mut n = self.string(v, c)?.to_string();
                if n.is_empty() {
                    if kind == Kind::Resume {
                        return Err(self.err(v.at, c, "resume needs the name of the task to wake"));
                    }
                    // workgen fills an empty suspend with the thread's own name.
                    n = def.to_string();
                }
                let (m, cv) = (self.mutex(&n), self.cond(&n));
                if kind == Kind::Suspend {
                    vec![
                        Event::Lock(m),
                        Event::Wait { cond: cv, mutex: m },
                        Event::Unlock(m),
                    ]
                } else {
                    vec![Event::Lock(m), Event::Broadcast(cv), Event::Unlock(m)]
                }
            }
            Kind::Yield => vec![Event::Yield],
            Kind::Fork => {
                let n = self.named(v, c)?;
                match self.def_names.iter().position(|d| *d == n) {
                    Some(i) => vec![Event::Fork(TemplateId(i as u32))],
                    None => {
                        return Err(self.err(
                            v.at,
                            c,
                            format!(
                                "fork of unknown task {n:?} (tasks: {})",
                                self.def_names.join(", ")
                            ),
                        ));
                    }
                }
            }
            Kind::SemPost => vec![Event::SemPost(self.named(v, c).map(|n| self.sem(&n))?)],
            Kind::SemWait => vec![Event::SemWait(self.named(v, c).map(|n| self.sem(&n))?)],
        })
    }

    fn named(&self, v: &Spanned, c: &str) -> R<String> {
        Ok(self.string(v, c)?.to_string())
    }

    /// Properties shared by task and phase objects that lbsim accepts but does not model.
    fn unmodelled(&mut self, k: &Key, v: &Spanned, c: &str, policy_is_cfs: bool) -> R<()> {
        match k.name.as_str() {
            "util_min" | "util_max" => {
                let i = self.int(v, c)?;
                if !(-1..=1024).contains(&i) {
                    return Err(self.err(v.at, c, format!("{i} is outside 0..=1024")));
                }
                self.warn(k.at, c, "uclamp is not modelled; ignored");
            }
            "nodes_membind" | "membind_nodes" => {
                if !matches!(v.node, Node::Array(_)) {
                    return Err(self.err(v.at, c, "expected an array of NUMA nodes"));
                }
                self.warn(k.at, c, "NUMA memory binding is not modelled; ignored");
            }
            "dl-period" | "dl-deadline" | "period" | "deadline" => {
                self.int(v, c)?;
                if policy_is_cfs {
                    self.warn(k.at, c, "only meaningful for SCHED_DEADLINE; ignored");
                }
            }
            _ => unreachable!("not an unmodelled key"),
        }
        Ok(())
    }

    /// Events and properties of one phase object (or of a task without `phases`).
    #[allow(clippy::too_many_arguments)]
    fn phase(
        &mut self,
        name: &str,
        obj: &[(Key, Spanned)],
        at: usize,
        c: &str,
        def: &str,
        instances: u32,
        local_timers: &mut Vec<TimerSpec>,
        is_task_level: bool,
    ) -> R<(Phase, (u64, u64))> {
        let mut events = Vec::new();
        let mut costs = (0u64, 0u64);
        let mut loops = Loops::Count(1);
        let mut cpus = None;
        let mut policy = None;
        let mut nice = None;
        let mut taskgroup = None;
        for (k, v) in obj {
            let kc = ctx(c, &k.name);
            if let Some(kind) = event_kind(&k.name) {
                let evs = self.event(kind, k, v, &kc, def, instances, local_timers, &mut costs)?;
                events.extend(evs);
                continue;
            }
            if is_task_level {
                // Task-level properties were handled by the caller.
                continue;
            }
            match k.name.as_str() {
                "loop" => {
                    let n = self.int(v, &kc)?;
                    loops = if n > 0 {
                        Loops::Count(n as u64)
                    } else {
                        self.warn(k.at, &kc, format!("a phase loop of {n} never reaches its count in rt-app: the phase repeats forever"));
                        Loops::Forever
                    };
                }
                "cpus" => cpus = Some(self.cpus(v, &kc)?),
                "policy" => policy = Some(self.policy(v, &kc)?),
                "priority" => nice = Some(self.nice(v, &kc)?),
                "dl-runtime" => {
                    self.int(v, &kc)?;
                    self.warn(
                        k.at,
                        &kc,
                        "a phase-level custom slice is not modelled; ignored",
                    );
                }
                "taskgroup" => taskgroup = self.taskgroup(v, &kc)?,
                "util_min" | "util_max" | "nodes_membind" | "membind_nodes" | "dl-period"
                | "dl-deadline" => self.unmodelled(k, v, &kc, true)?,
                other => {
                    return Err(self.err(
                        k.at,
                        &kc,
                        format!(
                            "unknown key {other:?} (events: {EVENT_NAMES}; phase properties: {})",
                            PHASE_KEYS.join(", ")
                        ),
                    ));
                }
            }
        }
        if events.is_empty() {
            return Err(self.err(
                at,
                c,
                "no events found (rt-app: \"Task must have events or it's useless\")",
            ));
        }
        let sched = match (policy, nice) {
            (None, None) => None,
            (Some(Policy::Idle), _) => Some(SchedChange {
                policy: Some(Policy::Idle),
                nice: None,
            }),
            (Some(p), n) => Some(SchedChange {
                policy: Some(p),
                nice: Some(n.unwrap_or(0)),
            }),
            (None, n) => Some(SchedChange {
                policy: None,
                nice: n,
            }),
        };
        Ok((
            Phase {
                name: name.to_string(),
                loops,
                events,
                cpus,
                sched,
                taskgroup,
            },
            costs,
        ))
    }

    fn task(&mut self, name: &str, key: &Key, obj: &[(Key, Spanned)]) -> R<TaskDef> {
        let c = ctx("tasks", name);
        let obj = &self.json_c_object(obj, &c, |k| event_kind(k).is_some());
        // rt-app reads the instance count before the events (barrier users depend on it).
        let mut instances = 1u32;
        for (k, v) in obj {
            let kc = ctx(&c, &k.name);
            if k.name == "instance" {
                let n = self.int(v, &kc)?;
                if !(0..=1_000_000).contains(&n) {
                    return Err(self.err(
                        v.at,
                        &kc,
                        format!("instance {n} is outside 0..=1000000"),
                    ));
                }
                instances = n as u32;
            }
        }
        let mut delay_ns = 0;
        let mut loop_value: Option<i64> = None;
        let mut cpus = None;
        let mut policy = self.default_policy;
        let mut nice: Option<(i32, usize)> = None;
        let mut custom_slice_ns = None;
        let mut taskgroup = None;
        let mut phases_node: Option<(&Key, &Spanned)> = None;
        for (k, v) in obj {
            let kc = ctx(&c, &k.name);
            if event_kind(&k.name).is_some() {
                continue;
            }
            match k.name.as_str() {
                "instance" => {}
                "delay" => delay_ns = self.us(v, &kc)?,
                "loop" => loop_value = Some(self.int(v, &kc)?),
                "phases" => phases_node = Some((k, v)),
                "cpus" => cpus = Some(self.cpus(v, &kc)?),
                "policy" => policy = self.policy(v, &kc)?,
                "priority" => nice = Some((self.nice(v, &kc)?, k.at)),
                "dl-runtime" => {
                    let ns = self.us(v, &kc)?;
                    if ns > 0 {
                        custom_slice_ns = Some(ns);
                        self.warn(k.at, &kc, format!("requests a custom slice of {} us (honoured from Linux 6.12 with EEVDF)", ns / 1000));
                    }
                }
                "taskgroup" => taskgroup = self.taskgroup(v, &kc)?,
                "util_min" | "util_max" | "nodes_membind" | "membind_nodes" | "dl-period"
                | "dl-deadline" | "period" | "deadline" => {
                    self.unmodelled(k, v, &kc, true)?;
                }
                other => {
                    return Err(self.err(
                        k.at,
                        &kc,
                        format!(
                            "unknown key {other:?} (events: {EVENT_NAMES}; task properties: {})",
                            TASK_KEYS.join(", ")
                        ),
                    ));
                }
            }
        }
        let nice = match (policy, nice) {
            (Policy::Idle, Some((_, at))) => {
                self.warn(
                    at,
                    &ctx(&c, "priority"),
                    "rt-app does not set a nice value for SCHED_IDLE; ignored",
                );
                0
            }
            (_, Some((n, _))) => n,
            (_, None) => 0,
        };
        let mut local_timers = Vec::new();
        let mut phases = Vec::new();
        let mut phase_costs = Vec::new();
        let loops;
        if let Some((_, pv)) = phases_node {
            let pc = ctx(&c, "phases");
            let pobj = self.object(pv, &pc)?;
            if pobj.is_empty() {
                return Err(self.err(pv.at, &pc, "no phases"));
            }
            if let Some((k, _)) = obj.iter().find(|(k, _)| event_kind(&k.name).is_some()) {
                self.warn(
                    k.at,
                    &ctx(&c, &k.name),
                    "events beside \"phases\" are ignored by rt-app",
                );
            }
            let pobj = self.json_c_object(pobj, &pc, |_| false);
            for (k, v) in &pobj {
                let kc = ctx(&pc, &k.name);
                let o = self.object(v, &kc)?;
                let (p, cost) = self.phase(
                    &k.name,
                    o,
                    v.at,
                    &kc,
                    name,
                    instances,
                    &mut local_timers,
                    false,
                )?;
                phases.push(p);
                phase_costs.push(cost);
            }
            loops = match loop_value {
                None => Loops::Forever,
                Some(n) if n < 0 => Loops::Forever,
                Some(n) => Loops::Count(n as u64),
            };
        } else {
            let (mut p, cost) = self.phase(
                "phase0",
                obj,
                key.at,
                &c,
                name,
                instances,
                &mut local_timers,
                true,
            )?;
            // Follows parse_task_data(): without phases, a task-level loop is the phase's
            // loop and the task runs the phase once; without one, the task loops forever.
            match loop_value {
                Some(n) => {
                    p.loops = if n > 0 {
                        Loops::Count(n as u64)
                    } else {
                        Loops::Forever
                    };
                    loops = Loops::Count(1);
                }
                None => loops = Loops::Forever,
            }
            phases.push(p);
            phase_costs.push(cost);
        }
        if loops == Loops::Count(0) {
            self.warn(key.at, &c, "loop 0: the thread starts and exits at once");
        }
        let program = Program {
            phases,
            loops,
            local_timers,
            rtapp_log: true,
            cumulative_slack: self.cumulative_slack,
        };
        if let Some(phase) = program.find_zero_time_loop() {
            return Err(self.err(
                key.at,
                &c,
                format!("phase {phase:?} repeats forever without an event that takes time or blocks (run, runtime, sleep, timer, wait, barrier, suspend, sem_wait); rt-app would spin on system calls"),
            ));
        }
        Ok(TaskDef {
            name: name.to_string(),
            instances,
            delay_ns,
            policy,
            nice,
            cpus,
            custom_slice_ns,
            taskgroup,
            program,
            phase_costs,
        })
    }

    /// A thread-level or phase-level `taskgroup`: rt-app creates that cgroup under the cpu
    /// controller's mount point (the weight it was created with, 100, unless `--cgroup`
    /// declares another); a thread-level one puts every instance in it when it starts, a
    /// phase-level one moves the thread there when each iteration of the phase starts
    /// (rt-app: `parse_taskgroup_data()`, `set_thread_taskgroup()`). `""` is no group (a
    /// phase then leaves the thread where it is).
    fn taskgroup(&mut self, v: &Spanned, c: &str) -> R<Option<String>> {
        let s = self.string(v, c)?;
        if s.is_empty() {
            return Ok(None);
        }
        if !s.starts_with('/') || s.split('/').any(|p| p == "." || p == "..") {
            return Err(self.err(
                v.at,
                c,
                format!("taskgroup {s:?} must be a path starting with '/'"),
            ));
        }
        Ok(Some(s.to_string()))
    }

    fn global(&mut self, v: &Spanned) -> R<Option<u64>> {
        let obj = self.object(v, "global")?;
        let mut duration = None;
        for (k, fv) in obj {
            let c = ctx("global", &k.name);
            match k.name.as_str() {
                "duration" => {
                    let d = self.int(fv, &c)?;
                    duration = match u64::try_from(d) {
                        Ok(0) | Err(_) => None,
                        Ok(s) => Some(s.checked_mul(1_000_000_000).ok_or_else(|| {
                            self.err(fv.at, &c, format!("{s} s does not fit in ns (u64)"))
                        })?),
                    };
                }
                "calibration" => {
                    match &fv.node {
                        Node::Int(_) => {}
                        Node::Str(s)
                            if s.strip_prefix("CPU")
                                .is_some_and(|n| n.parse::<u32>().is_ok()) => {}
                        _ => {
                            return Err(self.err(
                                fv.at,
                                &c,
                                "expected \"CPU<n>\" or an integer (ns per loop)",
                            ));
                        }
                    }
                    self.warn(k.at, &c, "calibration is ignored: run durations are work at capacity 1024 (the longest on the smallest CPU)");
                }
                "default_policy" => self.default_policy = self.policy(fv, &c)?,
                "pi_enabled" => {
                    if self.boolean(fv, &c)? {
                        self.warn(
                            k.at,
                            &c,
                            "priority inheritance only affects real-time tasks; ignored",
                        );
                    }
                }
                "cumulative_slack" => self.cumulative_slack = self.boolean(fv, &c)?,
                "lock_pages" | "gnuplot" => {
                    self.boolean(fv, &c)?;
                }
                "log_basename" => self.log_basename = self.string(fv, &c)?.to_string(),
                "logdir" | "io_device" => {
                    self.string(fv, &c)?;
                }
                "log_size" => {
                    if !matches!(fv.node, Node::Int(_) | Node::Str(_)) {
                        return Err(self.err(
                            fv.at,
                            &c,
                            "expected an integer (MB) or \"file\", \"disable\", \"auto\"",
                        ));
                    }
                }
                "ftrace" => {
                    if !matches!(fv.node, Node::Bool(_) | Node::Str(_)) {
                        return Err(self.err(fv.at, &c, "expected a list of categories"));
                    }
                }
                "mem_buffer_size" | "spacing" => {
                    self.int(fv, &c)?;
                }
                other => self.warn(k.at, &c, format!("unknown global key {other:?} ignored")),
            }
        }
        Ok(duration)
    }
}

pub(crate) fn parse(
    text: &str,
    path: &str,
    label: &str,
    room: &Room,
) -> Result<WorkloadSpec, RtappError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let src = json::blank_comments(text);
    if let Some((name, at)) = lenient::find_placeholder(&src) {
        let (line, column) = json::line_col(&src, at);
        return Err(RtappError::Syntax {
            path: path.to_string(),
            line,
            column,
            message: format!(
                "unexpanded template placeholder {name}: replace it with a value first (a \
                 template's caller, such as LISA, substitutes these)"
            ),
        });
    }
    let src = lenient::strict(&src);
    let (root, rest) = json::parse(&src).map_err(|e| RtappError::Syntax {
        path: path.to_string(),
        line: e.line.max(1),
        column: e.column.max(1),
        message: strip_position(&e.message),
    })?;
    let mut p = Parser {
        src: &src,
        path,
        spec: WorkloadSpec::empty(),
        warnings: Vec::new(),
        mutexes: BTreeMap::new(),
        conds: BTreeMap::new(),
        barriers: BTreeMap::new(),
        sems: BTreeMap::new(),
        timers: BTreeMap::new(),
        def_names: Vec::new(),
        default_policy: Policy::Normal,
        cumulative_slack: false,
        log_basename: "rt-app".to_string(),
    };
    if let Some(at) = rest {
        p.warn(
            at,
            "top level",
            "text after the top-level object ignored (json-c leaves it unread)",
        );
    }
    let top = p.json_c_object(p.object(&root, "top level")?, "", |_| false);
    let mut global = None;
    let mut tasks = None;
    for (k, v) in &top {
        match k.name.as_str() {
            "global" | "tasks" => {
                let slot = if k.name == "global" {
                    &mut global
                } else {
                    &mut tasks
                };
                *slot = Some((k.clone(), v.clone()));
            }
            "resources" => p.warn(
                k.at,
                "resources",
                "legacy section ignored: rt-app creates resources from the events",
            ),
            other => p.warn(k.at, other, "unknown top-level key ignored"),
        }
    }
    let mut duration = None;
    if let Some((_, g)) = &global {
        duration = p.global(g)?;
    }
    let Some((tk, tv)) = tasks else {
        return Err(p.err(root.at, "top level", "no \"tasks\" section"));
    };
    let tobj = p.json_c_object(p.object(&tv, "tasks")?, "tasks", |_| false);
    if tobj.is_empty() {
        return Err(p.err(tk.at, "tasks", "no tasks"));
    }
    for (k, _) in &tobj {
        p.def_names.push(k.name.clone());
    }
    let mut defs = Vec::with_capacity(tobj.len());
    for (k, v) in &tobj {
        let o = p.object(v, &ctx("tasks", &k.name))?;
        defs.push(p.task(&k.name, k, o)?);
    }
    // The run's budget, before any instance is made.
    room.admit(Size {
        tasks: defs.iter().map(|d| u64::from(d.instances)).sum(),
        cpusets: p.spec.cpusets.len() as u64,
    })
    .map_err(|limit| RtappError::OverLimit {
        path: path.to_string(),
        limit,
    })?;
    let mut phases_costs = Vec::new();
    let mut ind = 0u32;
    for def in &defs {
        let program = Arc::new(def.program.clone());
        let make = |name: String| TaskSpec {
            name,
            policy: def.policy,
            nice: def.nice,
            affinity: def.cpus,
            custom_slice_ns: def.custom_slice_ns,
            start_ns: def.delay_ns,
            jitter_pct: 0,
            group: def.name.clone(),
            part: 0,
            spawned: false,
            cgroup: def.taskgroup.clone(),
            session: None,
            program: Arc::clone(&program),
        };
        for _ in 0..def.instances {
            p.spec.tasks.push(make(format!("{}-{}", def.name, ind)));
            ind += 1;
        }
        p.spec.templates.push(make(def.name.clone()));
        phases_costs.push((def.name.clone(), def.phase_costs.clone()));
    }
    if p.spec.tasks.is_empty() {
        return Err(p.err(
            tk.at,
            "tasks",
            "every task has instance 0: nothing would run",
        ));
    }
    for b in &p.spec.sync.barriers {
        if b.users == 0 {
            let name = b.name.clone();
            p.warnings.push(Warning {
                source: path.to_string(),
                location: None,
                message: format!("barrier {name:?} is used only by tasks with instance 0 (forked): rt-app cannot count its users"),
            });
        }
    }
    let n = p.spec.tasks.len() as u32;
    let nt = p.spec.templates.len() as u32;
    p.spec.parts.push(Part {
        label: label.to_string(),
        report: Arc::new(RtappReport {
            path: path.to_string(),
            log_basename: p.log_basename.clone(),
            phases: phases_costs,
        }),
        tasks: 0..n,
        templates: 0..nt,
        asks_ns: duration,
    });
    p.spec.duration_ns = duration;
    p.spec.validate().map_err(|e| RtappError::Invalid {
        path: path.to_string(),
        line: 1,
        column: 1,
        context: "tasks".into(),
        message: e.to_string(),
    })?;
    let mut spec = p.spec;
    spec.warnings = p.warnings;
    Ok(spec)
}

/// serde_json appends " at line L column C" to its messages; the error carries them already.
fn strip_position(m: &str) -> String {
    match m.rfind(" at line ") {
        Some(i) => m[..i].to_string(),
        None => m.to_string(),
    }
}
