//! A machine for placement tests: topology, runqueues, tasks, balancer state, built with the
//! lower crates as the engine builds them, plus helpers to put tasks in given states.

use crate::params::default_features;
use lbsim_rq::{
    Features, Policy, PrevAction, Rq, SchedParams, Task, TaskId, TaskState, Tasks, Tunables,
};
use lbsim_topology::{CpuId, Cpumask, SdParams, Topology, parse_machine};

use super::WakeState;
use crate::cost::CostModel;
use crate::ctx::{BalanceCtx, NoPendingWakeups};
use crate::state::BalanceState;

/// PELT time at which tests say tasks last ran (a non-zero `last_update_time`).
pub(crate) const LUT: u64 = 1_000_000;

pub(crate) struct Bench {
    pub topo: Topology,
    pub rqs: crate::rqs::Rqs,
    pub tasks: Tasks,
    pub st: BalanceState,
    pub wake: WakeState,
    pub features: Features,
    pub tunables: Tunables,
    pub cost: CostModel,
    pub now_ns: u64,
}

impl Bench {
    /// The machine `spec`, every CPU idle, default features. SIS_UTIL's budget is the whole
    /// LLC, as update_idle_cpu_scan() leaves it after a periodic balance of an idle LLC
    /// (`sum_util` 0 gives `llc_weight`); at boot the kernel's budget is 0.
    pub fn new(spec: &str) -> Bench {
        Bench::with_features(spec, default_features())
    }

    pub fn with_features(spec: &str, features: Features) -> Bench {
        let machine = parse_machine(spec).expect("test machine spec");
        let topo = Topology::build(&machine, &SdParams::default()).expect("test topology");
        let n = topo.nr_cpus();
        let tunables = Tunables::new(n as u32);
        let params = SchedParams::new(features, &tunables);
        let rqs: Vec<Rq> = (0..n)
            .map(|c| {
                let cpu = CpuId(c as u32);
                let mut rq = Rq::new(cpu, u64::from(machine.capacity(cpu)), params);
                rq.set_asym_cpucap_active(topo.has_asym_cpucapacity());
                rq.cfs.avg.avg.last_update_time = LUT;
                rq
            })
            .collect();
        let now_ns = 10_000_000_000;
        let st = BalanceState::new(&topo, now_ns / tunables.tick_nsec(), tunables.hz);
        let wake = WakeState::new(n);
        let mut b = Bench {
            topo,
            rqs: rqs.into(),
            tasks: Tasks::with_key(),
            st,
            wake,
            features,
            tunables,
            cost: CostModel::default(),
            now_ns,
        };
        for c in 0..n {
            let cpu = CpuId(c as u32);
            let size = b.topo.sd_llc_size(cpu);
            if let Some(s) = b.st.sd_llc_shared_mut(&b.topo, cpu) {
                s.nr_idle_scan = size;
            }
        }
        b
    }

    pub fn nr_cpus(&self) -> usize {
        self.topo.nr_cpus()
    }

    pub fn jiffies(&self) -> u64 {
        self.now_ns / self.tunables.tick_nsec()
    }

    /// The context, the balancer state and the placement state, borrowed together.
    pub fn parts(&mut self) -> (BalanceCtx<'_>, &mut BalanceState, &mut WakeState) {
        let jiffies = self.jiffies();
        (
            BalanceCtx {
                now_ns: self.now_ns,
                jiffies,
                hz: self.tunables.hz,
                topo: &self.topo,
                rqs: &mut self.rqs,
                tasks: &mut self.tasks,
                features: self.features,
                tunables: &self.tunables,
                cost: &self.cost,
                pending: &NoPendingWakeups,
            },
            &mut self.st,
            &mut self.wake,
        )
    }

    fn new_task(&mut self, name: &str, cpu: CpuId, allowed: Option<&[u32]>) -> TaskId {
        self.new_task_policy(name, cpu, allowed, Policy::Normal)
    }

    fn new_task_policy(
        &mut self,
        name: &str,
        cpu: CpuId,
        allowed: Option<&[u32]>,
        policy: Policy,
    ) -> TaskId {
        let n = self.nr_cpus();
        let mask = match allowed {
            None => Cpumask::full(n),
            Some(cpus) => Cpumask::from_cpus(n, cpus.iter().map(|&c| CpuId(c))),
        };
        let base = self.rqs[0].params.base_slice_ns;
        self.tasks
            .insert(Task::new(name, policy, 0, mask, cpu, base))
    }

    /// A nice-0 task running on `cpu` (forked there and picked).
    pub fn running(&mut self, cpu: u32) -> TaskId {
        self.running_policy(cpu, Policy::Normal)
    }

    /// A task of `policy` running on `cpu` (forked there and picked).
    pub fn running_policy(&mut self, cpu: u32, policy: Policy) -> TaskId {
        let cpu = CpuId(cpu);
        let p = self.new_task_policy("busy", cpu, None, policy);
        let now = self.now_ns;
        let rq = &mut self.rqs[cpu.index()];
        rq.wake_up_new_task(&mut self.tasks, p, now);
        rq.schedule(&mut self.tasks, PrevAction::Preempt, now);
        assert_eq!(rq.curr, Some(p), "cpu {cpu} runs the new task");
        p
    }

    /// A nice-0 task queued (waiting) on `cpu`, behind whatever runs there.
    pub fn queued(&mut self, cpu: u32) -> TaskId {
        let cpu = CpuId(cpu);
        let p = self.new_task("waiting", cpu, None);
        let now = self.now_ns;
        self.rqs[cpu.index()].wake_up_new_task(&mut self.tasks, p, now);
        p
    }

    /// A sleeping task that last ran on `prev` (its PELT signal in step with that runqueue's),
    /// allowed on `allowed` (all CPUs if `None`), with `load_avg` and `util_avg` as given.
    pub fn sleeper(
        &mut self,
        prev: u32,
        allowed: Option<&[u32]>,
        load_avg: u64,
        util_avg: u64,
    ) -> TaskId {
        let p = self.new_task("sleeper", CpuId(prev), allowed);
        let t = &mut self.tasks[p];
        t.state = TaskState::Sleeping;
        t.se.avg.last_update_time = LUT;
        t.se.avg.load_avg = load_avg;
        t.se.avg.util_avg = util_avg;
        p
    }

    /// A task forked on `cpu` (its parent's CPU), not yet woken.
    pub fn newborn(&mut self, cpu: u32, allowed: Option<&[u32]>) -> TaskId {
        self.new_task("child", CpuId(cpu), allowed)
    }

    /// Overrides `cpu`'s PELT load and utilization.
    pub fn set_avg(&mut self, cpu: u32, load_avg: u64, util_avg: u64) {
        let avg = &mut self.rqs[cpu as usize].cfs.avg.avg;
        avg.load_avg = load_avg;
        avg.util_avg = util_avg;
        avg.runnable_avg = util_avg;
    }

    /// `cpu` went newly idle at `stamp_ns` (`rq->idle_stamp`).
    pub fn idle_since(&mut self, cpu: u32, stamp_ns: u64) {
        self.rqs[cpu as usize].set_idle_stamp(Some(stamp_ns));
    }

    /// SIS_UTIL's budget of `cpu`'s LLC.
    pub fn set_nr_idle_scan(&mut self, cpu: u32, nr: u32) {
        let topo = &self.topo;
        self.st
            .sd_llc_shared_mut(topo, CpuId(cpu))
            .expect("an LLC domain")
            .nr_idle_scan = nr;
    }

    pub fn nr_idle_scan(&self, cpu: u32) -> u32 {
        self.st
            .sd_llc_shared(&self.topo, CpuId(cpu))
            .expect("an LLC domain")
            .nr_idle_scan
    }

    pub fn set_has_idle_cores(&mut self, cpu: u32, val: bool) {
        let topo = &self.topo;
        self.st
            .sd_llc_shared_mut(topo, CpuId(cpu))
            .expect("an LLC domain")
            .has_idle_cores = val;
    }

    pub fn has_idle_cores(&self, cpu: u32) -> bool {
        self.st
            .sd_llc_shared(&self.topo, CpuId(cpu))
            .expect("an LLC domain")
            .has_idle_cores
    }
}
