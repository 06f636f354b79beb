//! `layoutlab image ...`: write an ext image through libext2fs from a plan; inspect any image.

use super::plan::{make_plan, Args as PlanArgs};
use super::write_json;
use anyhow::{bail, Result};
use clap::Subcommand;
use layoutlab_report::{Cell, Column, Table};
use std::path::PathBuf;

/// Image commands.
#[derive(Subcommand)]
pub enum Command {
    /// Plan a workload and write it as a sparse ext image (mke2fs + libext2fs), then check it
    /// with the real e2fsck -fn.
    ///
    /// Example: layoutlab image make --policy ext3-metacluster --scale 0.01 bench5.img
    Make {
        /// The image file to create (must not exist).
        output: PathBuf,
        #[command(flatten)]
        plan: PlanArgs,
    },
    /// Read any ext2/3/4 image (ours or the kernel's) back into layoutlab's model.
    ///
    /// Example: layoutlab image inspect --metrics bench5.img
    Inspect {
        /// The image.
        image: PathBuf,
        /// Write every inode's runs and mapping blocks as JSON to PATH ("-" = stdout); with
        /// --metrics, the metrics instead.
        #[arg(long, value_name = "PATH")]
        json: Option<PathBuf>,
        /// Print the layout metrics: layout score, fragments per file, free space as
        /// e2freefrag reports it, mapping- and directory-block dispersion.
        #[arg(long, long_help = super::metrics::HELP)]
        metrics: bool,
    },
}

/// Run an image command.
pub fn run(cmd: Command) -> Result<()> {
    match cmd {
        Command::Make { output, plan: a } => {
            if output.exists() {
                bail!(
                    "{} already exists; layoutlab never overwrites an image",
                    output.display()
                );
            }
            let (profile, geo, plan) = make_plan(&a)?;
            let bytes = geo.blocks_count * u64::from(geo.block_size_bytes);
            layoutlab_image::mkfs_profile(&output, bytes, &profile)?;
            let result = layoutlab_image::materialize(&output, &plan)
                .map_err(anyhow::Error::from)
                .and_then(|stats| {
                    let v = layoutlab_image::fsck_check(&output)?;
                    if !v.clean {
                        bail!("e2fsck -fn does not find the image clean:\n{}", v.output);
                    }
                    Ok(stats)
                });
            match result {
                Ok(stats) => {
                    if a.metrics {
                        let m = layoutlab_image::inspect(&output)?.metrics();
                        match &a.json {
                            Some(p) => write_json(p, &m)?,
                            None => super::emit(
                                &super::metrics::tables(&m, &output.display().to_string())?,
                                false,
                            ),
                        }
                    }
                    super::emit(
                        &format!(
                            "wrote {} ({} inodes, {} data blocks, {} mapping blocks); e2fsck -fn: clean\n",
                            output.display(),
                            stats.inodes,
                            stats.file_data_blocks,
                            stats.mapping_blocks
                        ),
                        false,
                    );
                    Ok(())
                }
                Err(e) => {
                    let _ = std::fs::remove_file(&output);
                    Err(e)
                }
            }
        }
        Command::Inspect {
            image,
            json,
            metrics,
        } => {
            let ins = layoutlab_image::inspect(&image)?;
            if metrics {
                let m = ins.metrics();
                return match json {
                    Some(p) => write_json(&p, &m),
                    None => {
                        super::emit(
                            &super::metrics::tables(&m, &image.display().to_string())?,
                            false,
                        );
                        Ok(())
                    }
                };
            }
            let c = ins.counts();
            if let Some(p) = json {
                let s = &ins.superblock;
                return write_json(
                    &p,
                    &serde_json::json!({
                        "image": image,
                        "block_size_bytes": s.block_bytes,
                        "blocks_count": s.blocks_count,
                        "free_blocks": s.free_blocks,
                        "groups": s.groups,
                        "inodes_count": s.inodes_count,
                        "free_inodes": s.free_inodes,
                        "features": s.features,
                        "plan": ins.plan("inspected"),
                        "extent_blocks": ins.extent_blocks.len(),
                        "counts": {
                            "regular_files": c.regular_files,
                            "directories": c.directories,
                            "symlinks": c.symlinks,
                            "fast_symlinks": c.fast_symlinks,
                            "hard_links": c.hard_links,
                            "char_devices": c.char_devices,
                            "block_devices": c.block_devices,
                            "fifos": c.fifos,
                            "sockets": c.sockets,
                            "extent_mapped": c.extent_mapped,
                            "indirect_blocks": c.indirect_blocks,
                            "extent_tree_blocks": c.extent_tree_blocks,
                        },
                    }),
                );
            }
            let s = &ins.superblock;
            let mut t = Table::new(
                &format!("{}", image.display()),
                vec![Column::text("quantity"), Column::number("value", None)],
            );
            let files = ins.inodes.len();
            for (k, v) in [
                ("block size", s.block_bytes as f64),
                ("blocks", s.blocks_count as f64),
                ("free blocks", s.free_blocks as f64),
                ("inodes in use (listed)", files as f64),
                ("regular files", c.regular_files as f64),
                ("directories", c.directories as f64),
                ("symlinks", c.symlinks as f64),
                ("fast symlinks", c.fast_symlinks as f64),
                ("hard links", c.hard_links as f64),
                ("character devices", c.char_devices as f64),
                ("block devices", c.block_devices as f64),
                ("fifos", c.fifos as f64),
                ("sockets", c.sockets as f64),
                ("extent-mapped inodes", c.extent_mapped as f64),
                ("indirect blocks", c.indirect_blocks as f64),
                ("extent-tree blocks", c.extent_tree_blocks as f64),
            ] {
                t.push_row(vec![Cell::text(k), Cell::num(v, 0)])?;
            }
            super::emit(&t.to_terminal(None)?, false);
            Ok(())
        }
    }
}
