//! The [`Generator`] trait a benchmark generator implements, its [`Key`] table, and the
//! object-safe [`WorkloadKind`] that [`crate::generators::WORKLOADS`] lists.
//!
//! A generator is a unit struct in its own file under `generators/` implementing
//! [`Generator`]: its name, its keys (with defaults and one-line docs), how it parses them into
//! its `Params`, how it builds the tasks from them, and its report. Everything else (the
//! `--workload` dispatch, unknown-key errors, help texts, the part's report at the end of a
//! run, rounds) is derived from that one impl and its entry in `WORKLOADS`.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use crate::generators::params::Args;
use crate::generators::{Builder, WorkloadError};
use crate::limits::{Room, Size};
use crate::obs::RunObservations;
use crate::report::{Metric, PartReport, Report};
use crate::spec::WorkloadSpec;

/// What a key is when the option does not give it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyDefault {
    /// The option must give it.
    Required,
    /// This text, parsed exactly as a value the user gives.
    Value(&'static str),
    /// Computed from other keys; the text says how (`runtime / 5`).
    Derived(&'static str),
    /// Absent means what the text says (`all CPUs`, `no limit`).
    Unset(&'static str),
}

impl fmt::Display for KeyDefault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyDefault::Required => f.write_str("required"),
            KeyDefault::Value(v) => write!(f, "default {v}"),
            KeyDefault::Derived(v) | KeyDefault::Unset(v) => write!(f, "default {v}"),
        }
    }
}

/// One `key=value` a generator accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    /// The key.
    pub name: &'static str,
    /// Its value when not given.
    pub default: KeyDefault,
    /// One line: what it is, in the real tool's terms (its option letter, the unit of a bare
    /// number).
    pub doc: &'static str,
}

impl Key {
    /// A key the option must give.
    pub const fn required(name: &'static str, doc: &'static str) -> Key {
        Key {
            name,
            default: KeyDefault::Required,
            doc,
        }
    }

    /// A key with a default value (`text` is parsed as a given value would be).
    pub const fn value(name: &'static str, text: &'static str, doc: &'static str) -> Key {
        Key {
            name,
            default: KeyDefault::Value(text),
            doc,
        }
    }

    /// A key whose default is computed from other keys (`how` says how).
    pub const fn derived(name: &'static str, how: &'static str, doc: &'static str) -> Key {
        Key {
            name,
            default: KeyDefault::Derived(how),
            doc,
        }
    }

    /// An optional key; absent means `meaning`.
    pub const fn unset(name: &'static str, meaning: &'static str, doc: &'static str) -> Key {
        Key {
            name,
            default: KeyDefault::Unset(meaning),
            doc,
        }
    }
}

/// A benchmark generator: `NAME:key=value,...` to a [`WorkloadSpec`] with the real tool's
/// threads, and the tool's report after the run.
///
/// To add one: a new file `generators/NAME.rs` with `pub struct X;` and `impl Generator for
/// X`, then `&NAME::X` in [`crate::generators::WORKLOADS`].
pub trait Generator: Sync + 'static {
    /// The parsed keys; the part keeps them for its report.
    type Params: Clone + fmt::Debug + PartialEq + Send + Sync + 'static;
    /// The name before `:`.
    const NAME: &'static str;
    /// One line: what the generator models.
    const ABOUT: &'static str;
    /// The keys, in the order error messages and help list them.
    const KEYS: &'static [Key];
    /// A typical option (`busy:threads=4`), for help texts; it must parse.
    const EXAMPLE: &'static str;

    /// Parses the keys (the getters of `args` apply [`Key::default`]); calls
    /// [`Args::finish`].
    fn parse(args: Args) -> Result<Self::Params, WorkloadError>;

    /// What [`Generator::build`] makes of `p` (the tasks it adds and those its programs fork,
    /// the cpusets it asks for), computed without building it: the run's budget is checked
    /// against it first.
    fn size(p: &Self::Params) -> Size;

    /// Adds the tasks, templates and sync objects of `p` to `b` (and the workload's own
    /// length, `b.spec.duration_ns`, when the tool stops by itself).
    fn build(p: &Self::Params, b: &mut Builder);

    /// The report of part `part`: the tool's text, and its metrics (the metrics every part
    /// has are added by the caller).
    fn report(p: &Self::Params, part: u16, obs: &RunObservations) -> (String, Vec<Metric>);

    /// For a generator that re-runs itself in rounds (`schbench -a`): the title of the
    /// one-line-per-round summary when `p` asks for rounds, else `None` (the default: one run).
    /// Each round's summary line is the first line of its report text.
    fn rounds(_p: &Self::Params) -> Option<&'static str> {
        None
    }

    /// The next round, from this round's report: its option text (the part's label) and
    /// parameters; `None` when the search is over (or `p` runs once).
    fn next_round(_p: &Self::Params, _report: &Report) -> Option<(String, Self::Params)> {
        None
    }
}

/// Parses `text` (after `NAME:`) into `G`'s parameters.
pub fn parse_params<G: Generator>(text: &str) -> Result<G::Params, WorkloadError> {
    G::parse(Args::parse(G::NAME, G::KEYS, text)?)
}

/// Parses `text` (after `NAME:`) with `G` and builds the one-part workload labelled `label`,
/// with the default [`crate::Limits`].
pub fn generate<G: Generator>(text: &str, label: &str) -> Result<WorkloadSpec, WorkloadError> {
    Ok(generate_within::<G>(text, label, &Room::default())?.0)
}

/// Parses `text` (after `NAME:`) with `G`, checks its [`Generator::size`] against `room`, and
/// only then builds the one-part workload labelled `label`; returns it with its size.
///
/// # Errors
/// A bad key or value, or [`WorkloadError::OverLimit`] before anything is built.
pub fn generate_within<G: Generator>(
    text: &str,
    label: &str,
    room: &Room,
) -> Result<(WorkloadSpec, Size), WorkloadError> {
    let p = parse_params::<G>(text)?;
    let size = G::size(&p);
    room.admit(size)?;
    Ok((build::<G>(p, label)?, size))
}

/// Builds the one-part workload of `p`, labelled `label`.
pub fn build<G: Generator>(p: G::Params, label: &str) -> Result<WorkloadSpec, WorkloadError> {
    let mut b = Builder::new();
    G::build(&p, &mut b);
    b.finish(label, Arc::new(GeneratorReport::<G>(p)))
}

/// What `--workload NAME:...` dispatches on: one entry of
/// [`crate::generators::WORKLOADS`]. Every [`Generator`] is one; the rt-app loader is the
/// other kind (a file, not keys).
pub trait WorkloadKind: Sync {
    /// The name before `:`.
    fn name(&self) -> &'static str;
    /// One line: what it models.
    fn about(&self) -> &'static str;
    /// The keys (none for a file-based workload).
    fn keys(&self) -> &'static [Key];
    /// A typical option.
    fn example(&self) -> &'static str;
    /// True when the option names a file to read (its example is not a runnable option).
    fn reads_file(&self) -> bool {
        false
    }
    /// The workload of `--workload arg`, `rest` being what follows `NAME:`, and its size;
    /// refused with [`WorkloadError::OverLimit`] before its tasks are built if it does not fit
    /// in `room`.
    fn load(
        &self,
        rest: &str,
        arg: &str,
        room: &Room,
    ) -> Result<(WorkloadSpec, Size), WorkloadError>;
}

impl<G: Generator> WorkloadKind for G {
    fn name(&self) -> &'static str {
        G::NAME
    }

    fn about(&self) -> &'static str {
        G::ABOUT
    }

    fn keys(&self) -> &'static [Key] {
        G::KEYS
    }

    fn example(&self) -> &'static str {
        G::EXAMPLE
    }

    fn load(
        &self,
        rest: &str,
        arg: &str,
        room: &Room,
    ) -> Result<(WorkloadSpec, Size), WorkloadError> {
        generate_within::<G>(rest, arg, room)
    }
}

/// The report of a part made by generator `G`: its parameters.
pub struct GeneratorReport<G: Generator>(pub G::Params);

impl<G: Generator> GeneratorReport<G> {
    /// The parameters.
    pub fn params(&self) -> &G::Params {
        &self.0
    }
}

impl<G: Generator> fmt::Debug for GeneratorReport<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple(G::NAME).field(&self.0).finish()
    }
}

impl<G: Generator> PartReport for GeneratorReport<G> {
    fn report(
        &self,
        _spec: &WorkloadSpec,
        part: u16,
        obs: &RunObservations,
    ) -> (String, Vec<Metric>) {
        G::report(&self.0, part, obs)
    }

    fn rounds(&self) -> Option<&'static str> {
        G::rounds(&self.0)
    }

    fn next_round(&self, report: &Report) -> Option<Result<WorkloadSpec, WorkloadError>> {
        let (label, next) = G::next_round(&self.0, report)?;
        Some(build::<G>(next, &label))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn eq_dyn(&self, other: &dyn PartReport) -> bool {
        other
            .as_any()
            .downcast_ref::<Self>()
            .is_some_and(|o| o.0 == self.0)
    }
}
