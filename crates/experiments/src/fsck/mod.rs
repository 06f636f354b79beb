//! The "fsck" operation: for every layout policy, write the workload's image through
//! libext2fs, run the real `e2fsck -fn` on it under block tracing, and price the trace on the
//! experiment's device model ([`run`]); then print the per-pass tables, write the report and
//! the JSON ([`report`]).

pub mod breakdown;
pub mod report;
pub mod run;
pub mod sensitivity;

pub use run::{PassResult, PolicyRun, RunOptions};

use crate::{Experiment, Operation, RunArgs};
use anyhow::{bail, Result};
use serde::Deserialize;

/// The "fsck" operation (registered in [`crate::OPERATIONS`]).
pub struct Fsck;

/// Parameters of the "fsck" operation: an experiment's `[fsck]` table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsckSpec {
    /// Scale used when `--scale` is not given.
    pub default_scale: f64,
    /// Population name.
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

impl Operation for Fsck {
    fn name(&self) -> &'static str {
        "fsck"
    }

    fn check(&self, exp: &Experiment) -> Result<()> {
        let f: FsckSpec = exp.params()?;
        if f.policies.is_empty() {
            bail!("[fsck] policies is empty");
        }
        if !(f.default_scale > 0.0 && f.default_scale <= 1.0) {
            bail!("default_scale must be in (0, 1], got {}", f.default_scale);
        }
        Ok(())
    }

    fn run(&self, exp: &Experiment, args: &RunArgs) -> Result<()> {
        report::run_fsck(exp, args)
    }
}
