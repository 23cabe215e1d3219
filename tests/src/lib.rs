//! Workspace-level scenario tests live in `tests.rs`; this library is empty on purpose.
