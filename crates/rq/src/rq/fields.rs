//! The runqueue fields the balancer and the core model read and write, behind kernel-named
//! accessors: who may change a field is the kernel function named on its setter.

use super::Rq;

impl Rq {
    /// `rq->idle_stamp`: `rq_clock` when the last newly idle balance started, if no task has
    /// arrived since.
    #[inline]
    pub fn idle_stamp(&self) -> Option<u64> {
        self.idle_stamp
    }

    /// `rq->idle_stamp = ...`: set by fair.c's `sched_balance_newidle()` when it starts
    /// (`Some(rq_clock)`) and cleared when it pulls a task (`None`).
    #[inline]
    pub fn set_idle_stamp(&mut self, stamp: Option<u64>) {
        self.idle_stamp = stamp;
    }

    /// `idle_get_state(rq)->exit_latency`: the declared exit latency (us) of the idle state
    /// the CPU is in (`None`: NULL, the CPU is not inside `cpuidle_enter_state()`).
    #[inline]
    pub fn idle_get_state(&self) -> Option<u32> {
        self.idle_state
    }

    /// core.c's `sched_idle_set_state()`, called by `cpuidle_enter_state()` on entry
    /// (`Some(exit_latency_us)`) and on exit (`None`).
    #[inline]
    pub fn sched_idle_set_state(&mut self, exit_latency_us: Option<u32>) {
        self.idle_state = exit_latency_us;
    }

    /// `rq->max_idle_balance_cost`: the longest newly idle balance seen, decayed.
    #[inline]
    pub fn max_idle_balance_cost(&self) -> u64 {
        self.max_idle_balance_cost
    }

    /// Written by `sched_balance_newidle()` (a longer pass) and `sched_balance_domains()`
    /// (the decay).
    #[inline]
    pub fn set_max_idle_balance_cost(&mut self, cost_ns: u64) {
        self.max_idle_balance_cost = cost_ns;
    }

    /// `rq->ttwu_pending`: a remote wake-up queued on this runqueue's wake list has not been
    /// processed yet.
    #[inline]
    pub fn ttwu_pending(&self) -> bool {
        self.ttwu_pending
    }

    /// `WRITE_ONCE(rq->ttwu_pending, 1)` in core.c's `__ttwu_queue_wakelist()`;
    /// `sched_ttwu_pending()` clears it.
    #[inline]
    pub fn set_ttwu_pending(&mut self) {
        self.ttwu_pending = true;
    }

    /// `rq->next_balance`, in jiffies.
    #[inline]
    pub fn next_balance(&self) -> u64 {
        self.next_balance
    }

    /// Written by fair.c's `sched_balance_domains()` and `sched_balance_newidle()`.
    #[inline]
    pub fn set_next_balance(&mut self, jiffies: u64) {
        self.next_balance = jiffies;
    }

    /// `rq->cpu_capacity` (`capacity_of()`).
    #[inline]
    pub fn cpu_capacity(&self) -> u64 {
        self.cpu_capacity
    }

    /// fair.c's `update_cpu_capacity()`: the capacity left to CFS tasks.
    #[inline]
    pub fn update_cpu_capacity(&mut self, capacity: u64) {
        self.cpu_capacity = capacity;
    }

    /// `sched_asym_cpucap_active()`: the machine has CPUs of different capacities.
    #[inline]
    pub fn asym_cpucap_active(&self) -> bool {
        self.asym_cpucap_active
    }

    /// The static key `sched_asym_cpucapacity`, switched by topology.c's
    /// `asym_cpu_capacity_scan()` when the domains are built.
    #[inline]
    pub fn set_asym_cpucap_active(&mut self, active: bool) {
        self.asym_cpucap_active = active;
    }

    /// `rq->has_blocked_load` (NO_HZ): PELT signals still decaying.
    #[inline]
    pub fn has_blocked_load(&self) -> bool {
        self.has_blocked_load
    }

    /// Set by fair.c's `nohz_balance_enter_idle()` and `update_blocked_averages()`.
    #[inline]
    pub fn set_has_blocked_load(&mut self, blocked: bool) {
        self.has_blocked_load = blocked;
    }
}
