//! Workspace-level scenario tests: one integration-test binary, one module per area.
//! Each test runs the whole stack (topology, PELT, runqueues, the kernel balancer, workloads,
//! the engine) and asserts behaviour that follows from a rule it quotes.

mod common;
mod engine;
mod evidence;
mod groups;
mod invariants;
mod replay;
