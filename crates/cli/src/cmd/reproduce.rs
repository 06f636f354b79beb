//! `layoutlab reproduce NAME`: run a named experiment and print ours beside the published numbers.
//!
//! The experiments themselves live in the `layoutlab-experiments` crate, one module per
//! operation; this is the glue from flags to [`RunArgs`].

use super::write_json;
use anyhow::Result;
use clap::Args as ClapArgs;
use layoutlab_experiments::{experiment, RunArgs};
use std::path::PathBuf;

/// Arguments of `reproduce`.
#[derive(ClapArgs)]
pub struct Args {
    /// Experiment name (see `layoutlab experiments`) or path to an experiment TOML file.
    name: String,
    /// Shrink the disk and every file together (1.0 = as published). Default: the experiment's.
    #[arg(long)]
    scale: Option<f64>,
    /// Device preset (name or .toml file) to price the traces on. Default: the experiment's.
    #[arg(long)]
    device: Option<String>,
    /// Write the results as JSON to PATH ("-" for stdout).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Where images are made while the experiment runs (sparse files). Default for fsck
    /// experiments: a private in-memory file system (tmpfs, capped at half the available
    /// memory) removed afterwards. The kernel's read-ahead depends on how fast the loop device
    /// answers, so images on a disk give a request stream that depends on that disk
    /// (docs/replay.md).
    #[arg(long, value_name = "DIR")]
    workdir: Option<PathBuf>,
    /// Keep the images (and the captured traces as CSV) in the work directory (needs
    /// --workdir: the default one is gone at the end).
    #[arg(long, requires = "workdir")]
    keep: bool,
    /// Where the report (Markdown, HTML, SVG) is written.
    #[arg(long, value_name = "DIR", default_value = "results")]
    out: PathBuf,
    /// Multiply the CPU time measured between requests (2.0 = a CPU half as fast as this one).
    #[arg(long)]
    cpu_scale: Option<f64>,
    /// File systems to run, comma-separated (large-delete: ext3, ext4-2007, ext4, xfs, btrfs).
    /// Default: the experiment's.
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    fs: Option<Vec<String>>,
    /// Policies run at once, each with its own image, loop device and traced e2fsck. Default:
    /// as many as this machine has CPUs. Predictions do not depend on it (think times come
    /// from each e2fsck's own CPU time).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    jobs: Option<u32>,
    /// Also replay the captured traces on variants of the device preset, one borrowed or
    /// assumed value changed at a time (the experiment file's [[sensitivity]] list), and report
    /// how much each moves both totals and the reduction (fsck experiments).
    #[arg(long)]
    sensitivity: bool,
}

/// Arguments of `experiments`.
#[derive(ClapArgs)]
pub struct ListArgs {
    /// Write the list as JSON to PATH ("-" for stdout).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
}

/// List the shipped experiments.
pub fn list(a: ListArgs) -> Result<()> {
    let mut rows = Vec::new();
    for n in experiment::names() {
        let e = experiment::load(n)?;
        rows.push(serde_json::json!({"name": e.name, "operation": e.operation, "device": e.device, "title": e.title}));
        if a.json.is_none() {
            super::emit(&format!("{:<20} {}\n", e.name, e.title), false);
        }
    }
    if let Some(p) = a.json {
        write_json(&p, &rows)?;
    }
    Ok(())
}

/// Run an experiment.
pub fn run(a: Args) -> Result<()> {
    layoutlab_rig::cleanup::install();
    let exp = experiment::load(&a.name)?;
    if a.sensitivity && exp.operation != "fsck" {
        anyhow::bail!(
            "--sensitivity replays captured traces and applies to fsck experiments; '{}' is a {} experiment",
            exp.name,
            exp.operation
        );
    }
    let args = RunArgs {
        scale: a.scale,
        device: a.device,
        json: a.json,
        workdir: a.workdir,
        keep: a.keep,
        out: a.out,
        cpu_scale: a.cpu_scale,
        fs: a.fs,
        jobs: a.jobs,
        sensitivity: a.sensitivity,
    };
    exp.operation()?.run(&exp, &args)
}
