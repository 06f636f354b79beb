//! Named experiments: one TOML file each under `experiments/`.
//!
//! An experiment is data: the operation, its parameters, the device preset, and the published
//! numbers it is judged against. Adding one needs no Rust change unless it needs a new
//! operation (today: `fsck`, `fio`).

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The experiments shipped with layoutlab, embedded so the binary works from anywhere.
const SHIPPED: &[(&str, &str)] = &[
    (
        "metacluster-fsck",
        include_str!("../../../experiments/metacluster-fsck.toml"),
    ),
    (
        "fio-randread",
        include_str!("../../../experiments/fio-randread.toml"),
    ),
];

/// One named experiment, as written in its TOML file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    /// Its name (`layoutlab reproduce NAME`).
    pub name: String,
    /// One line saying what it measures.
    pub title: String,
    /// The operation: "fsck" or "fio".
    pub operation: String,
    /// Device preset the traces or jobs run on.
    pub device: String,
    /// Seed of every random choice.
    pub seed: u64,
    /// Parameters of the "fsck" operation.
    pub fsck: Option<FsckSpec>,
    /// Parameters of the "fio" operation.
    pub fio: Option<FioSpec>,
    /// Published numbers, shown beside ours, never used in the computation.
    #[serde(default)]
    pub published: Published,
    /// Device-preset values the result rests on that are borrowed or assumed, each with the
    /// values to try instead (`reproduce NAME --sensitivity`).
    #[serde(default)]
    pub sensitivity: Vec<Sensitivity>,
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

/// Parameters of the "fsck" operation.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsckSpec {
    /// Scale used when `--scale` is not given.
    pub default_scale: f64,
    /// Workload profile name.
    pub workload: String,
    /// mkfs profile name.
    pub mkfs_profile: String,
    /// Layout policies compared, in order; the first is the baseline.
    pub policies: Vec<String>,
    /// Block-device readahead the OS used with the modelled disk (KiB).
    pub os_read_ahead_kb: u32,
    /// Largest request the OS sent the modelled disk (KiB); `None`: leave the loop device's.
    #[serde(default)]
    pub os_max_sectors_kb: Option<u32>,
    /// Scale factor applied to measured CPU time between requests.
    pub cpu_scale: f64,
    /// Extra arguments to the real e2fsck, after `-fn -tt -C 3`.
    #[serde(default)]
    pub e2fsck_extra_args: Vec<String>,
    /// Run e2fsck seeing one CPU, so libext2fs reads bitmaps with one thread (as in 2007).
    #[serde(default)]
    pub e2fsck_single_cpu: bool,
}

/// Parameters of the "fio" operation: one job per block size.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FioSpec {
    /// read, write, randread, randwrite.
    pub rw: String,
    /// Bytes of the device touched (fio's size=), e.g. "16g".
    pub span: String,
    /// Model seconds per job.
    pub runtime_s: f64,
    /// Requests in flight.
    pub iodepth: u32,
    /// Block sizes, e.g. ["4k", "8k"].
    pub bs: Vec<String>,
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
    let exp: Experiment =
        toml::from_str(&text).with_context(|| format!("parsing experiment {origin}"))?;
    match (exp.operation.as_str(), &exp.fsck, &exp.fio) {
        ("fsck", Some(f), _) => {
            if f.policies.is_empty() {
                bail!("{origin}: [fsck] policies is empty");
            }
            if !(f.default_scale > 0.0 && f.default_scale <= 1.0) {
                bail!(
                    "{origin}: default_scale must be in (0, 1], got {}",
                    f.default_scale
                );
            }
        }
        ("fio", _, Some(f)) => {
            if f.bs.is_empty() {
                bail!("{origin}: [fio] bs is empty");
            }
        }
        ("fsck", None, _) | ("fio", _, None) => {
            bail!(
                "{origin}: operation '{}' needs a [{}] table",
                exp.operation,
                exp.operation
            )
        }
        (other, _, _) => bail!("{origin}: unknown operation '{other}'; valid: fsck, fio"),
    }
    Ok(exp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_experiments_parse() {
        for n in names() {
            let e = load(n).unwrap();
            assert_eq!(e.name, n);
        }
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
}
