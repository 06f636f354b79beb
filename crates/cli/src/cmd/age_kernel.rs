//! `layoutlab workload age-kernel`: a population's operation stream on a real kernel file
//! system (ext4, XFS, btrfs on zram), then each file's extents from FIEMAP: fragments per
//! file and the layout score (docs/aging-kernel.md).

use super::{write_json, Human};
use anyhow::{bail, Context, Result};
use clap::Args as ClapArgs;
use layoutlab_report::{Cell, Column, Table};
use layoutlab_rig::{age_kernel, FsKind, KernelAgeOptions};
use layoutlab_workload::Population;
use std::io::IsTerminal;
use std::path::PathBuf;

/// Arguments of `workload age-kernel`.
#[derive(ClapArgs)]
pub struct Args {
    /// Population: bench5, ubuntu-32g, or a population .toml file (omit with --ops).
    #[arg(required_unless_present = "ops")]
    pub population: Option<String>,
    /// A population as JSON (`{"name", "fs_bytes", "ops": [...]}`, the workload crate's
    /// Population: e.g. an aging stream), instead of a named one.
    #[arg(long, value_name = "FILE.json", conflicts_with = "population")]
    pub ops: Option<PathBuf>,
    /// Shrink the file system and every file together (counts stay).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Size of the device (e.g. 5G; binary units); default: the population's file-system
    /// size. A population that fills its disk may not fit today's mkfs's overhead.
    #[arg(long, value_name = "SIZE", value_parser = super::parse_size)]
    pub fs_bytes: Option<u64>,
    /// Kernel file system: ext4 (the ext4-kernel mkfs profile's mke2fs options), xfs or
    /// btrfs (their mkfs defaults); ext2 and ext3 too.
    #[arg(long = "fs", default_value = "ext4")]
    pub fs: String,
    /// ext2/3/4: make the file system with this mkfs profile's mke2fs options (e.g.
    /// ext4-2009, the netbook experiment's) instead of ext4-kernel's or mke2fs's defaults;
    /// its file system must be --fs's. See `layoutlab` docs/mkfs-profiles.md.
    #[arg(long, value_name = "NAME")]
    pub mkfs_profile: Option<String>,
    /// Mount options for the file system (the data string, e.g. `mb_optimize_scan=0` to see
    /// what an allocator switch of today's ext4 does to the layout); default: none for ext4 and
    /// XFS, `nossd` for btrfs (as on a disk).
    #[arg(long, value_name = "OPTIONS")]
    pub mount_options: Option<String>,
    /// ext2/3/4: keep the kernel's file system as a sparse metadata image at PATH (the real
    /// `e2image -r`: metadata where it lies, file data as holes), to check and price it with
    /// `layoutlab fsck-predict PATH`. PATH must not exist; its directory's free space is
    /// checked first.
    #[arg(long, value_name = "PATH")]
    pub metadata_image: Option<PathBuf>,
    /// Write the file system back (syncfs) every this many MiB of file data (0: leave it to
    /// the kernel's flusher). 64 is the ext4-kernel policy's writeback_mib.
    #[arg(long, default_value_t = 64)]
    pub writeback_mib: u64,
    /// ext4: mb_max_linear_groups after mount (4: a rotational disk, as the ext4-kernel
    /// policy models).
    #[arg(long, default_value_t = 4)]
    pub linear_groups: u32,
    /// Keep zram's non-rotational queue and what the kernel chooses for it (ext4's
    /// mb_max_linear_groups 0, btrfs's ssd mode) instead of modelling a disk.
    #[arg(long)]
    pub nonrotational: bool,
    /// Write the result as JSON to PATH ("-" = stdout).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Include every file's path, size and extents in the JSON.
    #[arg(long, requires = "json")]
    pub per_file: bool,
}

fn population(a: &Args) -> Result<Population> {
    let pop = match (&a.ops, &a.population) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            serde_json::from_str::<Population>(&text).with_context(|| {
                format!(
                    "{}: not a population (expected {{\"name\", \"fs_bytes\", \"ops\": [...]}})",
                    path.display()
                )
            })?
        }
        (None, Some(name)) => layoutlab_workload::population_by_name(name)?,
        (None, None) => bail!("give a population name or --ops FILE.json"),
    };
    let pop = if a.scale == 1.0 {
        pop
    } else {
        pop.scale(a.scale)?
    };
    pop.check_tree()
        .with_context(|| format!("population '{}'", pop.name))?;
    Ok(pop)
}

/// Run `workload age-kernel`.
pub fn run(a: Args) -> Result<()> {
    let kind = FsKind::parse(&a.fs)?;
    let pop = population(&a)?;
    let fs_bytes = a.fs_bytes.unwrap_or(pop.fs_bytes);
    let mut opts = KernelAgeOptions::disk(kind, fs_bytes)?;
    if let Some(name) = &a.mkfs_profile {
        let (made, args) = layoutlab_rig::ext_mkfs_args(name, fs_bytes)?;
        if made != kind {
            bail!(
                "mkfs profile {name} makes {}, not {}: give --fs {}",
                made.name(),
                kind.name(),
                made.name()
            );
        }
        opts.mkfs_args = args;
    }
    opts.metadata_image = a.metadata_image.clone();
    if let Some(path) = &opts.metadata_image {
        if path.exists() {
            bail!(
                "{} exists: the metadata image is not written over anything",
                path.display()
            );
        }
    }
    layoutlab_rig::require_root("making and mounting a kernel file system")?;
    layoutlab_rig::cleanup::install();
    opts.apply.writeback_bytes = a.writeback_mib << 20;
    if kind == FsKind::Ext4 {
        opts.ext4_linear_groups = Some(a.linear_groups);
    }
    if a.nonrotational {
        opts.rotational = false;
        opts.ext4_linear_groups = None;
        opts.mount_options = String::new();
    }
    if let Some(o) = &a.mount_options {
        opts.mount_options = o.clone();
    }
    let human = Human::new(a.json.as_deref());
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(pop.ops.len() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "[{elapsed_precise}] {bar:30} {pos}/{len} ops {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    });
    let run = age_kernel(&pop, &opts, &mut |p| {
        if let Some(b) = &bar {
            b.set_position(p.ops_done as u64);
            if p.ops_done % 1024 == 0 {
                b.set_message(format!("{:.2} GB written", p.bytes_written as f64 / 1e9));
            }
        }
    })
    .with_context(|| format!("{} on {}", pop.name, kind.name()))?;
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    if let Some(path) = &a.json {
        let mut v = serde_json::json!({
            "population": pop.name,
            "scale": a.scale,
            "fs": run.fs,
            "fs_bytes": run.fs_bytes,
            "mkfs_profile": a.mkfs_profile,
            "mkfs_args": opts.mkfs_args,
            "metadata_image": opts.metadata_image,
            "mount_options": opts.mount_options,
            "ext4_linear_groups": opts.ext4_linear_groups,
            "queue": run.queue,
            "writeback_mib": a.writeback_mib,
            "replay": run.apply,
            "summary": run.summary,
            "fsck_clean": run.fsck_clean,
        });
        if a.per_file {
            v["files"] = serde_json::to_value(&run.files)?;
        }
        write_json(path, &v)?;
    }
    let s = &run.summary;
    let mut t = Table::new(
        &format!(
            "{} on the kernel's {} ({:.2} GB on zram)",
            pop.name,
            run.fs,
            run.fs_bytes as f64 / 1e9
        ),
        vec![Column::text("quantity"), Column::text("value")],
    );
    let rows: Vec<(&str, String)> = vec![
        ("operations", run.apply.operations.to_string()),
        (
            "file data written",
            format!("{:.3} GB", run.apply.bytes_written as f64 / 1e9),
        ),
        (
            "peak live data",
            format!("{:.3} GB", run.apply.peak_live_bytes as f64 / 1e9),
        ),
        ("writebacks (syncfs)", run.apply.writebacks.to_string()),
        ("replay seconds", format!("{:.2}", run.apply.seconds)),
        ("regular files", s.files.to_string()),
        ("files with data blocks", s.files_with_blocks.to_string()),
        ("inline files", s.inline_files.to_string()),
        (
            "fragments per file: mean",
            format!("{:.3}", s.fragments.mean),
        ),
        ("fragments per file: median", s.fragments.median.to_string()),
        ("fragments per file: p90", s.fragments.p90.to_string()),
        ("fragments per file: p99", s.fragments.p99.to_string()),
        ("fragments per file: max", s.fragments.max.to_string()),
        ("files in >1 fragment", s.fragmented_files.to_string()),
        ("layout score", format!("{:.4}", s.layout_score)),
        (
            "mapped beyond EOF",
            format!("{:.1} MB", s.bytes_beyond_eof as f64 / 1e6),
        ),
        (
            "e2fsck -fn",
            match run.fsck_clean {
                Some(true) => "clean".into(),
                Some(false) => "NOT clean".into(),
                None => "-".into(),
            },
        ),
    ];
    for (k, v) in rows {
        t.push_row(vec![Cell::text(k), Cell::text(&v)])?;
    }
    human.say(&t.to_terminal(None)?);
    if run.fsck_clean == Some(false) {
        bail!(
            "e2fsck -fn does not find the kernel's file system clean:\n{}",
            run.fsck_output.unwrap_or_default()
        );
    }
    Ok(())
}
