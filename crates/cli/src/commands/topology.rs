//! `lbsim topology SPEC`: print a machine's sched domains and groups.

/// Arguments of `lbsim topology`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Machine spec: a CPU count, `key=value` list, preset name or TOML/JSON file.
    pub spec: Option<String>,
}

/// Runs `lbsim topology`.
pub fn run(_args: &Args) -> anyhow::Result<()> {
    anyhow::bail!("topology: not built yet")
}
