//! Kernel versions as profiles (`--kernel 5.9`): which sched features a mainline release has
//! and their defaults there (its `features.h`), which of lbsim's switches for later changes
//! are on, and the tunables' defaults of that release.
//!
//! Sources: `../shared/KERNEL-HISTORY.md` §5.1 (features.h defaults, read from the source
//! snapshots listed there) and §1 (the commit and first release of each change an lbsim
//! switch stands for). The 5.19 column is 5.15's: KERNEL-HISTORY's timeline has no
//! features.h change between them (SIS_UTIL came in 6.0).
//!
//! The 4.x and 5.4 profiles run the balancer of those kernels (`lbsim_balance::legacy`,
//! before the v5.5 rework 0b0695f2b34a, "sched/fair: Rework load_balance()";
//! [`Profile::pre_rework`]); the later ones today's.
//!
//! A profile sets a baseline: `--features` and `--set` still override it, so an A/B of one
//! patch on one kernel is `--kernel 5.9 --base NO_X --patched X`. A kernel feature that the
//! release does not have cannot be switched on ([`Profile::check_feature`]); lbsim's own
//! switches for a change can be set on any release (that is what an A/B of the change is).

use std::fmt;

/// The releases lbsim has a profile for, oldest first.
pub const VERSIONS: [&str; 13] = [
    "4.6", "4.11", "4.13", "4.18", "5.4", "5.7", "5.9", "5.10", "5.15", "5.19", "6.1", "6.6",
    "6.12",
];

/// The default profile.
pub const DEFAULT_VERSION: &str = "6.12";

/// The load_balance() rework (0b0695f2b34a).
const REWORK: Version = Version(5, 5);

/// A release, major and minor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub u32, pub u32);

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

impl Version {
    fn parse(text: &str) -> Option<Version> {
        let t = text.trim().trim_start_matches('v');
        let (a, b) = t.split_once('.')?;
        Some(Version(a.parse().ok()?, b.parse().ok()?))
    }
}

/// A kernel feature's presence and default in each profile, in [`VERSIONS`] order:
/// `+` on, `-` off, `.` absent.
struct FeatureRow {
    name: &'static str,
    columns: &'static str,
}

/// features.h of each profile (KERNEL-HISTORY.md §5.1). Columns: 4.6 4.11 4.13 4.18 5.4 5.7
/// 5.9 5.10 5.15 5.19 6.1 6.6 6.12.
const FEATURES_H: &[FeatureRow] = &[
    row("GENTLE_FAIR_SLEEPERS", "+++++ +++++ +.."),
    row("START_DEBIT", "+++++ +++++ +.."),
    row("PLACE_LAG", "..... ..... .++"),
    row("PLACE_DEADLINE_INITIAL", "..... ..... .++"),
    row("PLACE_REL_DEADLINE", "..... ..... ..+"),
    row("RUN_TO_PARITY", "..... ..... .++"),
    row("PREEMPT_SHORT", "..... ..... ..+"),
    row("NEXT_BUDDY", "----- ----- ---"),
    row("LAST_BUDDY", "+++++ +++++ +.."),
    row("CACHE_HOT_BUDDY", "+++++ +++++ +++"),
    row("DELAY_DEQUEUE", "..... ..... ..+"),
    row("DELAY_ZERO", "..... ..... ..+"),
    row("WAKEUP_PREEMPTION", "+++++ +++++ +++"),
    row("HRTICK", "----- ----- ---"),
    row("HRTICK_DL", "..... ...-- ---"),
    row("DOUBLE_TICK", "----- ----- ---"),
    row("LB_BIAS", "++++. ..... ..."),
    row("NONTASK_CAPACITY", "+++++ +++++ +++"),
    row("TTWU_QUEUE", "+++++ +++++ +++"),
    row("SIS_AVG_CPU", ".---- ---.. ..."),
    row("SIS_PROP", "..+++ +++++ --."),
    row("SIS_UTIL", "..... ..... +++"),
    row("WARN_DOUBLE_CLOCK", "..--- ----- ---"),
    row("RT_PUSH_IPI", "+++++ +++++ +++"),
    row("RT_RUNTIME_SHARE", "+++++ ++--- ---"),
    row("LB_MIN", "----- ----- ---"),
    row("ATTACH_AGE_LOAD", "+++++ +++++ +++"),
    row("WA_IDLE", "...++ +++++ +++"),
    row("WA_WEIGHT", "...++ +++++ +++"),
    row("WA_BIAS", "...++ +++++ +++"),
    row("UTIL_EST", "...++ +++++ +++"),
    row("UTIL_EST_FASTUP", "..... +++++ ++."),
    row("LATENCY_WARN", "..... ...-- ---"),
    row("ALT_PERIOD", "..... ...++ +.."),
    row("BASE_SLICE", "..... ...++ +.."),
    row("HZ_BW", "..... ..... .+."),
    row("FORCE_SD_OVERLAP", "--... ..... ..."),
];

const fn row(name: &'static str, columns: &'static str) -> FeatureRow {
    FeatureRow { name, columns }
}

impl FeatureRow {
    /// The row's entry for profile `i`: `Some(default)` or `None` (absent).
    fn at(&self, i: usize) -> Option<bool> {
        match self
            .columns
            .bytes()
            .filter(|b| !b.is_ascii_whitespace())
            .nth(i)
        {
            Some(b'+') => Some(true),
            Some(b'-') => Some(false),
            _ => None,
        }
    }
}

/// lbsim's switches for a later change: on from the release that merged it (`None`: never
/// merged, off everywhere).
const SWITCHES: &[(&str, Option<Version>)] = &[
    // 2b8c41daba32, v4.7: the 4.6 profile starts a new task's util_avg at 1024.
    ("POST_INIT_UTIL_AVG", Some(Version(4, 7))),
    // 05b40e057734, first in 4.12 (KERNEL-HISTORY §1).
    ("PREFER_SIBLING_NR_DIFF", Some(Version(4, 12))),
    // c32b4308295a, v5.7.
    ("LB_UTIL_SKIP_SINGLE", Some(Version(5, 7))),
    // e21cf43406a1, v5.8-rc3: the 5.7 profile starts runnable_avg at capacity.
    ("RUNNABLE_AVG_INIT_UTIL", Some(Version(5, 8))),
    // 5a7f55590467 and e4d32e4d5444, v5.10.
    ("LB_RELAX_BY_FAILED", Some(Version(5, 10))),
    ("LB_BUSY_INTERVAL_SKEW", Some(Version(5, 10))),
    // e9b9734b7465, v5.12.
    ("LB_REDUCE_ACTIVE_BALANCE", Some(Version(5, 12))),
    // 792b9f65a568, v6.0.
    ("NEWIDLE_BAIL_ON_PENDING", Some(Version(6, 0))),
    // 7d0583cf9ec7, v6.5.
    ("LB_UTIL_RUNNABLE_BOOST", Some(Version(6, 5))),
    // v6.14.
    ("LB_BUSIEST_NR_RUNNABLE", Some(Version(6, 14))),
    // Seed 003's patches, never merged.
    ("LB_TIP_AVG_HIGH", None),
    ("IDLE_RESERVE", None),
];

/// One release's profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profile {
    index: usize,
    version: Version,
}

/// Why a profile cannot be used as asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// No profile for that release.
    #[error("no kernel profile `{given}`; profiles: {}", VERSIONS.join(", "))]
    Unknown {
        /// What was given.
        given: String,
    },
    /// A kernel feature the release does not have.
    #[error("{name} does not exist in v{version} ({why})")]
    Absent {
        /// The feature.
        name: String,
        /// The profile's release.
        version: String,
        /// When it came or went.
        why: String,
    },
}

impl Profile {
    /// The profile of `text` (`6.12`, `v5.10`).
    ///
    /// # Errors
    /// No profile for that release.
    pub fn parse(text: &str) -> Result<Profile, ProfileError> {
        let unknown = || ProfileError::Unknown {
            given: text.to_owned(),
        };
        let version = Version::parse(text).ok_or_else(unknown)?;
        let index = VERSIONS
            .iter()
            .position(|v| Version::parse(v) == Some(version))
            .ok_or_else(unknown)?;
        Ok(Profile { index, version })
    }

    /// The profile nearest to a running kernel `major.minor` (`uname -r`'s first two numbers):
    /// the newest release at or before it, else the oldest profile. A kernel newer than the
    /// newest profile gets the newest.
    pub fn nearest(major: u32, minor: u32) -> Profile {
        let want = Version(major, minor);
        let index = VERSIONS
            .iter()
            .rposition(|v| Version::parse(v).is_some_and(|v| v <= want))
            .unwrap_or(0);
        let version = Version::parse(VERSIONS[index]).expect("the profile list parses");
        Profile { index, version }
    }

    /// The default profile (v6.12).
    pub fn default_profile() -> Profile {
        Profile::parse(DEFAULT_VERSION).expect("the default is a profile")
    }

    /// The release.
    pub fn version(&self) -> Version {
        self.version
    }

    /// Whether this release ran the load balancer before the v5.5 rework (0b0695f2b34a,
    /// "sched/fair: Rework load_balance()"): its runs use `lbsim_balance::legacy`.
    pub fn pre_rework(&self) -> bool {
        self.version < REWORK
    }

    /// The release's features.h, in order, with their defaults (as
    /// `/sys/kernel/debug/sched_features` lists them).
    pub fn features_h(&self) -> Vec<(&'static str, bool)> {
        FEATURES_H
            .iter()
            .filter_map(|r| r.at(self.index).map(|on| (r.name, on)))
            .collect()
    }

    /// The value of feature `name` in this release: `Some(default)` for a features.h entry it
    /// has or an lbsim switch, `None` for a kernel feature it does not have or a name this
    /// module does not know.
    pub fn feature(&self, name: &str) -> Option<bool> {
        if let Some(r) = FEATURES_H.iter().find(|r| r.name == name) {
            return r.at(self.index);
        }
        SWITCHES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, merged)| merged.is_some_and(|m| self.version >= m))
    }

    /// Whether switching `name` on is possible in this release: lbsim's switches always;
    /// a kernel feature only if the release has it.
    ///
    /// # Errors
    /// A kernel feature the release does not have, with the release that added or removed it.
    pub fn check_feature(&self, name: &str, on: bool) -> Result<(), ProfileError> {
        let Some(r) = FEATURES_H.iter().find(|r| r.name == name) else {
            return Ok(());
        };
        if r.at(self.index).is_some() || !on {
            return Ok(());
        }
        let present: Vec<usize> = (0..VERSIONS.len()).filter(|&i| r.at(i).is_some()).collect();
        let why = match (present.first(), present.last()) {
            (Some(&first), _) if first > self.index => {
                format!("it first appears in the v{} profile", VERSIONS[first])
            }
            (_, Some(&last)) if last < self.index => {
                format!("it was removed after v{}", VERSIONS[last])
            }
            _ => "not in this release's features.h".to_owned(),
        };
        Err(ProfileError::Absent {
            name: name.to_owned(),
            version: self.version.to_string(),
            why,
        })
    }

    /// The tunables this release sets differently from v6.12, as `--set` pairs:
    /// `imbalance_pct` 125 and `busy_factor` 32 before v5.10 (2208cdaa56c9, 6e7499135db7),
    /// the CFS pick before EEVDF (v6.6, 147f3efaa241).
    pub fn tunables(&self) -> Vec<(&'static str, &'static str)> {
        let mut t = Vec::new();
        if self.version < Version(5, 10) {
            t.push(("imbalance_pct", "125"));
            t.push(("busy_factor", "32"));
        }
        if self.version < Version(6, 6) {
            t.push(("sched_policy", "cfs"));
        }
        t
    }

    /// lbsim's switches and the features.h entries the registry knows, with this release's
    /// value: a kernel feature the release does not have is off (its code is not there).
    pub fn feature_values(&self, registry_names: &[&'static str]) -> Vec<(&'static str, bool)> {
        registry_names
            .iter()
            .filter_map(|&n| {
                let known =
                    FEATURES_H.iter().any(|r| r.name == n) || SWITCHES.iter().any(|(s, _)| *s == n);
                known.then(|| (n, self.feature(n).unwrap_or(false)))
            })
            .collect()
    }
}

/// The table of `docs/kernel-profiles.md`: per profile, lbsim's switches that are on, the
/// tunables it sets, and whether lbsim runs it; then each features.h entry by profile.
pub fn markdown_table() -> String {
    let mut out =
        String::from("| profile | balancer | lbsim switches on | tunables |\n|---|---|---|---|\n");
    for v in VERSIONS {
        let p = Profile::parse(v).expect("a profile");
        let on: Vec<&str> = SWITCHES
            .iter()
            .filter(|(n, _)| p.feature(n) == Some(true))
            .map(|(n, _)| *n)
            .collect();
        let tunables: Vec<String> = p
            .tunables()
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let list = |v: Vec<String>| {
            if v.is_empty() {
                "-".to_owned()
            } else {
                v.join(", ")
            }
        };
        out.push_str(&format!(
            "| {v} | {} | {} | {} |\n",
            if p.pre_rework() {
                "pre-v5.5 (legacy)"
            } else {
                "v5.5+"
            },
            list(on.iter().map(|s| format!("`{s}`")).collect()),
            list(tunables.iter().map(|s| format!("`{s}`")).collect()),
        ));
    }
    out.push_str("\n| features.h | ");
    out.push_str(&VERSIONS.join(" | "));
    out.push_str(" |\n|---|");
    out.push_str(&"---|".repeat(VERSIONS.len()));
    out.push('\n');
    for r in FEATURES_H {
        out.push_str(&format!("| `{}` |", r.name));
        for i in 0..VERSIONS.len() {
            out.push_str(match r.at(i) {
                Some(true) => " on |",
                Some(false) => " off |",
                None => " - |",
            });
        }
        out.push('\n');
    }
    out.push_str("\n| lbsim switch | merged |\n|---|---|\n");
    for (n, m) in SWITCHES {
        out.push_str(&format!(
            "| `{n}` | {} |\n",
            m.map_or("never".to_owned(), |m| format!("v{m}"))
        ));
    }
    out
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rule: docs/kernel-profiles.md holds the table this module generates.
    #[test]
    fn docs_kernel_profiles_md_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/kernel-profiles.md");
        let doc = std::fs::read_to_string(path).expect("docs/kernel-profiles.md");
        let table = markdown_table();
        if std::env::var_os("UPDATE_EXPECT").is_some() && !doc.contains(&table) {
            let start = doc.find("<!-- table -->\n").expect("the table marker") + 15;
            let end = doc.find("<!-- end table -->").expect("the end marker");
            let new = format!("{}{table}{}", &doc[..start], &doc[end..]);
            std::fs::write(path, new).expect("write the doc");
            return;
        }
        assert!(
            doc.contains(&table),
            "docs/kernel-profiles.md is stale: rerun with UPDATE_EXPECT=1"
        );
    }

    #[test]
    fn every_row_has_a_column_per_profile() {
        for r in FEATURES_H {
            let n = r
                .columns
                .bytes()
                .filter(|b| !b.is_ascii_whitespace())
                .count();
            assert_eq!(n, VERSIONS.len(), "{}", r.name);
        }
    }

    /// Rule (KERNEL-HISTORY §5.1): features.h as each release had it.
    #[test]
    fn features_h_per_release() {
        let p = |v: &str| Profile::parse(v).unwrap();
        assert_eq!(p("4.18").feature("LB_BIAS"), Some(true));
        assert_eq!(p("5.4").feature("LB_BIAS"), None, "removed in 5.3");
        assert_eq!(p("6.1").feature("SIS_PROP"), Some(false));
        assert_eq!(p("6.12").feature("SIS_PROP"), None);
        assert_eq!(p("5.9").feature("RT_RUNTIME_SHARE"), Some(true));
        assert_eq!(p("5.10").feature("RT_RUNTIME_SHARE"), Some(false));
        assert_eq!(p("6.6").feature("HZ_BW"), Some(true));
        assert_eq!(p("6.12").feature("DELAY_DEQUEUE"), Some(true));
        assert_eq!(p("6.6").feature("DELAY_DEQUEUE"), None);
        let names: Vec<&str> = p("4.6").features_h().iter().map(|f| f.0).collect();
        assert!(names.contains(&"FORCE_SD_OVERLAP") && !names.contains(&"SIS_PROP"));
    }

    /// Rule: lbsim's switches are on from the release that merged the change.
    #[test]
    fn switches_follow_their_merge() {
        let p = |v: &str| Profile::parse(v).unwrap();
        assert_eq!(p("5.9").feature("LB_RELAX_BY_FAILED"), Some(false));
        assert_eq!(p("5.10").feature("LB_RELAX_BY_FAILED"), Some(true));
        assert_eq!(p("5.7").feature("RUNNABLE_AVG_INIT_UTIL"), Some(false));
        assert_eq!(p("4.6").feature("POST_INIT_UTIL_AVG"), Some(false));
        assert_eq!(p("4.11").feature("POST_INIT_UTIL_AVG"), Some(true));
        assert_eq!(p("5.9").feature("RUNNABLE_AVG_INIT_UTIL"), Some(true));
        assert_eq!(p("6.12").feature("LB_TIP_AVG_HIGH"), Some(false));
        assert_eq!(p("6.12").feature("LB_BUSIEST_NR_RUNNABLE"), Some(false));
        assert_eq!(
            p("5.9").tunables(),
            [
                ("imbalance_pct", "125"),
                ("busy_factor", "32"),
                ("sched_policy", "cfs")
            ]
        );
        assert!(p("6.12").tunables().is_empty());
    }

    #[test]
    fn absent_features_and_old_releases_are_refused() {
        let p = Profile::parse("v5.9").unwrap();
        let e = p.check_feature("SIS_UTIL", true).unwrap_err().to_string();
        assert_eq!(
            e,
            "SIS_UTIL does not exist in v5.9 (it first appears in the v6.1 profile)"
        );
        assert!(
            p.check_feature("SIS_UTIL", false).is_ok(),
            "NO_ is harmless"
        );
        assert!(
            p.check_feature("LB_RELAX_BY_FAILED", true).is_ok(),
            "a switch"
        );
        let e = Profile::parse("6.12")
            .unwrap()
            .check_feature("LAST_BUDDY", true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("removed after v6.1"), "{e}");
        assert!(Profile::parse("4.6").unwrap().pre_rework());
        assert!(!Profile::parse("5.7").unwrap().pre_rework());
        assert_eq!(Profile::nearest(6, 18).version(), Version(6, 12));
        assert_eq!(Profile::nearest(6, 8).version(), Version(6, 6));
        assert_eq!(Profile::nearest(5, 10).version(), Version(5, 10));
        assert_eq!(Profile::nearest(3, 10).version(), Version(4, 6));
        assert!(Profile::parse("5.8").is_err());
    }
}
