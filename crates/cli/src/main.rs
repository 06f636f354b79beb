//! `layoutlab`: a laboratory for file-system layout.
//!
//! The binary is thin glue: every command parses its arguments, calls the library crates, and
//! prints a table (or `--json`). See `layoutlab --help` and the README.

mod cmd;

use clap::{Parser, Subcommand};

/// layoutlab — how a layout choice changes what fsck, delete, read and write cost on real disks.
///
/// It writes real ext images through libext2fs, runs the real e2fsck and kernel on loop
/// devices under block tracing, and prices the traces on calibrated device models.
#[derive(Parser)]
#[command(
    name = "layoutlab",
    version,
    propagate_version = true,
    max_term_width = 100
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a named experiment end to end and print ours beside the published numbers.
    ///
    /// Example: layoutlab reproduce metacluster-fsck --scale 1 --json result.json
    Reproduce(cmd::reproduce::Args),
    /// List the named experiments.
    Experiments(cmd::reproduce::ListArgs),
    /// How long would fsck take on this volume? Run the real checker read-only on a device,
    /// an image or a metadata dump under block tracing and price it on each device model.
    ///
    /// ext2/3/4 is checked by `e2fsck -fn -tt`, XFS by `xfs_repair -n`, btrfs by
    /// `btrfs check --readonly`, each per pass or phase. On a server, take a metadata image
    /// (`e2image -Q /dev/sdX fs.qcow2`, `xfs_metadump`, `btrfs-image`), copy it here, and
    /// predict from it. Needs root (loop device, tracefs).
    ///
    /// Example: layoutlab fsck-predict fs.qcow2 --device sata-400g-2007,ssd-nvme-2024
    FsckPredict(cmd::fsck_predict::Args),
    /// What mkfs options cost before you format: every structure mke2fs would make, in
    /// blocks and bytes, and what df will show — computed as mke2fs 1.47 would from the
    /// mke2fs.conf in force, without an image.
    ///
    /// The short options are mke2fs's (-t -T -b -i -I -N -m -g -G -j -J -O -E). --use proposes
    /// options for a use, side by side, with the reason for each.
    ///
    /// Example: layoutlab overhead --size 80G -t ext3 --use read-mostly-ssd --fixed-size
    Overhead(Box<cmd::overhead::Args>),
    /// Plan a workload with a layout policy (no I/O) and summarise where things went.
    Plan(cmd::plan::Args),
    /// Named workloads (bench5, ubuntu-32g): statistics and size histogram.
    #[command(subcommand)]
    Workload(cmd::workload::Command),
    /// Write an ext image through libext2fs from a plan, or inspect any ext image.
    #[command(subcommand)]
    Image(cmd::image::Command),
    /// Device models: list presets, import DiskSim specs, validate against measured drives, run
    /// fio-like jobs.
    #[command(subcommand)]
    Device(cmd::device::Command),
    /// Block traces: convert between formats, replay on a device model, plot.
    #[command(subcommand)]
    Trace(cmd::trace::Command),
    /// Benchmarks of layoutlab itself (performance targets live here, not in tests).
    #[command(subcommand)]
    Bench(cmd::bench::Command),
    /// Remove what a killed layoutlab left behind: tracefs instances, mounts, loop devices
    /// and temp files named after a process that no longer exists.
    ///
    /// SIGINT, SIGTERM, errors and panics are cleaned up as they happen; SIGKILL cannot be.
    /// Only items whose name carries the PID of a dead layoutlab process are touched.
    ///
    /// Example: layoutlab clean --dry-run
    Clean(cmd::clean::Args),
    /// An experiment's matrix (policy × scale × device × ...) as self-contained cells, run
    /// here in parallel or as one Slurm job array; `sweep status DIR`, `sweep collect DIR`.
    ///
    /// Example: layoutlab sweep metacluster-fsck --set scale=0.01,0.02 --out sw --backend slurm
    Sweep(cmd::sweep::Args),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Reproduce(a) => cmd::reproduce::run(a),
        Command::Experiments(a) => cmd::reproduce::list(a),
        Command::FsckPredict(a) => cmd::fsck_predict::run(a),
        Command::Overhead(a) => cmd::overhead::run(*a),
        Command::Plan(a) => cmd::plan::run(a),
        Command::Workload(c) => cmd::workload::run(c),
        Command::Image(c) => cmd::image::run(c),
        Command::Device(c) => cmd::device::run(c),
        Command::Trace(c) => cmd::trace::run(c),
        Command::Bench(c) => cmd::bench::run(c),
        Command::Clean(a) => cmd::clean::run(a),
        Command::Sweep(a) => cmd::sweep::run(a),
    };
    if let Err(e) = result {
        // After Ctrl-C the error is the interruption's echo (its device was just torn down):
        // stay quiet and let the signal cleanup finish and exit 130/143.
        if !layoutlab_rig::cleanup::signal_caught() {
            eprintln!("layoutlab: error: {e:#}");
        }
        layoutlab_rig::cleanup::exit(2);
    }
}
