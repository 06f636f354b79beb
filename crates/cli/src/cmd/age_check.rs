//! `layoutlab workload age-check`: one aging stream on the engine's `ext4-kernel` policy and
//! on today's kernel ext4, and the layout metrics of both side by side (issue: "compare layout
//! metrics after the same stream on the engine and on the kernel and report the
//! differences"). docs/aging.md, "The engine against the kernel".

use super::{write_json, Human};
use anyhow::{bail, Context, Result};
use clap::Args as ClapArgs;
use layoutlab_layout::metrics::LayoutMetrics;
use layoutlab_layout::{
    policy_by_name, Geometry, InodeKind, MkfsProfile, Plan, PlannedInode, PolicyParams,
};
use layoutlab_report::{Cell, Column, Table};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;

/// Arguments of `workload age-check`.
#[derive(ClapArgs)]
pub struct Args {
    /// Population aged: bench5, ubuntu-32g, or a population .toml file.
    pub population: String,
    /// Fraction kept: of a tree population's files (ubuntu-32g, .toml), of bench5's sizes.
    #[arg(long, default_value_t = 0.02)]
    pub scale: f64,
    /// Capacities the aging stream writes.
    #[arg(long, default_value_t = 1.0)]
    pub age: f64,
    /// Live data the stream holds, as a fraction of the file system (the tree is trimmed to
    /// it first).
    #[arg(long, default_value_t = 0.8)]
    pub fullness: f64,
    /// Seed of the stream (and of the policy).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Writeback every this many MiB of file data, on both sides (the ext4-kernel policy's
    /// writeback_mib; the kernel side calls syncfs).
    #[arg(long, default_value_t = 64)]
    pub writeback_mib: u64,
    /// Mount options of the kernel's ext4, to try a kernel behaviour against the engine:
    /// e.g. `data=writeback` frees a deleted file's data blocks at once, as the engine does,
    /// instead of when the journal commits (default: the kernel's, data=ordered).
    #[arg(long, value_name = "OPTS", default_value = "")]
    pub mount_options: String,
    /// Write both sides' metrics and their differences as JSON to PATH ("-" = stdout).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Write every regular file's layout on both sides as JSON to PATH: its size, what the
    /// stream did to it (create, extend, truncate, rename: operation index, bytes) and its
    /// extents on the engine and on the kernel (block numbers), with the geometry and the
    /// operations after which both sides wrote back — to find which files one side splits
    /// and the other does not, and why.
    #[arg(long, value_name = "PATH")]
    pub files: Option<PathBuf>,
}

/// Every name of a regular file of a plan, hard links included (which of a linked file's
/// names is its first is the directory walk's choice on the kernel side), with its inode.
fn file_inodes(plan: &Plan) -> BTreeMap<String, &PlannedInode> {
    let by_ino: std::collections::HashMap<u32, &PlannedInode> = plan
        .inodes
        .iter()
        .filter(|i| i.kind == InodeKind::File)
        .map(|i| (i.ino, i))
        .collect();
    plan.name_paths()
        .into_iter()
        .filter_map(|(ino, path)| by_ino.get(&ino).map(|&i| (path, i)))
        .collect()
}

/// (path, size) of every name of a regular file of a plan ([`file_inodes`]).
fn files(plan: &Plan) -> BTreeMap<String, u64> {
    file_inodes(plan)
        .into_iter()
        .map(|(path, i)| (path, i.size_bytes))
        .collect()
}

/// The figures compared: (name, engine, kernel).
fn rows(e: &LayoutMetrics, k: &LayoutMetrics) -> Vec<(&'static str, f64, f64)> {
    vec![
        ("layout score", e.layout_score.score, k.layout_score.score),
        (
            "fragments per file (mean)",
            e.fragments.mean,
            k.fragments.mean,
        ),
        (
            "fragments per file (p99)",
            e.fragments.p99 as f64,
            k.fragments.p99 as f64,
        ),
        (
            "fragments per file (max)",
            e.fragments.max as f64,
            k.fragments.max as f64,
        ),
        (
            "fragmented files",
            e.fragments.fragmented_files as f64,
            k.fragments.fragmented_files as f64,
        ),
        (
            "free blocks",
            e.free_space.free_blocks as f64,
            k.free_space.free_blocks as f64,
        ),
        (
            "free extents",
            e.free_space.free_extents as f64,
            k.free_space.free_extents as f64,
        ),
        (
            "mapping blocks",
            e.mapping.disk.blocks as f64,
            k.mapping.disk.blocks as f64,
        ),
        (
            "directory blocks",
            e.directories.blocks as f64,
            k.directories.blocks as f64,
        ),
        (
            "groups with directory blocks",
            e.directories.groups as f64,
            k.directories.groups as f64,
        ),
    ]
}

/// Run `workload age-check`.
pub fn run(a: Args) -> Result<()> {
    let tree = layoutlab_workload::population_shrunk(&a.population, a.scale)?;
    let (tree, left_out) =
        layoutlab_experiments::aging::trim_to(&tree, (tree.fs_bytes as f64 * a.fullness) as u64);
    let aged = layoutlab_workload::aging::age(
        &tree,
        &layoutlab_workload::aging::AgingSpec {
            fullness: Some(a.fullness),
            ..layoutlab_workload::aging::AgingSpec::new(a.age, a.seed)
        },
        layoutlab_layout::mkfs::metadata_margin_bytes(tree.fs_bytes),
    )
    .with_context(|| format!("aging {}", tree.name))?;
    layoutlab_rig::require_root("making and mounting a kernel ext4")?;
    layoutlab_rig::cleanup::install();
    let human = Human::new(a.json.as_deref());
    if left_out > 0 {
        eprintln!(
            "{left_out} files of {} left out to hold {}%",
            tree.name,
            a.fullness * 100.0
        );
    }
    let profile = MkfsProfile::by_name("ext4-kernel")?;
    let geo = Geometry::new(&profile, aged.fs_bytes)?;
    let mut params = PolicyParams::new();
    params.insert("writeback_mib".into(), a.writeback_mib.to_string());
    let engine = policy_by_name("ext4-kernel", &params)?.plan(&geo, &aged, a.seed)?;
    engine
        .check(&geo)
        .map_err(|e| anyhow::anyhow!("ext4-kernel made an inconsistent plan: {e}"))?;
    let bar = std::io::stderr().is_terminal().then(|| {
        indicatif::ProgressBar::new(aged.ops.len() as u64).with_style(
            indicatif::ProgressStyle::with_template(
                "[{elapsed_precise}] {bar:30} {pos}/{len} ops on the kernel",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        )
    });
    let mut kopts =
        layoutlab_rig::KernelAgeOptions::disk(layoutlab_rig::FsKind::Ext4, aged.fs_bytes)?;
    kopts.apply.writeback_bytes = a.writeback_mib << 20;
    kopts.mount_options = a.mount_options.clone();
    let (kernel, run) = layoutlab_rig::kernel_plan_with(&aged, &kopts, &mut |p| {
        if let Some(b) = &bar {
            b.set_position(p.ops_done as u64);
        }
    })
    .with_context(|| format!("{} on the kernel's ext4", aged.name))?;
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let (fe, fk) = (files(&engine), files(&kernel));
    let same_tree = fe == fk;
    if !same_tree {
        let only_e: Vec<_> = fe
            .iter()
            .filter(|(p, s)| fk.get(*p) != Some(s))
            .take(3)
            .collect();
        let only_k: Vec<_> = fk
            .iter()
            .filter(|(p, s)| fe.get(*p) != Some(s))
            .take(3)
            .collect();
        bail!(
            "the engine and the kernel left different files after the same stream (a bug): \
             engine {} files, kernel {}; the engine's not on the kernel {only_e:?}; the kernel's not in the engine {only_k:?}",
            fe.len(),
            fk.len()
        );
    }
    let (e, k) = (
        LayoutMetrics::of(&engine, &geo),
        LayoutMetrics::of(&kernel, &geo),
    );
    let mut t = Table::new(
        &format!(
            "{} ({} operations): ext4-kernel (engine) vs Linux ext4 (kernel)",
            aged.name,
            aged.ops.len() - tree.ops.len()
        ),
        vec![
            Column::text("metric"),
            Column::number("engine", None),
            Column::number("kernel", None),
            Column::number("engine - kernel", None),
        ],
    );
    let rows = rows(&e, &k);
    for (name, ev, kv) in &rows {
        let digits = if ev.fract() == 0.0 && kv.fract() == 0.0 {
            0
        } else {
            4
        };
        t.push_row(vec![
            Cell::text(*name),
            Cell::num(*ev, digits),
            Cell::num(*kv, digits),
            Cell::num(ev - kv, digits),
        ])?;
    }
    human.say(&format!(
        "{}\nsame files and sizes on both sides; the kernel's e2fsck -fn: clean; replay {:.1} s\n",
        t.to_terminal(None)?,
        run.apply.seconds
    ));
    if let Some(path) = &a.files {
        write_json(
            path,
            &per_file(&aged, &engine, &kernel, &geo, a.writeback_mib << 20),
        )?;
    }
    if let Some(path) = &a.json {
        let diff: BTreeMap<&str, f64> = rows.iter().map(|(n, ev, kv)| (*n, ev - kv)).collect();
        write_json(
            path,
            &serde_json::json!({
                "population": aged.name,
                "age": a.age,
                "aging_operations": aged.ops.len() - tree.ops.len(),
                "kernel_mount_options": a.mount_options,
                "kernel_queue": run.queue,
                "same_tree": same_tree,
                "engine": e,
                "kernel": k,
                "differences": diff,
            }),
        )?;
    }
    Ok(())
}

/// The `--files` JSON: per name of a regular file its size, its history in the
/// stream and both sides' extents; the geometry; the operations after which both sides wrote
/// back (every `writeback_bytes` of data created or extended, as the replay and the policy
/// count them).
fn per_file(
    pop: &layoutlab_workload::Population,
    engine: &Plan,
    kernel: &Plan,
    geo: &Geometry,
    writeback_bytes: u64,
) -> serde_json::Value {
    use layoutlab_workload::NsOp;
    use serde_json::json;
    // history by file, following renames: path -> file number
    let mut file_at: BTreeMap<&str, usize> = BTreeMap::new();
    let mut history: Vec<Vec<serde_json::Value>> = Vec::new();
    let mut writebacks = Vec::new();
    let mut dirty = 0u64;
    for (i, op) in pop.ops.iter().enumerate() {
        match op {
            NsOp::Create { path, bytes } => {
                file_at.insert(path, history.len());
                history.push(vec![json!({"op": i, "kind": "create", "bytes": bytes})]);
            }
            NsOp::Append { path, bytes } | NsOp::Extend { path, bytes } => {
                if let Some(&f) = file_at.get(path.as_str()) {
                    history[f].push(json!({"op": i, "kind": op.verb(), "bytes": bytes}));
                }
            }
            NsOp::Truncate { path, bytes } => {
                if let Some(&f) = file_at.get(path.as_str()) {
                    history[f].push(json!({"op": i, "kind": "truncate", "bytes": bytes}));
                }
            }
            NsOp::Rename { path, to } => {
                if let Some(f) = file_at.remove(path.as_str()) {
                    history[f].push(json!({"op": i, "kind": "rename"}));
                    file_at.insert(to, f);
                }
            }
            NsOp::Link { path, target } => {
                if let Some(&f) = file_at.get(target.as_str()) {
                    file_at.insert(path, f);
                }
            }
            NsOp::Unlink { path } => {
                file_at.remove(path.as_str());
            }
            _ => {}
        }
        dirty += op.data_bytes();
        if writeback_bytes > 0 && dirty >= writeback_bytes {
            writebacks.push(i);
            dirty = 0;
        }
    }
    let runs = |plan: &Plan| -> BTreeMap<String, (u64, Vec<[u64; 3]>)> {
        file_inodes(plan)
            .into_iter()
            .map(|(path, i)| {
                let r = i
                    .data
                    .iter()
                    .map(|r| [r.logical, r.physical, r.len])
                    .collect();
                (path, (i.size_bytes, r))
            })
            .collect()
    };
    let (re, rk) = (runs(engine), runs(kernel));
    let files: Vec<serde_json::Value> = re
        .iter()
        .map(|(path, (size, e))| {
            let k = rk.get(path).map(|(_, k)| k.clone()).unwrap_or_default();
            let h = file_at
                .get(path.as_str())
                .map(|&f| history[f].clone())
                .unwrap_or_default();
            json!({"path": path, "size": size, "history": h, "engine": e, "kernel": k})
        })
        .collect();
    json!({
        "blocks_per_group": geo.blocks_per_group,
        "flex_bg_size": geo.flex_bg_size,
        "groups": geo.group_count(),
        "block_bytes": geo.block_size_bytes,
        "first_data_block": geo.first_data_block,
        "writebacks_after_op": writebacks,
        "files": files,
    })
}
