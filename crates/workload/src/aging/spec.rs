//! What an aging stream should do: the `[aging]` section of a TOML document, its defaults,
//! and the checks that need no tree (docs/aging.md).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::{MAX_AGE, MAX_DEPTH};
use crate::Error;

/// What an aging stream should do (TOML section `[aging]`; see docs/aging.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgingSpec {
    /// Seed of every random choice.
    #[serde(default)]
    pub seed: u64,
    /// Bytes to write, in multiples of the file system's capacity (0 ≤ age ≤ [`MAX_AGE`]).
    pub age: f64,
    /// Live data to hold, as a fraction of capacity in (0, 1]; at most the [`super::fullness_cap`]
    /// the metadata margin leaves. Default: the tree's own fullness, capped there.
    #[serde(default)]
    pub fullness: Option<f64>,
    /// Fraction of the writes that are extends of an existing file (the rest create files).
    #[serde(default = "default_extend_share")]
    pub extend_share: f64,
    /// Fraction of the frees that are truncates (the rest unlink files).
    #[serde(default = "default_truncate_share")]
    pub truncate_share: f64,
    /// Fraction of the operations that are renames.
    #[serde(default = "default_rename_share")]
    pub rename_share: f64,
    /// Fraction of the operations that consider a mkdir or rmdir.
    #[serde(default = "default_dir_share")]
    pub dir_share: f64,
    /// Steer sizes and depths toward their targets (Geriatrix); false = the naive generator.
    #[serde(default = "default_steer")]
    pub steer: bool,
    /// Target file-size distribution by count; default: the tree's own (or `size_shape`'s).
    #[serde(default)]
    pub sizes: Option<Vec<SizeWeight>>,
    /// Where the target size distribution comes from when `sizes` is not given.
    #[serde(default)]
    pub size_shape: SizeShape,
    /// Target distribution of files over depths (path components); default: the tree's own.
    #[serde(default)]
    pub depths: Option<Vec<DepthWeight>>,
}

fn default_extend_share() -> f64 {
    0.2
}
fn default_truncate_share() -> f64 {
    0.2
}
fn default_rename_share() -> f64 {
    0.05
}
fn default_dir_share() -> f64 {
    0.02
}
fn default_steer() -> bool {
    true
}

/// Where a target size distribution comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SizeShape {
    /// The tree's own files, measured.
    #[default]
    #[serde(rename = "tree")]
    Tree,
    /// Agrawal et al. (FAST '07) by count: the lognormal body and Pareto tail with the
    /// parameters Impressions (FAST '09, Table 2) gives them, as populations/ubuntu-32g.toml
    /// holds them, below 2 GiB (as the tree generator draws them); sizes uniform within a
    /// bucket.
    #[serde(rename = "agrawal-fast07")]
    AgrawalFast07,
}

/// One bucket of a target size distribution.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeWeight {
    /// The bucket's upper bound (exclusive): 1 for empty files, else a power of two; the
    /// bucket holds sizes from half of it.
    pub below_bytes: u64,
    /// Relative weight (by count of files).
    pub weight: f64,
}

/// One bucket of a target depth distribution.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DepthWeight {
    /// Path components of the file's name: 1 = in the root directory.
    pub depth: u32,
    /// Relative weight (by count of files).
    pub weight: f64,
}

impl AgingSpec {
    /// A spec with the defaults: `age` × capacity written, seed `seed`.
    pub fn new(age: f64, seed: u64) -> AgingSpec {
        AgingSpec {
            seed,
            age,
            fullness: None,
            extend_share: default_extend_share(),
            truncate_share: default_truncate_share(),
            rename_share: default_rename_share(),
            dir_share: default_dir_share(),
            steer: true,
            sizes: None,
            size_shape: SizeShape::Tree,
            depths: None,
        }
    }

    /// Reads the `[aging]` section of a TOML document (other sections are ignored); errors
    /// name `source_name`, the key and why.
    pub fn from_toml_str(text: &str, source_name: &str) -> Result<AgingSpec, Error> {
        #[derive(Deserialize)]
        struct Doc {
            aging: Option<AgingSpec>,
        }
        let bad = |key: &str, reason: String| Error::BadAging {
            source_name: source_name.to_string(),
            key: key.to_string(),
            reason,
        };
        let doc: Doc = toml::from_str(text).map_err(|e| bad("(syntax)", e.to_string()))?;
        let spec = doc
            .aging
            .ok_or_else(|| bad("(section)", "no [aging] section".into()))?;
        spec.validate().map_err(|e| match e {
            Error::BadAging { key, reason, .. } => bad(&key, reason),
            other => other,
        })?;
        Ok(spec)
    }

    /// Checks what can be checked without the tree: every parameter's range, and
    /// distributions that are distributions. Errors with [`Error::BadAging`] naming the key.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |key: &str, reason: String| {
            Err(Error::BadAging {
                source_name: "aging spec".into(),
                key: key.into(),
                reason,
            })
        };
        if !(self.age.is_finite() && (0.0..=MAX_AGE).contains(&self.age)) {
            return bad(
                "age",
                format!(
                    "{} is not a number of capacities in [0, {MAX_AGE}] (bytes written = age × capacity)",
                    self.age
                ),
            );
        }
        if let Some(f) = self.fullness {
            if !(f.is_finite() && f > 0.0 && f <= 1.0) {
                return bad(
                    "fullness",
                    format!("{f} is not a fraction of capacity in (0, 1]"),
                );
            }
        }
        for (key, v) in [
            ("extend_share", self.extend_share),
            ("truncate_share", self.truncate_share),
            ("rename_share", self.rename_share),
            ("dir_share", self.dir_share),
        ] {
            if !(v.is_finite() && (0.0..=1.0).contains(&v)) {
                return bad(key, format!("{v} is not a fraction in [0, 1]"));
            }
        }
        // writes must keep happening for the stream to reach its volume
        if self.rename_share + self.dir_share > 0.9 {
            return bad(
                "rename_share",
                format!(
                    "rename_share + dir_share = {} leaves under 10% of the operations to write and free data (at most 0.9)",
                    self.rename_share + self.dir_share
                ),
            );
        }
        if self.sizes.is_some() && self.size_shape != SizeShape::Tree {
            return bad(
                "size_shape",
                "give either sizes or size_shape, not both".into(),
            );
        }
        if let Some(sizes) = &self.sizes {
            let buckets: Vec<(u64, f64)> =
                sizes.iter().map(|s| (s.below_bytes, s.weight)).collect();
            check_distribution("sizes", "below_bytes", &buckets, |below_bytes| {
                (!(below_bytes == 1 || (below_bytes >= 2 && below_bytes.is_power_of_two())))
                    .then(|| format!("{below_bytes} is not 1 (empty files) or a power of two"))
            })
            .or_else(|(key, reason)| bad(&key, reason))?;
            if sizes.iter().all(|s| s.weight == 0.0 || s.below_bytes == 1) {
                return bad(
                    "sizes",
                    "only empty files: a stream of them writes nothing and never reaches its volume".into(),
                );
            }
        }
        if let Some(depths) = &self.depths {
            let buckets: Vec<(u64, f64)> = depths
                .iter()
                .map(|d| (u64::from(d.depth), d.weight))
                .collect();
            check_distribution("depths", "depth", &buckets, |depth| {
                (!(1..=u64::from(MAX_DEPTH)).contains(&depth)).then(|| {
                    format!("{depth} is not in 1..={MAX_DEPTH} (1 = in the root directory)")
                })
            })
            .or_else(|(key, reason)| bad(&key, reason))?;
        }
        Ok(())
    }
}

/// Checks one target distribution, `name` (`sizes` or `depths`), given as (key, weight) per
/// bucket: not empty; each bucket's key valid (`key_problem` says why not) and given once;
/// each weight finite and ≥ 0; not every weight 0; a finite sum. Sizes and depths are drawn
/// the same way from their weights, so they are held to the same rules. Returns the key of the
/// first problem (`depths[2].weight`) and why.
fn check_distribution(
    name: &str,
    key_field: &str,
    buckets: &[(u64, f64)],
    key_problem: impl Fn(u64) -> Option<String>,
) -> Result<(), (String, String)> {
    if buckets.is_empty() {
        return Err((
            name.into(),
            "an empty distribution (leave it out to use the tree's own)".into(),
        ));
    }
    let mut seen = HashSet::new();
    for (i, &(key, weight)) in buckets.iter().enumerate() {
        let at = format!("{name}[{i}]");
        if let Some(reason) = key_problem(key) {
            return Err((format!("{at}.{key_field}"), reason));
        }
        if !seen.insert(key) {
            return Err((format!("{at}.{key_field}"), format!("{key} appears twice")));
        }
        if !(weight.is_finite() && weight >= 0.0) {
            return Err((
                format!("{at}.weight"),
                format!("{weight} is not a weight ≥ 0"),
            ));
        }
    }
    if buckets.iter().all(|&(_, weight)| weight == 0.0) {
        return Err((name.into(), "every weight is 0".into()));
    }
    if !buckets
        .iter()
        .map(|&(_, weight)| weight)
        .sum::<f64>()
        .is_finite()
    {
        return Err((
            name.into(),
            "the weights' sum is not a finite number".into(),
        ));
    }
    Ok(())
}
