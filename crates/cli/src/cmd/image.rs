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
    Inspect {
        /// The image.
        image: PathBuf,
        /// Write every inode's runs and mapping blocks as JSON to PATH ("-" = stdout).
        #[arg(long, value_name = "PATH")]
        json: Option<PathBuf>,
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
            layoutlab_image::mkfs(&output, bytes, &profile.mke2fs_args(bytes))?;
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
                    super::emit(
                        &format!(
                            "wrote {} ({} inodes, {} data blocks, {} indirect blocks); e2fsck -fn: clean\n",
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
        Command::Inspect { image, json } => {
            let ins = layoutlab_image::inspect(&image)?;
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
                    }),
                );
            }
            let s = &ins.superblock;
            let mut t = Table::new(
                &format!("{}", image.display()),
                vec![Column::text("quantity"), Column::number("value", None)],
            );
            let files = ins.inodes.len();
            let maps: usize = ins.inodes.iter().map(|i| i.planned.mapping.len()).sum();
            for (k, v) in [
                ("block size", s.block_bytes as f64),
                ("blocks", s.blocks_count as f64),
                ("free blocks", s.free_blocks as f64),
                ("inodes in use (listed)", files as f64),
                ("indirect blocks", maps as f64),
            ] {
                t.push_row(vec![Cell::text(k), Cell::num(v, 0)])?;
            }
            super::emit(&t.to_terminal(None)?, false);
            Ok(())
        }
    }
}
