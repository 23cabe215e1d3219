//! The balancer policy of the Linux fair class (being written): see `docs/architecture.md`.

pub mod cost;
