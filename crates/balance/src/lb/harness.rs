//! A small machine for the balancer's scenario tests: a topology, one runqueue per CPU,
//! tasks, and a clock that ticks every CPU and schedules on request (what the engine does),
//! without any balancing unless a test calls it.

use crate::params::{LbFeat, default_features};
use std::cell::RefCell;

use lbsim_rq::{
    Features, PrevAction, Rq, SchedParams, Task, TaskId, Tasks, Tunables, task::Policy,
};
use lbsim_topology::{CpuId, Cpumask, SdParams, Topology, parse_machine};

use crate::cost::CostModel;
use crate::ctx::{BalanceCtx, PendingWakeups};
use crate::state::BalanceState;

/// Wake-ups that the tests declare pending on a CPU from a given time on.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// `at[cpu]`: a wake-up IPI is pending on `cpu` from this time on.
    pub at: RefCell<Vec<Option<u64>>>,
}

impl PendingWakeups for Pending {
    fn ttwu_pending_at(&self, cpu: CpuId, at_ns: u64) -> bool {
        self.at
            .borrow()
            .get(cpu.index())
            .copied()
            .flatten()
            .is_some_and(|t| t <= at_ns)
    }

    /// True while no test has declared a wake-up on any CPU (as the engine answers when no
    /// wake-up IPI is in flight), so that tests reach the code paths that rely on it.
    fn none_pending(&self) -> bool {
        self.at.borrow().iter().all(Option::is_none)
    }
}

/// The test machine.
#[derive(Debug)]
pub(crate) struct World {
    pub topo: Topology,
    pub rqs: crate::rqs::Rqs,
    pub tasks: Tasks,
    pub features: Features,
    pub tunables: Tunables,
    pub cost: CostModel,
    pub pending: Pending,
    pub st: BalanceState,
    pub now: u64,
}

impl World {
    /// A machine from a spec (`"cores=2"`, `"hikey"`), default sd_init() parameters, HZ=1000.
    pub fn new(spec: &str) -> World {
        World::with(spec, SdParams::default(), default_features())
    }

    /// Seed 002's machine: 8 CPUs in one LLC, every CPU but 0 running 3 always-running
    /// tasks pinned to it, after 20 ticks.
    pub fn pinned_llc() -> World {
        let mut w = World::new("cores=8");
        for c in 1..8 {
            for _ in 0..3 {
                w.spawn(c, Some(&[c]));
            }
        }
        w.run_ticks(20);
        w
    }

    /// A machine with the given sd_init() parameters and features.
    pub fn with(spec: &str, params: SdParams, features: Features) -> World {
        let machine = parse_machine(spec).expect("valid machine spec");
        let topo = Topology::build(&machine, &params).expect("buildable topology");
        let n = topo.nr_cpus();
        let mut tunables = Tunables::new(n as u32);
        tunables.set("hz", "1000").expect("hz=1000");
        let sp = SchedParams::new(features, &tunables);
        let asym = topo.has_asym_cpucapacity();
        let rqs: Vec<Rq> = (0..n)
            .map(|c| {
                let mut r = Rq::new(
                    CpuId(c as u32),
                    u64::from(machine.capacity(CpuId(c as u32))),
                    sp,
                );
                r.set_asym_cpucap_active(asym);
                r
            })
            .collect();
        let st = BalanceState::new(&topo, 0, tunables.hz);
        World {
            topo,
            rqs: rqs.into(),
            tasks: Tasks::with_key(),
            features,
            tunables,
            cost: CostModel::default(),
            pending: Pending {
                at: RefCell::new(vec![None; n]),
            },
            st,
            now: 0,
        }
    }

    /// Switches a feature (in the context and every runqueue's parameters).
    pub fn set_feature(&mut self, f: LbFeat, on: bool) {
        self.features.set(f, on);
        for r in self.rqs.iter_mut() {
            r.params.features.set(f, on);
        }
    }

    pub fn tick_nsec(&self) -> u64 {
        self.tunables.tick_nsec()
    }

    pub fn jiffies(&self) -> u64 {
        self.now / self.tick_nsec()
    }

    /// The balancing context at the current time, and the balancer state.
    pub fn split(&mut self) -> (BalanceCtx<'_>, &mut BalanceState) {
        let jiffies = self.jiffies();
        (
            BalanceCtx {
                now_ns: self.now,
                jiffies,
                hz: self.tunables.hz,
                topo: &self.topo,
                rqs: &mut self.rqs,
                tasks: &mut self.tasks,
                features: self.features,
                tunables: &self.tunables,
                cost: &self.cost,
                pending: &self.pending,
            },
            &mut self.st,
        )
    }

    /// A nice-0 task forked onto `cpu`, allowed on `allowed` (every CPU if `None`).
    pub fn spawn(&mut self, cpu: u32, allowed: Option<&[u32]>) -> TaskId {
        let n = self.topo.nr_cpus();
        let mask = match allowed {
            Some(cpus) => Cpumask::from_cpus(n, cpus.iter().map(|&c| CpuId(c))),
            None => Cpumask::full(n),
        };
        let base = self.rqs[0].params.base_slice_ns;
        let max_cap = mask
            .iter()
            .map(|c| u64::from(self.topo.machine().capacity(c)))
            .max()
            .unwrap_or(1024);
        let mut task = Task::new("t", Policy::Normal, 0, mask, CpuId(cpu), base);
        task.max_allowed_capacity = max_cap;
        let p = self.tasks.insert(task);
        let r = &mut self.rqs[cpu as usize];
        r.task_fork_fair(&mut self.tasks, p, self.now);
        r.wake_up_new_task(&mut self.tasks, p, self.now);
        self.resched(cpu);
        p
    }

    /// Schedules `cpu` if it was asked to.
    pub fn resched(&mut self, cpu: u32) {
        let r = &mut self.rqs[cpu as usize];
        if r.curr.is_none() || r.need_resched() {
            r.schedule(&mut self.tasks, PrevAction::Preempt, self.now);
        }
    }

    /// Advances `n` ticks: every CPU ticks and schedules if asked; no balancing.
    pub fn run_ticks(&mut self, n: u64) {
        for _ in 0..n {
            self.now += self.tick_nsec();
            for c in 0..self.rqs.len() {
                self.rqs[c].sched_tick(&mut self.tasks, self.now);
                self.resched(c as u32);
            }
        }
        self.check();
    }

    /// Every runqueue's invariants hold.
    pub fn check(&self) {
        for r in &self.rqs {
            r.check_invariants(&self.tasks)
                .expect("runqueue invariants");
        }
    }

    /// Task counts per CPU.
    pub fn counts(&self) -> Vec<u32> {
        self.rqs.iter().map(|r| r.nr_running).collect()
    }

    /// The domain level of `cpu` whose name is `name`.
    pub fn level(&self, cpu: u32, name: &str) -> usize {
        self.topo
            .domains(CpuId(cpu))
            .iter()
            .position(|sd| sd.name.as_str() == name)
            .unwrap_or_else(|| panic!("cpu {cpu} has no {name} domain"))
    }

    /// Declares a wake-up pending on `cpu` from `at_ns` on.
    pub fn pend(&self, cpu: u32, at_ns: u64) {
        self.pending.at.borrow_mut()[cpu as usize] = Some(at_ns);
    }
}
