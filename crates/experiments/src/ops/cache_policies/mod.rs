//! The "cache-policies" operation (issue 30): how much memory ext3's random reads need before
//! they cost what raw reads cost, and how much the page-replacement policy changes that.
//!
//! Random-read's file (Coly Li, 2010: ~2 TB, 100,000 random 512-byte reads) is planned twice
//! — block-mapped by the `ext3-2007` policy, extent-mapped by `ext4-kernel` — and the same
//! seeded reads become a page stream ([`layoutlab_cache::stream`]: each read's mapping blocks,
//! outermost first, then its data block). Each policy of `layoutlab-cache` runs that stream
//! with each memory size; its misses become a trace of one-block synchronous reads replayed on
//! the device preset. "Raw" is the same reads without a mapping (the data stream alone,
//! through the same policy and memory). No image is made and nothing runs as root: the
//! kernel's side is [`kernel`], the check that the `linux-6` model counts what today's kernel
//! reads under a memory cgroup (crates/experiments/tests/cache_kernel.rs).

pub mod kernel;

use crate::output::{write_json, Human};
use crate::random_file::{offsets, sizes};
use crate::{Experiment, Operation, RunArgs};
use anyhow::{bail, Context, Result};
use layoutlab_cache::{by_name, misses_trace, simulate_stream, stream, Access};
use layoutlab_report::{Cell, Column, HtmlBundle, SweepChart, SweepSeries, Table};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The "cache-policies" operation (registered in [`crate::OPERATIONS`]).
pub struct CachePolicies;

/// Parameters of the "cache-policies" operation: an experiment's `[cache-policies]` table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CachePoliciesSpec {
    /// Scale used when `--scale` is not given.
    pub default_scale: f64,
    /// Size of the file at scale 1, GB (10^9 bytes).
    pub file_gb: f64,
    /// File-system size over file size.
    pub fs_per_file: f64,
    /// Random reads.
    pub reads: u64,
    /// Bytes of each read (a multiple of 512, within one block).
    pub read_bytes: u64,
    /// Memory sizes, as multiples of the ext3 file's mapping blocks' bytes (so that a
    /// scale keeps the same question: from a fraction of the mapping to several times it).
    pub memory_per_mapping: Vec<f64>,
    /// Policies, in report order (names of `layoutlab-cache`'s registry).
    pub policies: Vec<String>,
    /// Layouts: name in the report → layout policy planning the file.
    pub layouts: BTreeMap<String, String>,
    /// "Within this fraction of raw" (0.05: 5%).
    pub within_raw: f64,
}

/// One policy at one memory size on one layout (a row of the JSON contract).
#[derive(Clone, Debug, Serialize)]
pub struct CacheRun {
    /// "ext3" or "ext4".
    pub layout: String,
    /// Cache policy.
    pub policy: String,
    /// Memory, MiB.
    pub memory_mib: f64,
    /// Memory, pages.
    pub memory_pages: usize,
    /// Reads of mapping blocks (misses of the mapping pages).
    pub mapping_reads: u64,
    /// Reads of data blocks.
    pub data_reads: u64,
    /// Predicted seconds of all reads on the device preset.
    pub seconds: f64,
    /// Predicted seconds of the same reads of the raw device (no mapping).
    pub raw_seconds: f64,
}

impl Operation for CachePolicies {
    fn name(&self) -> &'static str {
        "cache-policies"
    }

    /// Plans (no image) and a page-cache model: no device, mount or trace; the kernel check
    /// that needs root is a test (`tests/cache_kernel.rs`), not this run.
    fn needs_root(&self, _exp: &Experiment) -> bool {
        false
    }

    fn check(&self, exp: &Experiment) -> Result<()> {
        check_spec(&exp.params()?)
    }

    fn run(&self, exp: &Experiment, args: &RunArgs) -> Result<()> {
        run(exp, args)
    }
}

fn check_spec(s: &CachePoliciesSpec) -> Result<()> {
    crate::random_file::check(
        s.file_gb,
        s.fs_per_file,
        s.reads,
        s.read_bytes,
        4096,
        "4096 (one page)",
    )?;
    if s.memory_per_mapping.is_empty()
        || s.memory_per_mapping
            .iter()
            .any(|m| !m.is_finite() || *m <= 0.0)
    {
        bail!("memory_per_mapping must list positive multiples");
    }
    if !(s.within_raw > 0.0 && s.within_raw < 1.0) {
        bail!("within_raw must be in (0, 1)");
    }
    for p in &s.policies {
        by_name(p, 1000, &[])?;
    }
    if !s.layouts.contains_key("ext3") {
        bail!("layouts must name an 'ext3' layout (memory sizes are multiples of its mapping)");
    }
    for policy in s.layouts.values() {
        layoutlab_layout::policy_by_name(policy, &layoutlab_layout::PolicyParams::new())?;
        layoutlab_layout::MkfsProfile::by_name(policy)?;
    }
    Ok(())
}

/// The stream of one layout: its accesses and the same reads without mapping.
struct Layout {
    name: String,
    policy: String,
    mapping_blocks: u64,
    accesses: Vec<Access>,
    data_only: Vec<Access>,
}

fn plan_layout(
    name: &str,
    policy: &str,
    spec: &CachePoliciesSpec,
    scale: f64,
    seed: u64,
) -> Result<Layout> {
    let (file_bytes, fs_bytes) = sizes(spec.file_gb, spec.fs_per_file, scale);
    let (_, geometry, plan) = plan_file(policy, file_bytes, fs_bytes, seed)?;
    let block_bytes = u64::from(geometry.block_size_bytes);
    if block_bytes != 4096 {
        bail!("layout {name}: {block_bytes}-byte blocks; the cache counts 4 KiB pages");
    }
    let inode = big_file(&plan)?;
    let accesses = read_stream(
        inode,
        block_bytes,
        file_bytes,
        seed,
        spec.reads,
        spec.read_bytes,
    )?;
    let data_only = accesses.iter().filter(|a| !a.mapping).copied().collect();
    Ok(Layout {
        name: name.to_string(),
        policy: policy.to_string(),
        mapping_blocks: inode.mapping.len() as u64,
        accesses,
        data_only,
    })
}

/// Random-read's one file, `big`, of `file_bytes` in a file system of `fs_bytes`, planned by
/// the layout `policy` on its own mkfs profile: the profile, the geometry and the plan (what
/// this experiment simulates and its kernel check writes as an image).
pub fn plan_file(
    policy: &str,
    file_bytes: u64,
    fs_bytes: u64,
    seed: u64,
) -> Result<(
    layoutlab_layout::MkfsProfile,
    layoutlab_layout::Geometry,
    layoutlab_layout::Plan,
)> {
    let population = crate::steps::plan::one_file("random-read", fs_bytes, "big", file_bytes);
    let image = crate::steps::plan::policy_image(policy, &population, seed)?;
    Ok((image.profile, image.geometry, image.plan))
}

/// The planned file `big` of a [`plan_file`] plan.
pub fn big_file(plan: &layoutlab_layout::Plan) -> Result<&layoutlab_layout::plan::PlannedInode> {
    plan.inodes
        .iter()
        .find(|i| i.name == "big")
        .context("the plan has no file 'big'")
}

/// The pages `reads` random reads of `read_bytes` touch in `inode` (random-read's offsets
/// for `seed` in a file of `file_bytes`): each read's mapping blocks, then its data block.
pub fn read_stream(
    inode: &layoutlab_layout::plan::PlannedInode,
    block_bytes: u64,
    file_bytes: u64,
    seed: u64,
    reads: u64,
    read_bytes: u64,
) -> Result<Vec<Access>> {
    let logical: Vec<u64> = offsets(seed, reads, file_bytes, read_bytes)
        .iter()
        .map(|o| o / block_bytes)
        .collect();
    Ok(stream(inode, block_bytes, &logical)?)
}

/// Predicted seconds of the misses of `accesses` under `policy` with `pages`, and the
/// outcome's mapping and data misses.
fn price(policy: &str, pages: usize, accesses: &[Access], device: &str) -> Result<(f64, u64, u64)> {
    let names: Vec<u64> = accesses.iter().map(|a| a.block).collect();
    let mut cache = by_name(policy, pages, &names)?;
    let outcome = simulate_stream(cache.as_mut(), accesses);
    let mapping = outcome.mapping_misses(accesses);
    let data = outcome.misses() - mapping;
    let trace = misses_trace(accesses, &outcome.hit, 4096);
    let seconds = crate::steps::price::on_preset(device, &trace, 1.0)?.wall_ns / 1e9;
    Ok((seconds, mapping, data))
}

fn run(exp: &Experiment, a: &RunArgs) -> Result<()> {
    let spec: CachePoliciesSpec = exp.params()?;
    check_spec(&spec)?;
    let device = a.device_or(exp);
    let h = Human::new(a.json.as_deref());
    let scale = a.run_scale(exp)?;
    crate::support::load_device(&device)?;
    eprintln!(
        "{} — scale {scale}: {} random {}-byte reads; priced on {device}",
        exp.title, spec.reads, spec.read_bytes
    );
    let layouts: Vec<Layout> = spec
        .layouts
        .iter()
        .map(|(name, policy)| {
            crate::stages::timed(crate::stages::PLAN, || {
                plan_layout(name, policy, &spec, scale, exp.seed)
            })
        })
        .collect::<Result<_>>()?;
    let ext3_mapping = layouts
        .iter()
        .find(|l| l.name == "ext3")
        .map_or(0, |l| l.mapping_blocks);
    let memories: Vec<usize> = spec
        .memory_per_mapping
        .iter()
        .map(|m| ((m * ext3_mapping as f64).round() as usize).max(2))
        .collect();
    let mut runs = Vec::new();
    // Simulating each cache and replaying its misses.
    let pricing = crate::stages::enter(crate::stages::PRICE);
    for l in &layouts {
        eprintln!(
            "  {} ({}): {} mapping blocks",
            l.name, l.policy, l.mapping_blocks
        );
        for &pages in &memories {
            for p in &spec.policies {
                let (seconds, mapping_reads, data_reads) = price(p, pages, &l.accesses, &device)?;
                let (raw_seconds, _, _) = price(p, pages, &l.data_only, &device)?;
                runs.push(CacheRun {
                    layout: l.name.clone(),
                    policy: p.clone(),
                    memory_mib: pages as f64 * 4096.0 / 1048576.0,
                    memory_pages: pages,
                    mapping_reads,
                    data_reads,
                    seconds,
                    raw_seconds,
                });
            }
        }
    }
    drop(pricing);
    let _reporting = crate::stages::enter(crate::stages::REPORT);
    report(
        exp, a, &spec, &device, scale, &layouts, &memories, &runs, &h,
    )
}

/// The smallest memory (MiB) at which `policy` on `layout` comes within `within` of raw.
pub fn memory_within_raw(
    runs: &[CacheRun],
    layout: &str,
    policy: &str,
    within: f64,
) -> Option<f64> {
    runs.iter()
        .filter(|r| r.layout == layout && r.policy == policy)
        .filter(|r| r.seconds <= r.raw_seconds * (1.0 + within))
        .map(|r| r.memory_mib)
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.min(x))))
}

#[derive(Serialize)]
struct CachePoliciesJson<'a> {
    experiment: &'a str,
    scale: f64,
    device: &'a str,
    reads: u64,
    mapping_blocks: BTreeMap<String, u64>,
    runs: &'a [CacheRun],
    /// Layout → policy → MiB needed to come within `within_raw` of raw (absent: none of
    /// the sizes run).
    memory_within_raw_mib: BTreeMap<String, BTreeMap<String, Option<f64>>>,
}

#[allow(clippy::too_many_arguments)]
fn report(
    exp: &Experiment,
    a: &RunArgs,
    spec: &CachePoliciesSpec,
    device: &str,
    scale: f64,
    layouts: &[Layout],
    memories: &[usize],
    runs: &[CacheRun],
    h: &Human,
) -> Result<()> {
    let mib = |pages: usize| pages as f64 * 4096.0 / 1048576.0;
    let categories: Vec<String> = memories.iter().map(|&p| format!("{:.1}", mib(p))).collect();
    let mut html = HtmlBundle::new(&exp.title);
    let mut within = BTreeMap::new();
    for l in layouts {
        let mut columns = vec![Column::text("policy")];
        columns.extend(
            categories
                .iter()
                .map(|c| Column::number(&format!("{c} MiB"), None)),
        );
        let of = |p: &str, pages: usize| {
            runs.iter()
                .find(|r| r.layout == l.name && r.policy == p && r.memory_pages == pages)
        };
        let mut reads = Table::new(
            &format!(
                "{}: mapping reads of {} random reads ({} mapping blocks, {}), by memory",
                l.name, spec.reads, l.mapping_blocks, l.policy
            ),
            columns.clone(),
        );
        let mut secs = Table::new(
            &format!("{}: predicted seconds on {device} (raw: the same reads with no mapping, through linux-6)", l.name),
            columns,
        );
        for p in &spec.policies {
            let mut row = vec![Cell::text(p)];
            let mut srow = vec![Cell::text(p)];
            for &m in memories {
                let r = of(p, m).context("missing run")?;
                row.push(Cell::num(r.mapping_reads as f64, 0));
                srow.push(Cell::num(r.seconds, 1));
            }
            reads.push_row(row)?;
            secs.push_row(srow)?;
        }
        let mut raw = vec![Cell::text("raw")];
        for &m in memories {
            raw.push(Cell::num(
                of("linux-6", m)
                    .or_else(|| of(&spec.policies[0], m))
                    .context("missing run")?
                    .raw_seconds,
                1,
            ));
        }
        secs.push_row(raw)?;
        h.say(&format!(
            "{}\n{}\n",
            reads.to_terminal(None)?,
            secs.to_terminal(None)?
        ));
        html.table(reads);
        html.table(secs);
        let series: Vec<SweepSeries> = spec
            .policies
            .iter()
            .map(|p| SweepSeries {
                name: p.clone(),
                values: memories
                    .iter()
                    .map(|&m| of(p, m).map(|r| r.mapping_reads as f64))
                    .collect(),
            })
            .collect();
        let chart = SweepChart::new(
            &format!(
                "{}: mapping reads against memory, one line per policy",
                l.name
            ),
            "memory (MiB)",
            categories.clone(),
            "mapping reads",
            None,
        );
        html.figure(
            &format!(
                "{} ({}): reads of mapping blocks by {} random reads, against the memory the cache has, one line per page-replacement policy (OPT is the bound).",
                l.name, l.policy, spec.reads
            ),
            &format!("mapping-reads-{}.svg", l.name),
            chart.render(&series),
        );
        let per: BTreeMap<String, Option<f64>> = spec
            .policies
            .iter()
            .map(|p| {
                (
                    p.clone(),
                    memory_within_raw(runs, &l.name, p, spec.within_raw),
                )
            })
            .collect();
        within.insert(l.name.clone(), per);
    }
    let mut t = Table::new(
        &format!(
            "memory each policy needs to come within {:.0}% of raw (MiB; '-': more than {:.1})",
            spec.within_raw * 100.0,
            memories.iter().map(|&p| mib(p)).fold(0.0, f64::max)
        ),
        std::iter::once(Column::text("policy"))
            .chain(layouts.iter().map(|l| Column::number(&l.name, Some("MiB"))))
            .collect(),
    );
    for p in &spec.policies {
        let mut row = vec![Cell::text(p)];
        for l in layouts {
            row.push(match within[&l.name][p] {
                Some(m) => Cell::num(m, 1),
                None => Cell::text("-"),
            });
        }
        t.push_row(row)?;
    }
    h.say(&format!("{}\n", t.to_terminal(None)?));
    html.table(t);
    h.say(&format!(
        "scale {scale}: memory sizes are {} × the ext3 file's mapping; misses priced as \
         synchronous one-block reads on {device}. The linux-6 model is checked against \
         today's kernel under a memory cgroup (docs/experiments/cache-policies.md).\n",
        spec.memory_per_mapping
            .iter()
            .map(|m| format!("{m}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let out_dir = a.out_dir(exp);
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    html.save(&out_dir)?;
    eprintln!(
        "report: {}/{{report.md,index.html,mapping-reads-LAYOUT.svg}}",
        out_dir.display()
    );
    if let Some(path) = &a.json {
        write_json(
            path,
            &CachePoliciesJson {
                experiment: &exp.name,
                scale,
                device,
                reads: spec.reads,
                mapping_blocks: layouts
                    .iter()
                    .map(|l| (l.name.clone(), l.mapping_blocks))
                    .collect(),
                runs,
                memory_within_raw_mib: within,
            },
        )?;
    }
    Ok(())
}
