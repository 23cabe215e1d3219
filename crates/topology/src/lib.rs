//! Machines and their sched domains, as the Linux kernel's `kernel/sched/topology.c` builds them.
