//! The "fsck" operation: for every layout policy, write the workload's image through
//! libext2fs, run the real `e2fsck -fn` on it under block tracing, and price the trace on the
//! experiment's device model ([`run`], whose [`run::run_fsck`] is the whole pipeline); then
//! print the per-pass tables, write the report and the JSON ([`report`], rendering only).

pub mod breakdown;
pub mod report;
pub mod run;
pub mod sensitivity;
pub mod split;
pub mod vitals;

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
    /// Copies of the population side by side, each under its own top directory, on a file
    /// system as many times as large (`Population::copies`; issue 29's trees filling a large
    /// file system). `--scale` shrinks each copy. None: one.
    #[serde(default)]
    pub workload_copies: Option<u32>,
    /// The file system's size at scale 1 in GB (10^9 bytes), instead of the workload's;
    /// `--scale` shrinks it with the files. For a band of the tree: bench5's list asks for
    /// 400 GB of files, so on the post's 400 GB file system its 350th file keeps only part of
    /// its 10 GB (docs/fidelity.md, "metacluster-fsck: bench5 against the post's file list").
    #[serde(default)]
    pub fs_gb: Option<f64>,
    /// mkfs profile name (of every policy not in `mkfs_profiles`).
    pub mkfs_profile: String,
    /// A policy's own mkfs profile, where it differs (ext3 beside ext4 on the same tree).
    #[serde(default)]
    pub mkfs_profiles: std::collections::BTreeMap<String, String>,
    /// Layout policies compared, in order; the first is the baseline.
    pub policies: Vec<String>,
    /// Block-device readahead the OS used with the modelled disk (KiB).
    pub os_read_ahead_kb: u32,
    /// Largest request the OS sent the modelled disk (KiB); `None`: leave the loop device's.
    #[serde(default)]
    pub os_max_sectors_kb: Option<u32>,
    /// The capture device's `queue/rotational`; `None`: the preset's (1 for every hard disk).
    /// A run sets it (`--set os_rotational=false`) to measure the flag alone: the request
    /// stream's factor of docs/fidelity.md.
    #[serde(default)]
    pub os_rotational: Option<bool>,
    /// Scale factor applied to measured CPU time between requests.
    pub cpu_scale: f64,
    /// Extra arguments to the real e2fsck, after `-fnv -tt -C 3`.
    #[serde(default)]
    pub e2fsck_extra_args: Vec<String>,
    /// Run e2fsck seeing one CPU, so libext2fs reads bitmaps with one thread (as in 2007).
    #[serde(default)]
    pub e2fsck_single_cpu: bool,
    /// Run the traced e2fsck under `SCHED_FIFO` at priority 1 on the plain capture device too
    /// (closed loop always does), so that on a loaded machine it does not queue for a CPU
    /// behind other work after each of its synchronous reads. The request stream stays the
    /// same (`crates/cli/tests/metadata_on_ssd.rs`,
    /// `a_real_time_capture_makes_the_requests_a_plain_one_makes`); docs/rig.md, "A capture
    /// that waits less for a CPU".
    #[serde(default)]
    pub e2fsck_real_time: bool,
    /// The e2fsprogs release of the published runs (`--e2fsck period` runs its e2fsck).
    #[serde(default)]
    pub period_e2fsprogs: Option<String>,
    /// Metadata on a faster device (issue 29): the SSD preset that holds the metadata region
    /// of each policy that keeps one (`ext4-meta-ssd`), the experiment's device the rest;
    /// those policies' traces are priced on both ([`split`]). None: no split.
    #[serde(default)]
    pub fast_device: Option<String>,
}

impl FsckSpec {
    /// The workload at `scale` as this table asks for it: its copies side by side, on a file
    /// system of `fs_gb` when given.
    pub fn population(&self, scale: f64) -> Result<layoutlab_workload::Population> {
        let mut full = layoutlab_workload::population_by_name(&self.workload)?;
        if let Some(gb) = self.fs_gb {
            full.fs_bytes = (gb * 1e9) as u64;
        }
        Ok(full
            .scale(scale)?
            .copies(self.workload_copies.unwrap_or(1))?)
    }

    /// What the e2fsck check under trace takes from this table.
    pub fn check_spec(&self) -> crate::steps::check::CheckSpec {
        crate::steps::check::CheckSpec {
            os_read_ahead_kb: self.os_read_ahead_kb,
            os_max_sectors_kb: self.os_max_sectors_kb,
            os_rotational: self.os_rotational,
            e2fsck_extra_args: self.e2fsck_extra_args.clone(),
            e2fsck_single_cpu: self.e2fsck_single_cpu,
            e2fsck_real_time: self.e2fsck_real_time,
        }
    }

    /// The mkfs profile `policy` is formatted with.
    pub fn mkfs_profile_of(&self, policy: &str) -> &str {
        crate::experiment::mkfs_profile_for(policy, &self.mkfs_profile, &self.mkfs_profiles)
    }
}

impl Operation for Fsck {
    fn name(&self) -> &'static str {
        "fsck"
    }

    /// It runs e2fsck on a loop device under block tracing.
    fn needs_root(&self, _exp: &Experiment) -> bool {
        true
    }

    /// `--sensitivity` replays the captured traces on the preset's variants (`sensitivity.rs`).
    fn supports_sensitivity(&self) -> bool {
        true
    }

    fn options(&self) -> &'static [crate::OpOption] {
        &[
            crate::OpOption {
                key: "workload_copies",
                help: "copies of the workload side by side, each in its own top directory, on a file system as many times as large (a whole number; default 1)",
                flag: None,
                flag_aliases: &[],
            },
            crate::OpOption {
                key: "fs_gb",
                help: "the file system's size at scale 1 in GB (10^9 bytes) instead of the workload's (bench5: the 400 GB drive); --scale shrinks it with the files. 420 gives bench5's whole list room, its 350th file included (on the 400 GB preset it is priced on two drives: give a larger --device)",
                flag: None,
                flag_aliases: &[],
            },
            crate::OpOption {
                key: "e2fsck_real_time",
                help: "run the traced e2fsck under SCHED_FIFO (priority 1) on the plain capture device too, true or false (default false); the requests stay the same, the capture waits less for a CPU on a loaded machine",
                flag: None,
                flag_aliases: &[],
            },
            crate::OpOption {
                key: "os_rotational",
                help: "the capture device's queue/rotational, true or false (default: the preset's, true for every hard disk); false switches the flag alone",
                flag: None,
                flag_aliases: &[],
            },
        ]
    }

    /// `--closed-loop` runs e2fsck on the emulated device (`run.rs`).
    fn supports_cpu_scale(&self) -> bool {
        true
    }

    fn supports_closed_loop(&self) -> bool {
        true
    }

    fn check(&self, exp: &Experiment) -> Result<()> {
        let f: FsckSpec = exp.params()?;
        if f.policies.is_empty() {
            bail!("[fsck] policies is empty");
        }
        crate::experiment::check_mkfs_profiles(&f.policies, &f.mkfs_profiles)?;
        if let Some(gb) = f.fs_gb {
            if !(gb.is_finite() && gb > 0.0) {
                bail!("[fsck] fs_gb must be a positive number of GB, got {gb}");
            }
        }
        if let Some(fast) = &f.fast_device {
            // a sweep cell may narrow the policies to ones without a region: nothing to split
            crate::support::load_device(fast)?;
        }
        if let Some(v) = &f.period_e2fsprogs {
            layoutlab_rig::E2fsprogs::by_name(v)?;
        }
        Ok(())
    }

    fn run(&self, exp: &Experiment, args: &RunArgs) -> Result<()> {
        run::run_fsck(exp, args)
    }
}

#[cfg(test)]
mod tests {
    use crate::experiment;

    #[test]
    fn an_mkfs_profile_for_a_policy_not_compared_is_refused() {
        let text = crate::SHIPPED
            .iter()
            .find(|(n, _)| *n == "ext3-vs-ext4-fsck")
            .unwrap()
            .1
            .replace(
                "{ \"ext3-2007\" = \"ext3-2009\" }",
                "{ \"ext3-2008\" = \"ext3-2009\" }",
            );
        let err = format!("{:#}", experiment::parse(&text, "x.toml").unwrap_err());
        assert!(
            err.contains("'ext3-2008'") && err.contains("ext3-2007, ext4-2008"),
            "{err}"
        );
    }

    #[test]
    fn an_unknown_fast_device_is_refused_at_load() {
        let text = crate::SHIPPED
            .iter()
            .find(|(n, _)| *n == "metadata-on-ssd")
            .unwrap()
            .1
            .replace(
                "fast_device = \"ssd-sata-2010\"",
                "fast_device = \"ssd-2010\"",
            );
        let err = format!("{:#}", experiment::parse(&text, "m.toml").unwrap_err());
        assert!(
            err.contains("ssd-2010") && err.contains("ssd-sata-2010"),
            "{err}"
        );
    }

    /// `fs_gb` resizes the file system and nothing else, and 420 GB gives bench5's whole list
    /// room: on the post's 400 GB drive the ext3-2007 plan cuts the 350th file short.
    #[test]
    fn fs_gb_gives_bench5_s_whole_list_room_and_changes_nothing_else() {
        let scale = 0.01;
        // Each policy's files cut short, and the population.
        let plan_of = |sets: &[String], policy: &str| {
            let exp = crate::sweep::with_sets("metacluster-fsck", sets).unwrap();
            let spec: super::FsckSpec = exp.params().unwrap();
            let pop = spec.population(scale).unwrap();
            let (_, geo) = crate::steps::plan::format(&spec.mkfs_profile, pop.fs_bytes).unwrap();
            let policy =
                layoutlab_layout::policy_by_name(policy, &layoutlab_layout::PolicyParams::new())
                    .unwrap();
            let plan = crate::steps::plan::checked(policy.as_ref(), &geo, &pop, exp.seed).unwrap();
            let short: Vec<String> = plan
                .short_files(&pop)
                .iter()
                .map(|f| f.name.clone())
                .collect();
            (pop, short)
        };
        for policy in ["ext3-2007", "ext3-metacluster"] {
            let (shipped, shipped_short) = plan_of(&[], policy);
            let (roomy, roomy_short) = plan_of(&["fs_gb=420".to_string()], policy);
            // At this scale the list's last files run out (at scale 1 the last one alone).
            assert!(
                shipped_short.contains(&"f349".to_string()),
                "{policy}: {shipped_short:?}"
            );
            assert!(roomy_short.is_empty(), "{policy}: {roomy_short:?}");
            assert_eq!(roomy.fs_bytes, (420e9 * scale) as u64);
            assert!(shipped.fs_bytes < roomy.fs_bytes);
            assert_eq!(shipped.ops, roomy.ops, "the same files, in the same order");
        }
    }

    #[test]
    fn a_file_system_of_no_size_is_refused_at_load() {
        for bad in ["fs_gb=0", "fs_gb=-400"] {
            let err = format!(
                "{:#}",
                crate::sweep::with_sets("metacluster-fsck", &[bad.to_string()]).unwrap_err()
            );
            assert!(err.contains("fs_gb must be a positive"), "{bad}: {err}");
        }
    }

    #[test]
    fn each_policy_gets_its_own_mkfs_profile() {
        let exp = experiment::load("ext3-vs-ext4-fsck").unwrap();
        let spec: super::FsckSpec = exp.params().unwrap();
        assert_eq!(spec.mkfs_profile_of("ext3-2007"), "ext3-2009");
        assert_eq!(spec.mkfs_profile_of("ext4-2008"), "ext4-2009");
    }
}
