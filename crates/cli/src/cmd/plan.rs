//! `layoutlab plan`: lay out a workload with a policy, in memory, and summarise it.

use super::write_json;
use anyhow::{Context, Result};
use clap::Args as ClapArgs;
use layoutlab_layout::geometry::Geometry;
use layoutlab_layout::metrics::LayoutMetrics;
use layoutlab_layout::mkfs::MkfsProfile;
use layoutlab_layout::policy::{self, PolicyParams};
use layoutlab_layout::Plan;
use layoutlab_report::{Cell, Column, Table};
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `plan` (shared by `image make`).
#[derive(ClapArgs, Clone)]
pub struct Args {
    /// Population: bench5, bench5-10tb, ubuntu-32g, or a population .toml file (populations/ubuntu-32g.toml shows the format).
    #[arg(long, default_value = "bench5")]
    pub workload: String,
    /// Layout policy: ext3-2007, ext3-metacluster, rext3, ext4-2008, ext4-2009, ext4-kernel
    /// (today's kernel), or ext4-meta-ssd / ext3-meta-ssd (metadata in a leading region for an
    /// SSD; parameter region=FRACTION); ext4-2007 (today's kernel under nodelalloc) plans
    /// only files in the root directory written from their start, as large-delete writes them.
    #[arg(long, default_value = "ext3-2007")]
    pub policy: String,
    /// A policy parameter NAME=VALUE (repeatable), e.g. --param region_start=1/2.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// mkfs profile: ext3-2007 (e2fsprogs 1.40), ext4-2009 (1.41.3/1.41.4, flex_bg),
    /// ext4-meta-ssd (ext4-2009 with every table and the journal at the start), ext4-kernel
    /// (today's mke2fs -t ext4) or ext4-2007 (the ext4-2007 kernel profile's mke2fs). Default:
    /// the policy's era (ext3-2007 for the ext3 policies, ext4-2009 for ext4-2008/ext4-2009,
    /// ext4-meta-ssd for ext4-meta-ssd, ext4-kernel for ext4-kernel, ext4-2007 for ext4-2007).
    #[arg(long)]
    pub mkfs_profile: Option<String>,
    /// Shrink the disk and every file together (1.0 = the profile's full size).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 2007)]
    pub seed: u64,
    /// Write the whole plan (every inode, run and indirect block) as JSON to PATH ("-" =
    /// stdout); with --metrics, the metrics instead.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Print the layout metrics of the plan (`image make`: of the image written, read
    /// back): layout score, fragments per file, free space as e2freefrag reports it,
    /// mapping- and directory-block dispersion.
    #[arg(long, long_help = super::metrics::HELP)]
    pub metrics: bool,
}

/// Parse NAME=VALUE parameters.
pub fn parse_params(params: &[String]) -> Result<PolicyParams> {
    let mut out = PolicyParams::new();
    for p in params {
        let (k, v) = p
            .split_once('=')
            .with_context(|| format!("policy parameter '{p}' is not NAME=VALUE"))?;
        out.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok(out)
}

/// Plan a workload: returns the geometry, the profile and the plan.
pub fn make_plan(a: &Args) -> Result<(MkfsProfile, Geometry, Plan)> {
    let pop = layoutlab_workload::population_by_name(&a.workload)?.scale(a.scale)?;
    let pol = policy::by_name(&a.policy, &parse_params(&a.params)?)?;
    let profile_name = match &a.mkfs_profile {
        Some(p) => p.as_str(),
        None => policy::default_mkfs_profile(&a.policy).unwrap_or("ext3-2007"),
    };
    let profile = MkfsProfile::by_name(profile_name)?;
    let geo = Geometry::new(&profile, pop.fs_bytes)?;
    let plan = pol.plan(&geo, &pop, a.seed)?;
    plan.check(&geo)
        .map_err(|e| anyhow::anyhow!("policy {} made an inconsistent plan: {e}", a.policy))?;
    Ok((profile, geo, plan))
}

/// Run `plan`.
pub fn run(a: Args) -> Result<()> {
    let t = Instant::now();
    let (_, geo, plan) = make_plan(&a)?;
    let secs = t.elapsed().as_secs_f64();
    if a.metrics {
        let m = LayoutMetrics::of(&plan, &geo);
        return match &a.json {
            Some(p) => write_json(p, &m),
            None => {
                let title = format!("{} on {} at scale {}", a.policy, a.workload, a.scale);
                super::emit(&super::metrics::tables(&m, &title)?, false);
                Ok(())
            }
        };
    }
    if let Some(p) = &a.json {
        return write_json(p, &plan);
    }
    let mut t = Table::new(
        &format!(
            "{} on {} at scale {} (planned in {secs:.2} s)",
            a.policy, a.workload, a.scale
        ),
        vec![Column::text("quantity"), Column::number("value", None)],
    );
    let frags = plan.fragments_per_file();
    let mut rows: Vec<(&str, f64, usize)> = vec![
        ("file-system blocks", geo.blocks_count as f64, 0),
        ("block groups", geo.group_count() as f64, 0),
        ("inodes planned", plan.inodes.len() as f64, 0),
        ("file data blocks", plan.file_data_blocks() as f64, 0),
        (
            "mapping blocks (indirect or extent tree)",
            plan.mapping_blocks() as f64,
            0,
        ),
        (
            "files with >1 fragment",
            frags.iter().filter(|(_, f)| *f > 1).count() as f64,
            0,
        ),
        (
            "fragments in all",
            frags.iter().map(|(_, f)| *f).sum::<u64>() as f64,
            0,
        ),
    ];
    // a metadata region (ext4-meta-ssd, ext3-meta-ssd): its size, what it holds, the overflow
    if let Some(end) = policy::metadata_region_end(&a.policy, &parse_params(&a.params)?, &geo)? {
        let fp = policy::ext4_meta_ssd::footprint(&plan, &geo, end);
        rows.extend([
            ("metadata region (blocks from the start)", end as f64, 0),
            ("metadata ends at block", fp.used_end_block as f64, 0),
            (
                "metadata blocks overflowed past the region (in the data area, at their goals)",
                fp.overflow_blocks as f64,
                0,
            ),
            (
                "file data blocks in the region (files the data area could not hold)",
                fp.data_in_region_blocks as f64,
                0,
            ),
        ]);
    }
    for (k, v, p) in rows {
        t.push_row(vec![Cell::text(k), Cell::num(v, p)])?;
    }
    super::emit(&t.to_terminal(None)?, false);
    Ok(())
}
