//! `layoutlab workload`: the named workloads and their statistics.

use super::{write_json, Human};
use anyhow::Result;
use clap::{Args as ClapArgs, Subcommand};
use layoutlab_report::{Cell, Column, Table};
use std::path::PathBuf;

/// `workload` subcommands.
#[derive(Subcommand)]
pub enum Command {
    /// Print a workload's statistics: counts by kind (as e2fsck reports them: directories
    /// include the root and lost+found; inodes used include the reserved ones), data
    /// volume, depth, and the file-size histogram.
    ///
    /// Example: layoutlab workload show ubuntu-32g --json stats.json
    Show(ShowArgs),
    /// Replay a population's operations (every kind: mkdir, create, append, extend,
    /// truncate, unlink, rename, rmdir, symlink, link, mknod) on a real kernel file system
    /// made on zram, then read every file's extents with FIEMAP: fragments per file and the
    /// layout score (Conway et al., FAST '17). Needs root. For ext4, e2fsck -fn checks the
    /// result. See docs/aging-kernel.md.
    ///
    /// Example: layoutlab workload age-kernel bench5 --scale 0.01 --fs-bytes 5G --fs xfs --json -
    AgeKernel(super::age_kernel::Args),
}

/// Arguments of `workload show`.
#[derive(ClapArgs)]
pub struct ShowArgs {
    /// Population: bench5, ubuntu-32g, or a population .toml file (populations/ubuntu-32g.toml shows the format).
    pub name: String,
    /// Shrink the disk and every file together (counts stay).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Policy whose plan gives `blocks_used` (mkfs metadata + every planned block).
    #[arg(long, default_value = "ext4-2009")]
    pub policy: String,
    /// mkfs profile of that plan.
    #[arg(long, default_value = "ext4-2009")]
    pub mkfs_profile: String,
    /// Write the statistics as JSON to PATH ("-" = stdout).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
}

/// Blocks in use once `pop` is laid out by `policy` on `profile`: what mke2fs took plus
/// every planned data, directory, symlink and mapping block (the root's first block is
/// mke2fs's). An error says why the plan could not be made.
fn blocks_used(pop: &layoutlab_workload::Population, policy: &str, profile: &str) -> Result<u64> {
    use layoutlab_layout::{Geometry, MkfsProfile, PolicyParams};
    let geo = Geometry::new(&MkfsProfile::by_name(profile)?, pop.fs_bytes)?;
    let plan =
        layoutlab_layout::policy_by_name(policy, &PolicyParams::new())?.plan(&geo, pop, 1)?;
    let mkfs = geo.blocks_count - geo.free_map().total_free();
    let planned: u64 = plan
        .inodes
        .iter()
        .map(|i| i.data_blocks() + i.mapping.len() as u64)
        .sum();
    Ok(mkfs + planned - 1)
}

/// Run a `workload` subcommand.
pub fn run(c: Command) -> Result<()> {
    match c {
        Command::Show(a) => show(a),
        Command::AgeKernel(a) => super::age_kernel::run(a),
    }
}

fn show(a: ShowArgs) -> Result<()> {
    let pop = layoutlab_workload::population_by_name(&a.name)?.scale(a.scale)?;
    let st = pop.stats();
    let human = Human::new(a.json.as_deref());
    let used = blocks_used(&pop, &a.policy, &a.mkfs_profile);
    if let Err(e) = &used {
        human.say(&format!(
            "blocks used: not known ({} on {}: {e:#}); try --policy ext3-2007 --mkfs-profile ext3-2007\n",
            a.policy, a.mkfs_profile
        ));
    }
    if let Some(p) = &a.json {
        let mut v = serde_json::to_value(&st)?;
        let obj = v.as_object_mut().expect("stats serialise as an object");
        obj.insert("workload".into(), a.name.clone().into());
        obj.insert("scale".into(), a.scale.into());
        obj.insert("fs_bytes".into(), pop.fs_bytes.into());
        obj.insert("operations".into(), (pop.ops.len() as u64).into());
        obj.insert(
            "blocks_used".into(),
            used.as_ref()
                .ok()
                .copied()
                .map_or(serde_json::Value::Null, Into::into),
        );
        obj.insert(
            "blocks_used_by".into(),
            format!("{} on {}", a.policy, a.mkfs_profile).into(),
        );
        write_json(p, &v)?;
    }
    let mut t = Table::new(
        &format!(
            "{} at scale {} ({} operations)",
            a.name,
            a.scale,
            pop.ops.len()
        ),
        vec![Column::text("quantity"), Column::number("value", None)],
    );
    for (k, v) in [
        ("file-system bytes", pop.fs_bytes),
        ("inodes used", st.inodes_used),
        ("regular files", st.regular_files),
        ("directories", st.directories),
        ("symlinks", st.symlinks),
        ("fast symlinks", st.fast_symlinks),
        ("hard links", st.hard_links),
        ("character devices", st.char_devices),
        ("block devices", st.block_devices),
        ("fifos", st.fifos),
        ("sockets", st.sockets),
        ("large files (>= 2 GiB)", st.large_files),
        ("file bytes", st.file_bytes),
        ("data blocks (4 KiB)", st.data_blocks),
        ("blocks used (planned)", *used.as_ref().unwrap_or(&0)),
        ("deepest path", st.max_depth),
    ] {
        t.push_row(vec![Cell::text(k), Cell::num(v as f64, 0)])?;
    }
    human.say(&t.to_terminal(None)?);
    let mut h = Table::new(
        "regular files by size",
        vec![Column::text("size below"), Column::number("files", None)],
    );
    for b in &st.size_histogram {
        h.push_row(vec![
            Cell::text(human_bytes(b.below_bytes)),
            Cell::num(b.files as f64, 0),
        ])?;
    }
    human.say(&h.to_terminal(None)?);
    Ok(())
}

fn human_bytes(b: u64) -> String {
    match b {
        0..=1023 => format!("{b} B"),
        1024..=1048575 => format!("{} KiB", b >> 10),
        1048576..=1073741823 => format!("{} MiB", b >> 20),
        _ => format!("{} GiB", b >> 30),
    }
}
