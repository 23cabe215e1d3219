//! A cost profile: the cost model's parameters as measured on one machine, with each figure
//! and how it was measured (TOML; `lbsim calibrate` writes it, `--cost FILE` and a scenario
//! file's `cost = "FILE"` load it).
//!
//! ```toml
//! format = 1
//!
//! [cost]                              # what --cost loads: cost-model parameters, ns
//! cost_wakeup_ns = 441
//! cost_context_switch_ns = 2910
//!
//! [machine]                           # where it was measured (free-form record)
//! cpu_model = "AMD EPYC"
//!
//! [derivations.cost_wakeup_ns]        # how each [cost] value was computed (record)
//! formula = "local_wake_syscall"
//!
//! [figures.local_wake_syscall]        # each measurement's distribution (record)
//! median = 441.0
//!
//! [[cpuidle_states]]                  # the machine's idle states (record)
//! name = "POLL"
//! ```
//!
//! Only `[cost]` changes a run; the other tables are the record of the measurement and are
//! checked only for their shape. [`parse`] names the line and the key of whatever it refuses.

use std::fmt::Write as _;

use lbsim_kernel::params::Params;

use super::CostModel;
use super::derive::{Derived, NotDerived, Summary};

/// The format number this lbsim writes and reads.
pub const FORMAT: i64 = 1;

/// The top-level keys of a cost profile, in the order they are written.
pub const KEYS: [&str; 7] = [
    "format",
    "notes",
    "cost",
    "machine",
    "derivations",
    "figures",
    "cpuidle_states",
];

/// One measurement's record.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// Its key under `[figures]`.
    pub key: &'static str,
    /// What was measured (one line).
    pub what: String,
    /// How (one line).
    pub method: String,
    /// Its samples' distribution, ns.
    pub summary: Summary,
    /// Further fields of the record (counts, settings the measurement ran with).
    pub extra: Vec<(&'static str, toml::Value)>,
}

/// Everything a cost profile holds, as `lbsim calibrate` writes it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CostProfile {
    /// Lines of commentary (`notes`).
    pub notes: Vec<String>,
    /// The derived parameters (`[cost]` and `[derivations]`).
    pub derived: Vec<Derived>,
    /// The parameters calibration could not derive (`[derivations]`, with no `[cost]` entry).
    pub not_derived: Vec<NotDerived>,
    /// Where it was measured (`[machine]`).
    pub machine: Vec<(&'static str, toml::Value)>,
    /// The measurements (`[figures]`).
    pub figures: Vec<Figure>,
    /// Records of the machine's idle states (`[[cpuidle_states]]`).
    pub cpuidle_states: Vec<Vec<(&'static str, toml::Value)>>,
}

/// A TOML key, bare where TOML allows it, else quoted.
fn key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_owned()
    } else {
        toml::Value::String(k.to_owned()).to_string()
    }
}

/// A float as TOML writes it (always with a fraction, so that it reads back as a float).
fn float(x: f64) -> toml::Value {
    toml::Value::Float((x * 10.0).round() / 10.0)
}

fn fields(s: &mut String, fields: &[(&'static str, toml::Value)]) {
    for (k, v) in fields {
        let _ = writeln!(s, "{} = {v}", key(k));
    }
}

impl CostProfile {
    /// The profile as TOML text, in the order of [`KEYS`], each `[cost]` value preceded by
    /// its formula as a comment.
    pub fn to_toml(&self) -> String {
        let mut s = String::from(
            "# lbsim cost profile, written by `lbsim calibrate`: this machine's scheduler costs.\n\
             # `--cost FILE` (lbsim run, compare, validate) or `cost = \"FILE\"` in a scenario file\n\
             # loads [cost] into the cost model; `--set` still overrides it. The other tables\n\
             # record how each value was measured and derived.\n",
        );
        let _ = writeln!(s, "format = {FORMAT}");
        let notes: Vec<toml::Value> = self
            .notes
            .iter()
            .map(|n| toml::Value::String(n.clone()))
            .collect();
        if !notes.is_empty() {
            s.push_str("notes = [\n");
            for n in notes {
                let _ = writeln!(s, "    {n},");
            }
            s.push_str("]\n");
        }
        s.push_str("\n[cost]\n");
        for d in &self.derived {
            let _ = writeln!(s, "# = {}", d.formula);
            let _ = writeln!(s, "{} = {}", d.param, d.value_ns);
        }
        s.push_str("\n[machine]\n");
        fields(&mut s, &self.machine);
        for d in &self.derived {
            let _ = writeln!(s, "\n[derivations.{}]", d.param);
            let from = toml::Value::Array(
                d.from
                    .iter()
                    .map(|f| toml::Value::String((*f).to_owned()))
                    .collect(),
            );
            let mut f = vec![
                ("from", from),
                ("formula", toml::Value::String(d.formula.to_owned())),
                ("assumes", toml::Value::String(d.assumes.to_owned())),
            ];
            if let Some(n) = &d.note {
                f.push(("note", toml::Value::String(n.clone())));
            }
            fields(&mut s, &f);
        }
        for n in &self.not_derived {
            let _ = writeln!(s, "\n[derivations.{}]", n.param);
            fields(
                &mut s,
                &[("not_derived", toml::Value::String(n.why.clone()))],
            );
        }
        for f in &self.figures {
            let _ = writeln!(s, "\n[figures.{}]", f.key);
            let m = &f.summary;
            let mut all = vec![
                ("what", toml::Value::String(f.what.clone())),
                ("method", toml::Value::String(f.method.clone())),
                ("unit", toml::Value::String("ns".to_owned())),
                (
                    "samples",
                    toml::Value::Integer(i64::try_from(m.samples).unwrap_or(i64::MAX)),
                ),
                ("median", float(m.median)),
                ("mean", float(m.mean)),
                ("min", float(m.min)),
                ("p10", float(m.p10)),
                ("p90", float(m.p90)),
                ("p99", float(m.p99)),
                ("max", float(m.max)),
            ];
            all.extend(f.extra.iter().cloned());
            fields(&mut s, &all);
        }
        for st in &self.cpuidle_states {
            s.push_str("\n[[cpuidle_states]]\n");
            fields(&mut s, st);
        }
        s
    }
}

/// What a cost profile gives a run: the `[cost]` values, in name order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadedCost {
    /// Each parameter's name and value (ns).
    pub values: Vec<(&'static str, u64)>,
}

impl LoadedCost {
    /// Stores every value into `cost`.
    pub fn apply(&self, cost: &mut CostModel) {
        for &(name, v) in &self.values {
            let def = CostModel::DEFS
                .iter()
                .find(|d| d.name == name)
                .expect("a loaded name is a cost parameter");
            cost.store(def, v);
        }
    }
}

/// Why a cost profile was refused: the line (1-based, where known), the key, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CostProfileError {
    /// Not valid TOML.
    #[error("line {line}: not valid TOML: {message}")]
    Toml {
        /// The line of the error.
        line: usize,
        /// The parser's message, on one line.
        message: String,
    },
    /// A key is unknown, or its value is not what it must be.
    #[error("line {line}: key `{key}`: {message}")]
    Key {
        /// The line of the key (1 if the key is missing).
        line: usize,
        /// The key's dotted path (`cost.cost_ipi_ns`).
        key: String,
        /// What is wrong.
        message: String,
    },
}

impl CostProfileError {
    /// The line it names.
    pub fn line(&self) -> usize {
        match self {
            CostProfileError::Toml { line, .. } | CostProfileError::Key { line, .. } => *line,
        }
    }
}

/// Line (1-based) of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

/// The type of a TOML value, for messages.
fn type_of(v: &toml::Value) -> &'static str {
    match v {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "an integer",
        toml::Value::Float(_) => "a float",
        toml::Value::Boolean(_) => "a boolean",
        toml::Value::Datetime(_) => "a datetime",
        toml::Value::Array(_) => "an array",
        toml::Value::Table(_) => "a table",
    }
}

/// Parses the text of a cost profile: `format` must be [`FORMAT`] if given, `[cost]` must be
/// there and hold only cost-model parameters, each an integer in its range; the record
/// tables must be tables (and `cpuidle_states` an array of them).
///
/// # Errors
/// The first thing refused, with its line and key.
pub fn parse(text: &str) -> Result<LoadedCost, CostProfileError> {
    let spanned = toml::de::DeTable::parse(text).map_err(|e| CostProfileError::Toml {
        line: e.span().map_or(1, |s| line_of(text, s.start)),
        message: e.message().trim_end().replace('\n', "; "),
    })?;
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| CostProfileError::Toml {
            line: e.span().map_or(1, |s| line_of(text, s.start)),
            message: e.message().trim_end().replace('\n', "; "),
        })?;
    // The line of key `path` (a top-level key, or a key of a top-level table).
    let line = |path: &[&str]| -> usize {
        let top = spanned.get_ref();
        let Some((k, v)) = top.get_key_value(path[0]) else {
            return 1;
        };
        match (path.get(1), v.get_ref()) {
            (Some(sub), toml::de::DeValue::Table(t)) => t
                .get_key_value(*sub)
                .map_or(line_of(text, k.span().start), |(k, _)| {
                    line_of(text, k.span().start)
                }),
            _ => line_of(text, k.span().start),
        }
    };
    let err = |path: &[&str], message: String| CostProfileError::Key {
        line: line(path),
        key: path.join("."),
        message,
    };
    for (k, v) in &table {
        match k.as_str() {
            "format" => {
                if v.as_integer() != Some(FORMAT) {
                    return Err(err(
                        &[k],
                        format!("expected {FORMAT} (the format this lbsim reads)"),
                    ));
                }
            }
            "notes" => {
                let ok = v
                    .as_array()
                    .is_some_and(|a| a.iter().all(toml::Value::is_str));
                if !ok {
                    return Err(err(&[k], "expected an array of strings".to_owned()));
                }
            }
            "cost" => {}
            "machine" | "derivations" | "figures" => {
                let Some(t) = v.as_table() else {
                    return Err(err(&[k], format!("expected a table, found {}", type_of(v))));
                };
                if k != "machine" {
                    for (sub, sv) in t {
                        if !sv.is_table() {
                            return Err(err(
                                &[k, sub],
                                format!("expected a table, found {}", type_of(sv)),
                            ));
                        }
                    }
                }
            }
            "cpuidle_states" => {
                let ok = v
                    .as_array()
                    .is_some_and(|a| a.iter().all(toml::Value::is_table));
                if !ok {
                    return Err(err(&[k], "expected an array of tables".to_owned()));
                }
            }
            _ => {
                return Err(err(
                    &[k],
                    format!("unknown key (valid: {})", KEYS.join(", ")),
                ));
            }
        }
    }
    let Some(cost) = table.get("cost") else {
        return Err(CostProfileError::Key {
            line: 1,
            key: "cost".to_owned(),
            message: "missing: a cost profile needs a [cost] table of cost-model parameters"
                .to_owned(),
        });
    };
    let Some(cost) = cost.as_table() else {
        return Err(err(
            &["cost"],
            format!("expected a table, found {}", type_of(cost)),
        ));
    };
    let mut out = LoadedCost::default();
    let mut model = CostModel::default();
    for (name, v) in cost {
        let path = ["cost", name.as_str()];
        let Some(i) = v.as_integer() else {
            return Err(err(
                &path,
                format!("expected an integer number of ns, found {}", type_of(v)),
            ));
        };
        model
            .set(name, &i.to_string())
            .map_err(|e| err(&path, e.to_string()))?;
        let def = CostModel::DEFS
            .iter()
            .find(|d| d.name == name.as_str())
            .expect("set accepted a cost parameter");
        out.values.push((def.name, model.load(def)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
