//! SMT siblings share their core: with `n` hardware threads of a core busy, each progresses
//! at the machine's [`SmtThroughput`](lbsim_topology::SmtThroughput) share for `n`.
//!
//! This is the machine, not the kernel: `arch_scale_cpu_capacity()`, PELT and every balancer
//! decision see the full capacity of each logical CPU as before (on x86 the kernel has no
//! notion of sibling activity either); only how fast the running task's work advances
//! changes. A CPU counts as busy while it has a current task (user work or the scheduler
//! code that runs on its behalf), idle while it runs the idle task.

use crate::prelude::*;

/// Per-core counts of busy threads, for a machine whose cores have several threads and a
/// table that is not ideal.
#[derive(Clone, Debug)]
pub(crate) struct SmtCores {
    /// The first CPU of each CPU's core (the core's index in `busy`).
    core_of: Vec<u32>,
    /// Busy threads per core, indexed by the core's first CPU.
    busy: Vec<u32>,
}

impl SmtCores {
    /// `None` when no core has two threads or every thread runs at full speed.
    pub(crate) fn new(machine: &lbsim_topology::Machine) -> Option<SmtCores> {
        if !machine.has_smt() || machine.smt_throughput().is_ideal() {
            return None;
        }
        let n = machine.nr_cpus();
        let core_of = (0..n)
            .map(|c| {
                machine
                    .smt_mask(CpuId(c as u32))
                    .first()
                    .expect("a CPU is its own sibling")
                    .0
            })
            .collect();
        Some(SmtCores {
            core_of,
            busy: vec![0; n],
        })
    }
}

impl<B: Balancer> Core<B> {
    /// `cpu` went from idle to busy or back: its core's busy threads change speed. Each
    /// sibling's progress is settled at the old speed, then its segment end is re-armed at
    /// the new one (the switching CPU arms its own when its next task starts).
    pub(crate) fn smt_busy_changed(&mut self, cpu: CpuId, busy: bool) {
        let Some(smt) = &mut self.smt else {
            return;
        };
        let core = smt.core_of[cpu.index()] as usize;
        if busy {
            smt.busy[core] += 1;
        } else {
            smt.busy[core] -= 1;
        }
        let n = smt.busy[core] as usize;
        let machine = self.cfg.topology.machine();
        let share = u64::from(machine.smt_throughput().thread_speed_1024(n.max(1)));
        let siblings: smallvec::SmallVec<[CpuId; 8]> =
            machine.smt_siblings(cpu).iter().copied().collect();
        for s in siblings {
            let speed = (self.cpus[s.index()].capacity * share / 1024).max(1);
            if s == cpu || self.rqs[s.index()].curr.is_none() {
                self.cpus[s.index()].speed = speed;
                continue;
            }
            if speed == self.cpus[s.index()].speed {
                continue;
            }
            self.settle(s);
            self.cpus[s.index()].speed = speed;
            if self.cpus[s.index()].seg_end.is_some() {
                self.arm_segment(s);
            }
        }
    }
}
