//! Named experiments: one TOML file each under `experiments/`.
//!
//! An experiment is data: the operation, its parameters, the device preset, and the published
//! numbers it is judged against. Adding one needs no Rust change unless it needs a new
//! operation (the modules listed in [`crate::OPERATIONS`]): `build.rs` embeds every file of
//! `experiments/` in [`SHIPPED`]. Loading checks what every experiment shares (its operation,
//! its `default_scale`) and hands the operation's table to the operation's own check.

use crate::{Operation, SHIPPED};
use anyhow::{bail, Context, Result};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One named experiment, as written in its TOML file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    /// Its name (`layoutlab reproduce NAME`).
    pub name: String,
    /// One line saying what it measures.
    pub title: String,
    /// The operation (one of [`crate::OPERATIONS`]); its parameters are the table of that name.
    pub operation: String,
    /// Device preset the traces or jobs run on (empty for an experiment that replays nothing).
    #[serde(default)]
    pub device: String,
    /// Seed of every random choice.
    pub seed: u64,
    /// Published numbers, shown beside ours, never used in the computation.
    #[serde(default)]
    pub published: Published,
    /// The operation's own table (`[fsck]`, `[fio]`, ...), read by its module.
    #[serde(skip)]
    pub params: toml::Table,
    /// Device-preset values the result rests on that are borrowed or assumed, each with the
    /// values to try instead (`reproduce NAME --sensitivity`).
    #[serde(default)]
    pub sensitivity: Vec<Sensitivity>,
    /// Other drives of the same class and era as `device`, every value sourced independently
    /// (issue 27's device factor; docs/hdd-model.md, "Alternative presets"). With
    /// `--sensitivity`, the same traces are priced on each.
    #[serde(default)]
    pub alternatives: Vec<String>,
    /// Devices of another class than `device` that the post's machine may have had, where the
    /// post names no storage device (issue 27's device factor): with `--sensitivity`, the same
    /// traces are priced on each too. They are not stand-ins for the post's device, only how
    /// far the class alone moves ours.
    #[serde(default)]
    pub other_classes: Vec<String>,
    /// CPU presets (cpus/) standing for the post's machine: with `--sensitivity`, the same
    /// traces are also priced with e2fsck's think time times each one's factor F (issue 27's
    /// CPU factor, docs/fidelity.md section 5).
    #[serde(default)]
    pub period_cpus: Vec<String>,
}

/// One borrowed or assumed preset value and its plausible alternatives.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sensitivity {
    /// Why the value is uncertain and where the alternatives come from.
    pub why: String,
    /// The alternatives, one replay each: dotted preset keys and their values (several keys
    /// when values move together, e.g. surfaces and cylinders at a constant capacity).
    pub set: Vec<BTreeMap<String, toml::Value>>,
}

/// Published numbers of an experiment, keyed by what they describe (a policy, a block size).
#[derive(Clone, Debug, Default, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Published {
    /// Where they were published.
    #[serde(default)]
    pub source: String,
    /// Total seconds per policy.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub total_seconds: BTreeMap<String, f64>,
    /// User CPU seconds per policy.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub user_seconds: BTreeMap<String, f64>,
    /// System CPU seconds per policy.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sys_seconds: BTreeMap<String, f64>,
    /// IOPS per block size.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub iops: BTreeMap<String, f64>,
    /// Mean completion latency (ms) per block size.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mean_ms: BTreeMap<String, f64>,
    /// Seconds per e2fsck pass, per policy (pass label as our tables print it: "1" … "5",
    /// "total").
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pass_seconds: BTreeMap<String, BTreeMap<String, f64>>,
    /// MB (2^20 bytes, as e2fsck -tt prints them) read per e2fsck pass, per policy.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pass_mb_read: BTreeMap<String, BTreeMap<String, f64>>,
    /// The published file system as `e2fsck -v` described it (`inodes_used`, `blocks_used`,
    /// `non_contiguous_files`, `non_contiguous_dirs`, `extent_depth_0`, `extent_depth_1`,
    /// `ind_inodes`): shown beside ours, never read by the computation.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub vitals: BTreeMap<String, f64>,
    /// Other published figures, by name (mkfs-overhead: dumpe2fs and df values).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub figures: BTreeMap<String, f64>,
}

impl Experiment {
    /// Its operation.
    pub fn operation(&self) -> Result<&'static dyn Operation> {
        crate::operation(&self.operation)
    }

    /// The experiment's `default_scale` (a key of its operation's table), checked at load;
    /// `None` for an experiment without a scale (fio-randread, mkfs-overhead and
    /// request-merging run at scale 1 only).
    pub fn default_scale(&self) -> Result<Option<f64>> {
        let Some(v) = self.params.get("default_scale") else {
            return Ok(None);
        };
        let scale = v
            .as_float()
            .or(v.as_integer().map(|i| i as f64))
            .with_context(|| format!("default_scale must be a number, got {v}"))?;
        check_scale("default_scale", scale)?;
        Ok(Some(scale))
    }

    /// The operation's table, parsed as its module's parameter type `T`.
    pub fn params<T: DeserializeOwned>(&self) -> Result<T> {
        T::deserialize(toml::Value::Table(self.params.clone()))
            .with_context(|| format!("parsing the [{}] table", self.operation))
    }
}

/// Refuses a scale outside (0, 1] (`what` names it: `--scale`, `default_scale`): the one check
/// of every experiment's scale, at load ([`Experiment::default_scale`]) and at run
/// ([`crate::RunArgs::run_scale`]).
pub fn check_scale(what: &str, scale: f64) -> Result<()> {
    if !(scale > 0.0 && scale <= 1.0) {
        bail!("{what} must be in (0, 1], got {scale}");
    }
    Ok(())
}

/// The mkfs profile `policy` is formatted with: its entry in `per_policy`, else `default`
/// (an experiment's `mkfs_profile` and `mkfs_profiles`).
pub fn mkfs_profile_for<'a>(
    policy: &str,
    default: &'a str,
    per_policy: &'a BTreeMap<String, String>,
) -> &'a str {
    per_policy.get(policy).map_or(default, String::as_str)
}

/// Refuses a `mkfs_profiles` entry for a policy the experiment does not compare.
pub fn check_mkfs_profiles(
    policies: &[String],
    per_policy: &BTreeMap<String, String>,
) -> Result<()> {
    if let Some(p) = per_policy.keys().find(|p| !policies.contains(p)) {
        bail!(
            "mkfs_profiles names policy '{p}', which is not in policies ({})",
            policies.join(", ")
        );
    }
    Ok(())
}

/// Names of the shipped experiments.
pub fn names() -> Vec<&'static str> {
    SHIPPED.iter().map(|(n, _)| *n).collect()
}

/// Load a shipped experiment by name, or an experiment TOML file by path.
pub fn load(name_or_path: &str) -> Result<Experiment> {
    let (text, origin) = if let Some((_, text)) = SHIPPED.iter().find(|(n, _)| *n == name_or_path) {
        (text.to_string(), format!("experiments/{name_or_path}.toml"))
    } else if name_or_path.ends_with(".toml") || PathBuf::from(name_or_path).exists() {
        let text = std::fs::read_to_string(name_or_path)
            .with_context(|| format!("reading experiment file {name_or_path}"))?;
        (text, name_or_path.to_string())
    } else {
        bail!(
            "unknown experiment '{name_or_path}'; valid experiments: {} (or a path to an experiment .toml)",
            names().join(", ")
        );
    };
    parse(&text, &origin)
}

/// Parse and check an experiment file's text (`origin` names it in errors).
pub fn parse(text: &str, origin: &str) -> Result<Experiment> {
    let mut table: toml::Table =
        toml::from_str(text).with_context(|| format!("parsing experiment {origin}"))?;
    // The operation's table is its module's to read; every other key is common to all.
    let op_name = table
        .get("operation")
        .and_then(|v| v.as_str())
        .map(str::to_string);
    if let Some(name) = &op_name {
        crate::operation(name).with_context(|| origin.to_string())?;
    }
    let params = match op_name.as_deref().and_then(|n| table.remove(n)) {
        Some(toml::Value::Table(t)) => Some(t),
        Some(_) => bail!(
            "{origin}: [{}] must be a table",
            op_name.as_deref().unwrap_or_default()
        ),
        None => None,
    };
    let mut exp = Experiment::deserialize(toml::Value::Table(table))
        .with_context(|| format!("parsing experiment {origin}"))?;
    let op = crate::operation(&exp.operation)?;
    let Some(params) = params else {
        bail!(
            "{origin}: operation '{}' needs a [{}] table",
            exp.operation,
            exp.operation
        );
    };
    exp.params = params;
    exp.default_scale().with_context(|| origin.to_string())?;
    op.check(&exp).with_context(|| origin.to_string())?;
    Ok(exp)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `SHIPPED` is generated from the directory: every file there is shipped under its stem,
    /// in file-name order, and loads (its `name` is its stem, its table checks).
    #[test]
    fn every_file_in_experiments_is_shipped_and_loads() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .map(|p| p.file_stem().unwrap().to_str().unwrap().to_string())
            .collect();
        files.sort();
        assert!(!files.is_empty());
        assert_eq!(names(), files);
        for n in &files {
            let text = std::fs::read_to_string(dir.join(format!("{n}.toml"))).unwrap();
            let shipped = SHIPPED.iter().find(|(k, _)| k == n).unwrap().1;
            assert_eq!(shipped, text, "{n}: the embedded text is not the file's");
            assert_eq!(
                &load(n).unwrap().name,
                n,
                "{n}: its name is not its file's stem"
            );
        }
    }

    /// Every experiment's scale is resolved and checked by one function: `--scale` over the
    /// file's `default_scale`, both in (0, 1], whatever the operation.
    #[test]
    fn the_scale_is_checked_once_for_every_operation() {
        for n in names() {
            let exp = load(n).unwrap();
            let Some(default) = exp.default_scale().unwrap() else {
                continue;
            };
            let args = |scale| crate::RunArgs {
                scale,
                ..crate::RunArgs::default()
            };
            assert_eq!(args(None).run_scale(&exp).unwrap(), default, "{n}");
            assert_eq!(args(Some(0.5)).run_scale(&exp).unwrap(), 0.5, "{n}");
            for bad in [0.0, -0.1, 1.5, f64::NAN] {
                let err = args(Some(bad)).run_scale(&exp).unwrap_err().to_string();
                assert!(err.contains("--scale must be in (0, 1]"), "{n}: {err}");
            }
            let text = SHIPPED.iter().find(|(k, _)| *k == n).unwrap().1;
            let line = format!("default_scale = {default}");
            assert!(text.contains(&line), "{n}: no '{line}' in the file");
            let err = format!(
                "{:#}",
                parse(&text.replace(&line, "default_scale = 0"), "s.toml").unwrap_err()
            );
            assert!(
                err.contains("default_scale must be in (0, 1]"),
                "{n}: {err}"
            );
        }
        let fio = load("fio-randread").unwrap();
        assert!(crate::RunArgs::default().run_scale(&fio).is_err());
    }

    #[test]
    fn unknown_experiment_lists_valid_names() {
        let err = load("no-such-experiment").unwrap_err().to_string();
        assert!(
            err.contains("metacluster-fsck") && err.contains("fio-randread"),
            "{err}"
        );
    }

    #[test]
    fn operation_without_its_table_is_an_error() {
        let dir = std::env::temp_dir().join(format!("ll-exp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("bad.toml");
        std::fs::write(
            &p,
            "name='x'\ntitle='t'\noperation='fsck'\ndevice='d'\nseed=1\n",
        )
        .unwrap();
        let err = format!("{:#}", load(p.to_str().unwrap()).unwrap_err());
        assert!(err.contains("needs a [fsck] table"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Once, an unknown operation ran as fio; now it is an error naming every operation.
    #[test]
    fn unknown_operation_is_an_error_listing_the_valid_ones() {
        let text = "name='x'\ntitle='t'\noperation='fsk'\ndevice='d'\nseed=1\n[fsk]\nbs=['4k']\n";
        let err = format!("{:#}", parse(text, "x.toml").unwrap_err());
        assert!(err.contains("x.toml"), "{err}");
        assert!(err.contains("unknown operation 'fsk'"), "{err}");
        for op in crate::operation_names() {
            assert!(err.contains(op), "{err} does not list {op}");
        }
    }

    #[test]
    fn a_table_of_another_operation_is_refused() {
        let fio = SHIPPED
            .iter()
            .find(|(n, _)| *n == "fio-randread")
            .unwrap()
            .1;
        let text = format!("{fio}\n[fsck]\ndefault_scale = 0.1\n");
        let err = format!("{:#}", parse(&text, "x.toml").unwrap_err());
        assert!(err.contains("fsck"), "{err}");
    }

    #[test]
    fn bad_parameters_are_refused_at_load_with_the_file_named() {
        let fsck = SHIPPED
            .iter()
            .find(|(n, _)| *n == "metacluster-fsck")
            .unwrap()
            .1;
        let text = fsck.replace("default_scale = 0.05", "default_scale = 2.0");
        let err = format!("{:#}", parse(&text, "m.toml").unwrap_err());
        assert!(
            err.contains("m.toml") && err.contains("default_scale"),
            "{err}"
        );
        let fio = SHIPPED
            .iter()
            .find(|(n, _)| *n == "fio-randread")
            .unwrap()
            .1;
        let text = fio.replace("iodepth = 1", "iodepth = 1\nqueue = 3");
        let err = format!("{:#}", parse(&text, "f.toml").unwrap_err());
        assert!(err.contains("queue"), "{err}");
    }
}
