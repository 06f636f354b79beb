//! `layoutlab fsck-predict`: how long would fsck take on this volume, on each modelled disk.

use super::{write_json, Human};
use anyhow::Result;
use clap::Args as ClapArgs;
use std::path::PathBuf;

/// Arguments of `fsck-predict`.
#[derive(ClapArgs)]
pub struct Args {
    /// What to check: a block device, a file-system image, or a metadata image (`e2image -r`
    /// or `e2image -Q` of ext2/3/4, `xfs_metadump` output, `btrfs-image` output). Detected by
    /// content; opened read-only, never mounted, never written.
    pub source: PathBuf,
    /// Device presets to predict on, comma-separated (default: every shipped preset; see
    /// `layoutlab device list`). A preset smaller than the file system is skipped, saying so.
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub device: Vec<String>,
    /// Check SOURCE even though it is mounted. The file system may change under the checker,
    /// so the result is approximate.
    #[arg(long)]
    pub allow_mounted: bool,
    /// Also lay SOURCE's tree out again with POLICY (ext only; repeatable or comma-separated)
    /// on the same geometry, write it through libext2fs, and predict its check beside
    /// SOURCE's: "what would ext4-2009 or metaclustering have cost on my data?". See
    /// `layoutlab plan --help` for the policies.
    #[arg(long, value_delimiter = ',', value_name = "POLICY")]
    pub relayout: Vec<String>,
    /// Whose e2fsck checks an ext SOURCE: today (the system's) or a period release (1.40.2,
    /// 1.41.4, 1.41.14, built by `make deps`). A release that does not know a feature of
    /// SOURCE refuses it, and the error says which.
    #[arg(long, value_name = "VERSION", default_value = "today", value_parser = ["today", "1.40.2", "1.41.4", "1.41.14"])]
    pub e2fsck: String,
    /// Where a metadata dump is restored (sparse) while the check runs.
    #[arg(long, value_name = "DIR", default_value_os_t = std::env::temp_dir())]
    pub workdir: PathBuf,
    /// Write the report as JSON to PATH ("-" = stdout, tables then go to stderr).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Capture closed loop: the checker runs on the one --device preset's emulated device
    /// (`device emulate`, read-only; requests complete when the model says, K times faster),
    /// and the report gives the time measured there beside the open-loop replay of the same
    /// stream (docs/emulate.md). Needs exactly one --device; not with --relayout. K defaults
    /// to 1.
    #[arg(long, value_name = "K", num_args = 0..=1, default_missing_value = "1")]
    pub closed_loop: Option<f64>,
    /// Capture an ext check as fsck experiment EXPERIMENT captures its own (e.g.
    /// ext4-fsck-allocator): its loop device's read-ahead, largest request and rotational
    /// flag, and its e2fsck arguments and CPU settings (one CPU, real-time), so that a time
    /// predicted here sits beside that experiment's table. Its device is the default --device.
    /// Whose e2fsck stays --e2fsck's.
    #[arg(long, value_name = "EXPERIMENT")]
    pub like: Option<String>,
}

/// Run `fsck-predict`.
pub fn run(a: Args) -> Result<()> {
    layoutlab_rig::cleanup::install();
    let like = match &a.like {
        Some(name) => {
            let exp = layoutlab_experiments::experiment::load(name)?;
            if exp.operation != "fsck" {
                anyhow::bail!(
                    "--like {name}: an experiment of the {} operation; --like takes an fsck \
                     experiment's capture (see `layoutlab experiments`)",
                    exp.operation
                );
            }
            let spec: layoutlab_experiments::ops::fsck::FsckSpec = exp.params()?;
            Some((exp.device.clone(), spec.check_spec()))
        }
        None => None,
    };
    let devices = match (&like, a.device.is_empty()) {
        (_, false) => a.device.clone(),
        (Some((device, _)), true) => vec![device.clone()],
        (None, true) => layoutlab_device::preset::preset_names(),
    };
    let opts = layoutlab_experiments::predict::PredictOptions {
        devices,
        workdir: a.workdir.clone(),
        allow_mounted: a.allow_mounted,
        relayout: a.relayout.clone(),
        e2fsck: layoutlab_rig::E2fsprogs::by_name(&a.e2fsck)?,
        closed_loop: a.closed_loop,
        capture: like.map(|(_, c)| c),
    };
    let report = layoutlab_experiments::predict::predict(&a.source, &opts)?;
    let human = Human::new(a.json.as_deref());
    human.say(&layoutlab_experiments::predict::render(&report));
    if let Some(p) = &a.json {
        write_json(p, &report)?;
    }
    Ok(())
}
