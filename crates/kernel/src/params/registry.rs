//! [`Registry`]: the layers' declaration lists, assembled; lookup, feature writes, the debugfs
//! text and a consistency check.

use super::def::Owner;
use super::def::{FeatureDef, ParamDef};
use super::error::ParamError;
use super::features::{BALANCE_FEATURE_BASE, CORE_FEATURE_BASE, Features, RQ_FEATURE_BASE};
use super::suggest::nearest;

/// Every parameter of every layer: the layers' declaration lists, in printing order.
#[derive(Clone, Copy, Debug)]
pub struct Registry {
    tables: &'static [&'static [ParamDef]],
}

impl Registry {
    /// The registry of these declaration lists.
    pub const fn new(tables: &'static [&'static [ParamDef]]) -> Registry {
        Registry { tables }
    }

    /// Every parameter, list by list, each in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = &'static ParamDef> + use<> {
        self.tables.iter().flat_map(|t| t.iter())
    }

    /// The parameter named `name` (or one of its aliases).
    ///
    /// # Errors
    /// [`ParamError::Unknown`], with the nearest valid names of parameters that take a value
    /// (`--set` names; a misspelt feature is reported by [`Registry::apply_features`]).
    pub fn lookup(&self, name: &str) -> Result<&'static ParamDef, ParamError> {
        let name = name.trim();
        self.iter()
            .find(|d| d.is_named(name))
            .ok_or_else(|| ParamError::Unknown {
                name: name.to_owned(),
                suggestions: nearest(
                    name,
                    self.iter()
                        .filter(|d| d.feature().is_none())
                        .map(|d| d.name),
                )
                .into_iter()
                .map(str::to_owned)
                .collect(),
            })
    }

    /// Every sched feature, in `/sys/kernel/debug/sched/features` order.
    pub fn features(&self) -> Vec<(&'static ParamDef, FeatureDef)> {
        let mut out: Vec<(&'static ParamDef, FeatureDef)> = self
            .iter()
            .filter_map(|d| Some((d, d.feature()?)))
            .collect();
        out.sort_by_key(|(_, f)| f.position);
        out
    }

    /// The sched feature with this exact (case-sensitive) name, without `NO_`.
    pub fn feature(&self, name: &str) -> Option<(&'static ParamDef, FeatureDef)> {
        self.iter()
            .find(|d| d.name == name)
            .and_then(|d| Some((d, d.feature()?)))
    }

    /// Every feature at its default.
    pub fn default_features(&self) -> Features {
        self.tables
            .iter()
            .fold(Features::NONE, |f, t| f.with_defaults(t))
    }

    /// Applies kernel-style writes: `NAME` enables, `NO_NAME` disables (debug.c:
    /// `sched_feat_write()`, case-sensitive), extended to a list separated by commas or
    /// whitespace; empty items are ignored. On error nothing changes.
    ///
    /// # Errors
    /// [`ParamError::UnknownFeature`] with the nearest spellings, or
    /// [`ParamError::NotAFeature`] for a parameter that takes a value.
    pub fn apply_features(&self, features: &mut Features, list: &str) -> Result<(), ParamError> {
        let mut out = *features;
        for item in list.split(|c: char| c == ',' || c.is_whitespace()) {
            if item.is_empty() {
                continue;
            }
            let (on, name) = match item.strip_prefix("NO_") {
                Some(rest) => (false, rest),
                None => (true, item),
            };
            match self.feature(name) {
                Some((_, f)) => out.set(f.bit, on),
                None => {
                    if let Some(d) = self.iter().find(|d| d.is_named(name)) {
                        return Err(ParamError::NotAFeature { name: d.name });
                    }
                    let prefix = if on { "" } else { "NO_" };
                    let feats = self.features();
                    let suggestions = nearest(name, feats.iter().map(|(d, _)| d.name))
                        .into_iter()
                        .map(|n| format!("{prefix}{n}"))
                        .collect();
                    return Err(ParamError::UnknownFeature {
                        name: item.to_owned(),
                        suggestions,
                    });
                }
            }
        }
        *features = out;
        Ok(())
    }

    /// The exact contents of `/sys/kernel/debug/sched/features`: every name followed by a
    /// space, `NO_` before the disabled ones, then a newline (debug.c: `sched_feat_show()`).
    pub fn debugfs_text(&self, features: Features) -> String {
        let mut s = String::with_capacity(64 * 20);
        for (d, f) in self.features() {
            if !features.enabled(f.bit) {
                s.push_str("NO_");
            }
            s.push_str(d.name);
            s.push(' ');
        }
        s.push('\n');
        s
    }

    /// The debugfs text on one line, without the trailing space and newline.
    pub fn features_line(&self, features: Features) -> String {
        self.debugfs_text(features).trim_end().to_owned()
    }

    /// Checks the assembled declarations: names (and aliases) unique, feature bits unique
    /// and inside their layer's range, print positions unique.
    ///
    /// # Errors
    /// The first problem, in one line.
    pub fn check(&self) -> Result<(), String> {
        let all: Vec<&ParamDef> = self.iter().collect();
        for (i, a) in all.iter().enumerate() {
            for b in &all[..i] {
                for n in std::iter::once(&a.name).chain(a.aliases) {
                    if b.is_named(n) {
                        return Err(format!("parameter name `{n}` is declared twice"));
                    }
                }
            }
        }
        let feats = self.features();
        for (i, (d, f)) in feats.iter().enumerate() {
            let range = match d.owner {
                Owner::Rq | Owner::Pelt | Owner::Topology => RQ_FEATURE_BASE..BALANCE_FEATURE_BASE,
                Owner::Balance => BALANCE_FEATURE_BASE..CORE_FEATURE_BASE,
                _ => CORE_FEATURE_BASE..64,
            };
            if !range.contains(&f.bit.0) {
                return Err(format!(
                    "feature {} has bit {} outside its layer's range {range:?}",
                    d.name, f.bit.0
                ));
            }
            for (e, g) in &feats[..i] {
                if g.bit == f.bit {
                    return Err(format!(
                        "features {} and {} share bit {}",
                        e.name, d.name, f.bit.0
                    ));
                }
                if g.position == f.position {
                    return Err(format!(
                        "features {} and {} share print position {}",
                        e.name, d.name, f.position
                    ));
                }
            }
        }
        Ok(())
    }
}
