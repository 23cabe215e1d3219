//! PELT: per-entity load tracking, as kernel/sched/pelt.c computes it.
