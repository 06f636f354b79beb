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
    /// Age a population with one stream on the engine's ext4-kernel policy and on today's
    /// kernel ext4 (zram, as age-kernel), and print the layout metrics of both and their
    /// differences: how far the engine is from the kernel after aging. Needs root.
    ///
    /// Example: layoutlab workload age-check ubuntu-32g --scale 0.02 --age 1 --json -
    AgeCheck(super::age_check::Args),
    /// Age a workload: append a Geriatrix-style aging stream (creates, extends, truncates,
    /// unlinks, renames, mkdir/rmdir) to its tree until AGE × capacity bytes are written,
    /// holding live data at a target fullness and steering the file-size and depth
    /// distributions to the tree's own (or to those of an [aging] section), and print what
    /// the stream did: operations by kind, bytes written, fullness, and how far the final
    /// size histogram is from the target (total-variation distance, 0 = exact).
    ///
    /// Live data never passes the target, which is at most what the file system holds
    /// beside a metadata margin (inode tables, journal, bitmaps, mapping blocks,
    /// directories); a tree fuller than that is first thinned by unlinks and truncates.
    /// Files with more than one name are never touched. The same seed gives the same
    /// stream. See docs/aging.md.
    ///
    /// Example: layoutlab workload age bench5 --age 5
    ///
    /// Example: layoutlab workload age ubuntu-32g --age 25 --fullness 0.8 --seed 7 --json -
    ///
    /// Example: layoutlab workload age ubuntu-32g --spec my-aging.toml --scale 0.1
    ///
    /// Example: layoutlab workload age bench5 --scale 0.01 --age 5 --write-ops aged.json
    Age(AgeArgs),
}

/// Arguments of `workload age`.
#[derive(ClapArgs)]
pub struct AgeArgs {
    /// Population: bench5, ubuntu-32g, or a population .toml file.
    pub name: String,
    /// Bytes to write, as a multiple of the file system's capacity (0 to 1000; 0 = the
    /// tree as it is). Required unless --spec gives it.
    #[arg(long)]
    pub age: Option<f64>,
    /// Live data to hold, as a fraction of capacity in (0, 1]. Default: the tree's own
    /// fullness, capped at what fits beside the metadata margin.
    #[arg(long)]
    pub fullness: Option<f64>,
    /// Seed of every random choice.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Shrink the disk and every file together before aging (counts stay).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// The naive generator instead (victims uniform over all files, extends and truncates
    /// by random amounts, renames anywhere): the baseline the steering is measured against.
    #[arg(long)]
    pub naive: bool,
    /// Target size distribution: "tree" (the tree's own, measured) or "agrawal-fast07"
    /// (Agrawal et al., FAST '07: a lognormal body and Pareto tail, as Impressions gives
    /// their parameters).
    #[arg(long, value_name = "SHAPE")]
    pub size_shape: Option<String>,
    /// Read the [aging] section of this TOML file (shares of each operation, target
    /// size and depth distributions); --age, --fullness, --seed, --naive and --size-shape override it.
    #[arg(long, value_name = "FILE")]
    pub spec: Option<PathBuf>,
    /// Write the statistics as JSON to PATH ("-" = stdout).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Write the aged population (the tree's operations, then the stream's) as JSON to
    /// FILE, the form `layoutlab workload age-kernel --ops FILE` and serde read
    /// (`{"name", "fs_bytes", "ops": [...]}`), written as it is generated.
    #[arg(long, value_name = "FILE.json")]
    pub write_ops: Option<PathBuf>,
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
        Command::Age(a) => age(a),
        Command::AgeCheck(a) => super::age_check::run(a),
    }
}

/// The metadata margin an aging stream leaves on `pop`'s file system: the mkfs profiles'
/// knowledge, which the workload crate does not have.
fn margin_bytes(pop: &layoutlab_workload::Population) -> u64 {
    layoutlab_layout::mkfs::metadata_margin_bytes(pop.fs_bytes)
}

fn age(a: AgeArgs) -> Result<()> {
    use layoutlab_workload::aging::{stream_stats, AgingSpec};
    let mut spec = match &a.spec {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
            AgingSpec::from_toml_str(&text, &path.display().to_string())?
        }
        None => {
            let Some(age) = a.age else {
                anyhow::bail!(
                    "give --age N (N × capacity written), or --spec FILE with an [aging] section"
                );
            };
            AgingSpec::new(age, 0)
        }
    };
    if let Some(age) = a.age {
        spec.age = age;
    }
    if a.fullness.is_some() {
        spec.fullness = a.fullness;
    }
    if let Some(seed) = a.seed {
        spec.seed = seed;
    }
    if a.naive {
        spec.steer = false;
    }
    if let Some(shape) = &a.size_shape {
        spec.size_shape = match shape.as_str() {
            "tree" => layoutlab_workload::aging::SizeShape::Tree,
            "agrawal-fast07" => layoutlab_workload::aging::SizeShape::AgrawalFast07,
            other => anyhow::bail!("--size-shape {other}: valid shapes are tree, agrawal-fast07"),
        };
    }
    let pop = layoutlab_workload::population_by_name(&a.name)?.scale(a.scale)?;
    let started = std::time::Instant::now();
    let st = match &a.write_ops {
        None => stream_stats(&pop, &spec, margin_bytes(&pop))?,
        Some(path) => write_ops(&pop, &spec, path)?,
    };
    let seconds = started.elapsed().as_secs_f64();
    let human = Human::new(a.json.as_deref());
    if let Some(p) = &a.json {
        let mut v = serde_json::to_value(&st)?;
        let obj = v.as_object_mut().expect("stats serialise as an object");
        obj.insert("workload".into(), a.name.clone().into());
        obj.insert("scale".into(), a.scale.into());
        obj.insert("spec".into(), serde_json::to_value(&spec)?);
        obj.insert("seconds".into(), seconds.into());
        write_json(p, &v)?;
    }
    let mut t = Table::new(
        &format!(
            "{} at scale {} aged {} × capacity (seed {}, {})",
            a.name,
            a.scale,
            spec.age,
            spec.seed,
            if spec.steer { "steered" } else { "naive" }
        ),
        vec![Column::text("quantity"), Column::number("value", None)],
    );
    let rows: Vec<(&str, f64, usize)> = vec![
        ("operations of the tree", st.initial_operations as f64, 0),
        ("operations of the stream", st.operations as f64, 0),
        ("  creates", st.creates as f64, 0),
        ("  extends", st.extends as f64, 0),
        ("  truncates", st.truncates as f64, 0),
        ("  unlinks", st.unlinks as f64, 0),
        ("  renames", st.renames as f64, 0),
        ("  mkdirs", st.mkdirs as f64, 0),
        ("  rmdirs", st.rmdirs as f64, 0),
        ("capacity (bytes)", st.capacity_bytes as f64, 0),
        (
            "metadata margin (bytes)",
            st.metadata_margin_bytes as f64,
            0,
        ),
        ("bytes to write (age × capacity)", st.goal_bytes as f64, 0),
        ("bytes written", st.bytes_written as f64, 0),
        ("fullness: target", st.target_fullness, 4),
        ("fullness: tree", st.initial_fullness, 4),
        ("fullness: final", st.final_fullness, 4),
        (
            "fullness: lowest once reached",
            st.lowest_fullness_after_settling,
            4,
        ),
        ("files: tree", st.files_initial as f64, 0),
        ("files: final", st.files_final as f64, 0),
        ("directories: final", st.directories_final as f64, 0),
        (
            "size distance from target: tree",
            st.size_distance_initial,
            4,
        ),
        ("size distance from target: final", st.size_distance, 4),
        ("depth distance from target: final", st.depth_distance, 4),
        ("directory-depth distance: final", st.dir_depth_distance, 4),
        ("seconds to generate", seconds, 2),
        (
            "operations per second",
            st.operations as f64 / seconds.max(1e-9),
            0,
        ),
    ];
    for (k, v, digits) in rows {
        t.push_row(vec![Cell::text(k), Cell::num(v, digits)])?;
    }
    human.say(&t.to_terminal(None)?);
    let mut h = Table::new(
        "regular files by size: fraction of files",
        vec![
            Column::text("size below"),
            Column::number("target", None),
            Column::number("tree", None),
            Column::number("final", None),
        ],
    );
    for r in &st.size_histogram {
        h.push_row(vec![
            Cell::text(human_bytes(r.below_bytes)),
            Cell::num(r.target_fraction, 4),
            Cell::num(r.initial_fraction, 4),
            Cell::num(r.final_fraction, 4),
        ])?;
    }
    human.say(&h.to_terminal(None)?);
    Ok(())
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

/// Generates the stream into `path` as a population's JSON, one operation at a time (a 25×
/// ubuntu-32g stream is 36 million operations: kept whole it would take gigabytes).
fn write_ops(
    pop: &layoutlab_workload::Population,
    spec: &layoutlab_workload::aging::AgingSpec,
    path: &std::path::Path,
) -> Result<layoutlab_workload::aging::StreamStats> {
    use anyhow::Context;
    use std::io::Write;
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = std::io::BufWriter::new(file);
    let mut failed: Option<std::io::Error> = None;
    let mut first = true;
    let mut put = |w: &mut std::io::BufWriter<std::fs::File>, op: &layoutlab_workload::NsOp| {
        let sep: &[u8] = if first { b"\n" } else { b",\n" };
        first = false;
        w.write_all(sep)
            .and_then(|_| serde_json::to_writer(&mut *w, op).map_err(std::io::Error::from))
    };
    write!(
        w,
        "{{\"name\":{},\"fs_bytes\":{},\"ops\":[",
        serde_json::to_string(&format!(
            "{} aged {}x (seed {})",
            pop.name, spec.age, spec.seed
        ))?,
        pop.fs_bytes
    )?;
    for op in &pop.ops {
        put(&mut w, op)?;
    }
    let st = layoutlab_workload::aging::generate(pop, spec, margin_bytes(pop), &mut |op| {
        if failed.is_none() {
            if let Err(e) = put(&mut w, &op) {
                failed = Some(e);
            }
        }
    });
    let st = match st {
        Ok(st) => st,
        Err(e) => {
            drop(w);
            let _ = std::fs::remove_file(path);
            return Err(e.into());
        }
    };
    if let Some(e) = failed {
        return Err(e).with_context(|| format!("writing {}", path.display()));
    }
    w.write_all(b"\n]}\n")?;
    w.flush()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(st)
}

fn human_bytes(b: u64) -> String {
    match b {
        0..=1023 => format!("{b} B"),
        1024..=1048575 => format!("{} KiB", b >> 10),
        1048576..=1073741823 => format!("{} MiB", b >> 20),
        _ => format!("{} GiB", b >> 30),
    }
}
