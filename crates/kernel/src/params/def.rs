//! [`ParamDef`]: one parameter's declaration, and how a value is read and written.

use serde::Serialize;

use super::error::ParamError;
use super::features::FeatureBit;

/// One parameter, as its layer declares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamDef {
    /// The kernel's name (debugfs, sysctl or features.h spelling), or lbsim's for its own knobs.
    pub name: &'static str,
    /// Other accepted spellings (the `sched_`-prefixed sysctl names).
    pub aliases: &'static [&'static str],
    /// What values it takes.
    pub kind: Kind,
    /// One line: what it does.
    pub doc: &'static str,
    /// The layer that declares it (and reads it).
    pub owner: Owner,
    /// Which kernels have it, or which change an lbsim switch stands for.
    pub origin: Origin,
}

/// What values a parameter takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A sched feature (`SCHED_FEAT(NAME, default)`), switched with `NAME` / `NO_NAME`.
    Feature(FeatureDef),
    /// An integer with a unit, a default and an inclusive range.
    Int(IntDef),
    /// One of a few names.
    Choice(ChoiceDef),
}

/// A sched feature's declaration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeatureDef {
    /// Its bit in [`super::Features`].
    pub bit: FeatureBit,
    /// On by default.
    pub default: bool,
    /// Its place in `/sys/kernel/debug/sched/features`: features.h order, lbsim's switches
    /// after the kernel's (100 and up).
    pub position: u16,
    /// Whether lbsim models what it switches. A feature that is not modelled (HRTICK, the rt
    /// class's) is listed and parsed but changes nothing, and the invariant suite skips it.
    pub modelled: bool,
}

/// An integer parameter's declaration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntDef {
    /// Its unit.
    pub unit: Unit,
    /// Its default.
    pub default: IntDefault,
    /// Smallest valid value.
    pub min: u64,
    /// Largest valid value.
    pub max: u64,
    /// When not empty, the only valid values (`hz`: 100, 250, 300, 1000).
    pub allowed: &'static [u64],
}

/// An integer parameter's default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntDefault {
    /// This value.
    Value(u64),
    /// This normalized value times the `tunable_scaling` factor of the machine's CPU count
    /// (fair.c: `update_sysctl()`).
    Scaled(u64),
    /// The machine's CPU count.
    NrCpus,
}

/// A choice parameter's declaration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChoiceDef {
    /// The valid names; a value is stored as its index.
    pub values: &'static [&'static str],
    /// The default's index.
    pub default: usize,
    /// The kernel writes and prints the index (an enum such as `tunable_scaling`: 0, 1, 2);
    /// the names are accepted too.
    pub numbered: bool,
}

/// A parameter's unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Unit {
    /// Nanoseconds.
    Ns,
    /// Microseconds.
    Us,
    /// Milliseconds.
    Ms,
    /// Per second.
    Hz,
    /// Percent (`imbalance_pct`: 117 means 17% above).
    Percent,
    /// A count (tasks, CPUs, a factor).
    Count,
    /// 0 or 1.
    Bool,
}

impl Unit {
    /// The unit's short name (`ns`, `Hz`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::Us => "us",
            Unit::Ms => "ms",
            Unit::Hz => "Hz",
            Unit::Percent => "percent",
            Unit::Count => "count",
            Unit::Bool => "0 or 1",
        }
    }
}

/// The layer that declares a parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Owner {
    /// `lbsim-topology`: the `sd_init()` inputs.
    Topology,
    /// `lbsim-pelt`.
    Pelt,
    /// `lbsim-rq`: the per-runqueue pick and its tunables.
    Rq,
    /// `lbsim-balance`: fair.c's balancer and wake-up placement.
    Balance,
    /// The core.c model: wake lists, the tick.
    Core,
    /// The engine and the machine it simulates (noise, tick phases).
    Engine,
    /// The cost model (simulated time charged for scheduler work).
    CostModel,
}

impl Owner {
    /// The layer's name as `lbsim features` prints it.
    pub const fn name(self) -> &'static str {
        match self {
            Owner::Topology => "topology (sd_init)",
            Owner::Pelt => "pelt",
            Owner::Rq => "rq",
            Owner::Balance => "balance",
            Owner::Core => "core (core.c model)",
            Owner::Engine => "engine",
            Owner::CostModel => "cost model",
        }
    }
}

/// Where a parameter comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Origin {
    /// A kernel feature or tunable: the kernel versions that have it (`"v6.1, v6.6, v6.12"`).
    Kernel {
        /// The versions, and any qualification (`"v6.1 (legacy CFS only)"`).
        versions: &'static str,
    },
    /// An lbsim switch: it stands for one kernel change, on by default when merged.
    LbsimSwitch {
        /// The commit or seed patch it stands for.
        commit: &'static str,
        /// Its fate (`"merged v5.8"`, `"never merged"`).
        status: &'static str,
    },
    /// A knob of lbsim's own model with no kernel counterpart (the cost model, the engine).
    LbsimModel,
}

impl Origin {
    /// `Origin::Kernel`.
    pub const fn kernel(versions: &'static str) -> Origin {
        Origin::Kernel { versions }
    }

    /// `Origin::LbsimSwitch`.
    pub const fn switch(commit: &'static str, status: &'static str) -> Origin {
        Origin::LbsimSwitch { commit, status }
    }

    /// One line: `v6.1, v6.6, v6.12`, `lbsim switch for e21cf43406a1 (merged v5.8)`,
    /// `lbsim model`.
    pub fn describe(&self) -> String {
        match self {
            Origin::Kernel { versions } => (*versions).to_owned(),
            Origin::LbsimSwitch { commit, status } => {
                format!("lbsim switch for {commit} ({status})")
            }
            Origin::LbsimModel => "lbsim model".to_owned(),
        }
    }
}

impl ParamDef {
    /// The one-line doc, trimmed.
    pub fn doc(&self) -> &'static str {
        self.doc.trim()
    }

    /// The feature declaration, if this is a sched feature.
    pub fn feature(&self) -> Option<FeatureDef> {
        match self.kind {
            Kind::Feature(f) => Some(f),
            _ => None,
        }
    }

    /// Whether `name` is this parameter's name or one of its aliases.
    pub fn is_named(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }

    /// Parses `text` (surrounding whitespace ignored) into the stored value: the integer, or
    /// the index of the choice. Out-of-range values are refused with the range and unit.
    pub fn parse(&self, text: &str) -> Result<u64, ParamError> {
        let t = text.trim();
        let bad = |expected: String| ParamError::BadValue {
            name: self.name,
            value: text.to_owned(),
            expected,
        };
        match self.kind {
            Kind::Feature(_) => Err(ParamError::FeatureNotSettable { name: self.name }),
            Kind::Int(d) => {
                if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(bad(format!("an integer ({})", d.describe_range())));
                }
                let v = t.parse::<u64>().ok();
                match v {
                    Some(v) if d.accepts(v) => Ok(v),
                    _ => Err(ParamError::OutOfRange {
                        name: self.name,
                        value: t.to_owned(),
                        range: d.describe_range(),
                    }),
                }
            }
            Kind::Choice(c) => {
                if let Some(i) = c.values.iter().position(|&v| v == t) {
                    return Ok(i as u64);
                }
                if c.numbered
                    && let Ok(i) = t.parse::<usize>()
                    && i < c.values.len()
                    && t.bytes().all(|b| b.is_ascii_digit())
                {
                    return Ok(i as u64);
                }
                Err(bad(c.describe()))
            }
        }
    }

    /// The text of a stored value, as `lbsim features` prints it and [`ParamDef::parse`]
    /// accepts it.
    pub fn format(&self, value: u64) -> String {
        match self.kind {
            Kind::Choice(c) if !c.numbered => c
                .values
                .get(value as usize)
                .map_or_else(|| value.to_string(), |s| (*s).to_owned()),
            _ => value.to_string(),
        }
    }

    /// A serializable description (for `lbsim features --format json`).
    pub fn info(&self) -> ParamInfo {
        let (kind, unit, default, range, values, modelled) = match self.kind {
            Kind::Feature(f) => (
                "feature",
                None,
                DefaultValue::Bool(f.default),
                None,
                None,
                Some(f.modelled),
            ),
            Kind::Int(d) => (
                "integer",
                Some(d.unit.name()),
                match d.default {
                    IntDefault::Value(v) => DefaultValue::Int(v),
                    IntDefault::Scaled(v) => DefaultValue::Text(format!(
                        "{v} x tunable_scaling factor (1 + ilog2(min(nr_cpus, 8)) by default)"
                    )),
                    IntDefault::NrCpus => DefaultValue::Text("the machine's CPU count".to_owned()),
                },
                Some(d.describe_range()),
                None,
                None,
            ),
            Kind::Choice(c) => (
                "choice",
                None,
                DefaultValue::Text(self.format(c.default as u64)),
                None,
                Some(c.describe()),
                None,
            ),
        };
        ParamInfo {
            name: self.name,
            aliases: self.aliases,
            kind,
            unit,
            default,
            range,
            values,
            modelled,
            doc: self.doc(),
            owner: self.owner,
            origin: self.origin,
        }
    }
}

impl IntDef {
    /// Whether `v` is valid.
    pub fn accepts(&self, v: u64) -> bool {
        (self.min..=self.max).contains(&v) && (self.allowed.is_empty() || self.allowed.contains(&v))
    }

    /// `100..=10000 percent`, `one of 100, 250, 300, 1000 Hz`, `1..=4294967295 ns`; `0.. ns`
    /// only for a parameter with no bound below `u64::MAX`.
    pub fn describe_range(&self) -> String {
        let unit = self.unit.name();
        if !self.allowed.is_empty() {
            let list: Vec<String> = self.allowed.iter().map(u64::to_string).collect();
            return format!("one of {} {unit}", list.join(", "));
        }
        if self.unit == Unit::Bool {
            return unit.to_owned();
        }
        let max = match self.max {
            u64::MAX => String::new(),
            m => format!("={m}"),
        };
        format!("{}..{max} {unit}", self.min)
    }
}

impl ChoiceDef {
    /// `eevdf or cfs`, `0 (none), 1 (log) or 2 (linear)`.
    pub fn describe(&self) -> String {
        let items: Vec<String> = self
            .values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                if self.numbered {
                    format!("{i} ({v})")
                } else {
                    (*v).to_owned()
                }
            })
            .collect();
        match items.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => items.join(""),
        }
    }
}

/// A default as JSON shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum DefaultValue {
    /// A feature's default.
    Bool(bool),
    /// An integer.
    Int(u64),
    /// A choice, or a default that depends on the machine.
    Text(String),
}

/// One parameter as `lbsim features --format json` lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ParamInfo {
    /// The name.
    pub name: &'static str,
    /// Other accepted spellings.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub aliases: &'static [&'static str],
    /// `feature`, `integer` or `choice`.
    pub kind: &'static str,
    /// The unit of an integer.
    pub unit: Option<&'static str>,
    /// The default.
    pub default: DefaultValue,
    /// The valid range of an integer (inclusive), with its unit.
    pub range: Option<String>,
    /// The valid values of a choice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub values: Option<String>,
    /// Whether lbsim models a feature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modelled: Option<bool>,
    /// One line: what it does.
    pub doc: &'static str,
    /// The layer that declares it.
    pub owner: Owner,
    /// Where it comes from.
    pub origin: Origin,
}
