//! Workspace-level scenario tests: one integration-test binary, one module per area.
