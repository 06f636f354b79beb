//! Named experiments: what `layoutlab reproduce NAME` runs.
//!
//! It owns the experiment files (one TOML each under `experiments/`, embedded in [`SHIPPED`]),
//! their loading and checking ([`experiment::load`]), and the operations they name: one module
//! per operation behind the [`Operation`] trait (parse and check its TOML table, run, print
//! tables, write the report files and the JSON), all listed in [`OPERATIONS`]. A new experiment
//! is one TOML file and, if it needs a new operation, one module and one line in
//! [`OPERATIONS`]. It does not own the command line (the `layoutlab` binary maps its flags onto
//! [`RunArgs`]), device models, images, the rig or the tables' rendering (the other crates).
//!
//! ```no_run
//! use layoutlab_experiments::{experiment, RunArgs};
//! # fn main() -> anyhow::Result<()> {
//! let exp = experiment::load("fio-randread")?; // or a path to a .toml
//! let args = RunArgs { out: "results".into(), ..RunArgs::default() };
//! exp.operation()?.run(&exp, &args)?; // tables on stdout, results/fio-randread/report.md
//! # Ok(()) }
//! ```

pub mod aging;
pub mod all_page;
pub mod cache_policies;
pub mod experiment;
pub mod ext_classes;
pub mod fio;
pub mod fs_classes;
pub mod fsck;
pub mod inode_readahead;
pub mod kernel_profile;
pub mod large_delete;
pub mod metacluster_io;
pub mod mkfs_overhead;
pub mod output;
pub mod predict;
pub mod random_file;
pub mod random_read;
pub mod request_merging;
pub mod stages;
pub mod support;
pub mod sweep;

pub use experiment::{Experiment, Published};

use anyhow::Result;
use std::path::PathBuf;

/// Every operation an experiment can name, in the order `--help` and errors list them.
/// Registering a new operation is one line here.
pub static OPERATIONS: &[&dyn Operation] = &[
    &fsck::Fsck,
    &fio::Fio,
    &large_delete::LargeDelete,
    &mkfs_overhead::MkfsOverhead,
    &inode_readahead::InodeReadahead,
    &metacluster_io::MetaclusterIo,
    &request_merging::RequestMerging,
    &random_read::RandomRead,
    &aging::Aging,
    &cache_policies::CachePolicies,
];

/// The experiments shipped with layoutlab, embedded so the binary works from anywhere, in the
/// order `layoutlab experiments` lists them. A new experiment is one line here and its TOML.
pub const SHIPPED: &[(&str, &str)] = &[
    (
        "metacluster-fsck",
        include_str!("../../../experiments/metacluster-fsck.toml"),
    ),
    (
        "fio-randread",
        include_str!("../../../experiments/fio-randread.toml"),
    ),
    (
        "large-delete",
        include_str!("../../../experiments/large-delete.toml"),
    ),
    (
        "mkfs-overhead",
        include_str!("../../../experiments/mkfs-overhead.toml"),
    ),
    (
        "metacluster-io",
        include_str!("../../../experiments/metacluster-io.toml"),
    ),
    (
        "ext4-fsck-allocator",
        include_str!("../../../experiments/ext4-fsck-allocator.toml"),
    ),
    (
        "ext3-vs-ext4-fsck",
        include_str!("../../../experiments/ext3-vs-ext4-fsck.toml"),
    ),
    (
        "inode-readahead",
        include_str!("../../../experiments/inode-readahead.toml"),
    ),
    (
        "request-merging",
        include_str!("../../../experiments/request-merging.toml"),
    ),
    (
        "random-read",
        include_str!("../../../experiments/random-read.toml"),
    ),
    (
        "metacluster-aging",
        include_str!("../../../experiments/metacluster-aging.toml"),
    ),
    (
        "cache-policies",
        include_str!("../../../experiments/cache-policies.toml"),
    ),
    (
        "metadata-on-ssd",
        include_str!("../../../experiments/metadata-on-ssd.toml"),
    ),
    (
        "metadata-on-ssd-tree",
        include_str!("../../../experiments/metadata-on-ssd-tree.toml"),
    ),
    (
        "metadata-on-ssd-ext3",
        include_str!("../../../experiments/metadata-on-ssd-ext3.toml"),
    ),
    (
        "metadata-on-ssd-aging",
        include_str!("../../../experiments/metadata-on-ssd-aging.toml"),
    ),
];

/// One kind of experiment: the `operation = "NAME"` of an experiment file, whose parameters
/// are the file's `[NAME]` table.
pub trait Operation: Sync {
    /// Its name, as written in `operation = "..."` and as the name of its table.
    fn name(&self) -> &'static str;

    /// Whether running `exp` needs root (loop devices, mounts, tracefs): `layoutlab sweep`
    /// refuses a local sweep without it and tells a Slurm node so. Per experiment, since one
    /// operation may capture in one experiment and only price in another.
    fn needs_root(&self, exp: &Experiment) -> bool;

    /// Whether it honours `--sensitivity` (replaying its captured traces on the variants of
    /// the preset an experiment's `[[sensitivity]]` lists). Runs of the others refuse the flag.
    fn supports_sensitivity(&self) -> bool {
        false
    }

    /// Whether it honours `--closed-loop` (capturing on the emulated device). Runs of the
    /// others refuse the flag.
    fn supports_closed_loop(&self) -> bool {
        false
    }

    /// Parse and check the experiment's `[NAME]` table, before any work (a bad file is an
    /// error at load time, whatever the command).
    fn check(&self, exp: &Experiment) -> Result<()>;

    /// Run the experiment and report: tables on stdout (stderr with `--json -`), report files
    /// under `args.out/NAME/`, and the JSON contract to `args.json`.
    fn run(&self, exp: &Experiment, args: &RunArgs) -> Result<()>;
}

/// The operation named `name`, or an error listing the valid ones.
pub fn operation(name: &str) -> Result<&'static dyn Operation> {
    OPERATIONS
        .iter()
        .copied()
        .find(|o| o.name() == name)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "unknown operation '{name}'; valid: {}",
                operation_names().join(", ")
            )
        })
}

/// Names of the registered operations.
pub fn operation_names() -> Vec<&'static str> {
    OPERATIONS.iter().map(|o| o.name()).collect()
}

/// Refuses a capture-wide flag that `exp`'s operation does not honour, naming the operations
/// that do (the run would otherwise ignore it silently).
pub fn check_capture_flags(exp: &Experiment, args: &RunArgs) -> Result<()> {
    let op = exp.operation()?;
    let refuse = |flag: &str, what: &str, supports: fn(&dyn Operation) -> bool| {
        let with: Vec<&str> = OPERATIONS
            .iter()
            .filter(|o| supports(**o))
            .map(|o| o.name())
            .collect();
        anyhow::anyhow!(
            "{flag} {what} and applies to {} experiments; '{}' is a {} experiment",
            with.join(", "),
            exp.name,
            op.name()
        )
    };
    if args.closed_loop.is_some() && !op.supports_closed_loop() {
        return Err(refuse(
            "--closed-loop",
            "captures on the emulated device",
            |o| o.supports_closed_loop(),
        ));
    }
    if args.sensitivity && !op.supports_sensitivity() {
        return Err(refuse(
            "--sensitivity",
            "replays captured traces on variants of the preset",
            |o| o.supports_sensitivity(),
        ));
    }
    Ok(())
}

/// What the command line asks of a run (`layoutlab reproduce`'s flags); `None` means the
/// experiment's own default.
#[derive(Clone, Debug, Default)]
pub struct RunArgs {
    /// Shrink the disk and every file together (1.0 = as published).
    pub scale: Option<f64>,
    /// Device preset (name or .toml file).
    pub device: Option<String>,
    /// Where the JSON goes ("-" for stdout).
    pub json: Option<PathBuf>,
    /// Where images are made (default: a private in-memory file system, removed afterwards).
    pub workdir: Option<PathBuf>,
    /// Keep images and captured traces in the work directory.
    pub keep: bool,
    /// Where the report (Markdown, HTML, SVG) is written; the experiment's files go in a
    /// subdirectory named after it.
    pub out: PathBuf,
    /// Multiplier of the CPU time measured between requests.
    pub cpu_scale: Option<f64>,
    /// File systems (kernel profiles) to run, for operations that run several.
    pub fs: Option<Vec<String>>,
    /// Units of work run at once (fsck: policies); `None`: one per CPU.
    pub jobs: Option<u32>,
    /// Also replay the captured traces on variants of the device preset (fsck experiments).
    pub sensitivity: bool,
    /// The population walked, for operations that walk a tree (inode-readahead).
    pub tree: Option<String>,
    /// The settings swept, for operations that sweep one (inode-readahead).
    pub settings: Option<Vec<u64>>,
    /// I/O mode, for operations that run several ("buffered", "direct", "both").
    pub mode: Option<String>,
    /// Which e2fsprogs' e2fsck checks the images, for operations that run e2fsck: "today"
    /// (the system's, the default), a release ("1.40.2", "1.41.4", "1.41.14", built by
    /// `make deps`) or "period" (the release the experiment names as its own).
    pub e2fsck: Option<String>,
    /// Capture closed loop (fsck experiments): e2fsck runs on `layoutlab device emulate`'s
    /// device, whose requests complete at the preset's model time divided by this time scale
    /// K; the run reports the time measured there beside the open-loop replay.
    pub closed_loop: Option<f64>,
}

impl RunArgs {
    /// The device preset of this run: `--device`, else the experiment's.
    pub fn device_or(&self, exp: &Experiment) -> String {
        self.device.clone().unwrap_or_else(|| exp.device.clone())
    }

    /// The e2fsprogs `--e2fsck` picks: today's unless asked; "period" is `period` (the
    /// experiment's own release), refused when the experiment names none.
    pub fn e2fsprogs(&self, period: Option<&str>) -> Result<layoutlab_rig::E2fsprogs> {
        let name = match self.e2fsck.as_deref() {
            None => return Ok(layoutlab_rig::E2fsprogs::Today),
            Some("period") => period.ok_or_else(|| {
                anyhow::anyhow!("--e2fsck period: this experiment names no period e2fsprogs")
            })?,
            Some(v) => v,
        };
        Ok(layoutlab_rig::E2fsprogs::by_name(name)?)
    }

    /// The directory of this experiment's report files.
    pub fn out_dir(&self, exp: &Experiment) -> PathBuf {
        self.out.join(&exp.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What an operation declares replaces the lists sweep.rs and reproduce.rs kept by name:
    /// the capture flags are refused for every operation that does not declare them, naming
    /// the ones that do, and root is what each declares.
    #[test]
    fn capture_flags_follow_what_each_operation_declares() {
        let fio = experiment::load("fio-randread").unwrap();
        let fsck = experiment::load("metacluster-fsck").unwrap();
        let sens = RunArgs {
            sensitivity: true,
            ..RunArgs::default()
        };
        let closed = RunArgs {
            closed_loop: Some(1.0),
            ..RunArgs::default()
        };
        for args in [&sens, &closed] {
            check_capture_flags(&fsck, args).unwrap();
            let err = check_capture_flags(&fio, args).unwrap_err().to_string();
            assert!(
                err.contains("applies to fsck experiments") && err.contains("a fio experiment"),
                "{err}"
            );
        }
        check_capture_flags(&fio, &RunArgs::default()).unwrap();
        assert!(!fio.operation().unwrap().needs_root(&fio));
        assert!(fsck.operation().unwrap().needs_root(&fsck));
        // mke2fs's arithmetic and the page-cache model run as any user (both ran as `nobody`
        // when the old hand list, which said root, was replaced).
        for n in ["mkfs-overhead", "cache-policies"] {
            let e = experiment::load(n).unwrap();
            assert!(!e.operation().unwrap().needs_root(&e), "{n}");
        }
    }
}
