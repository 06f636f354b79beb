//! ext images through libext2fs: make an image with the real mke2fs, materialize a layout
//! [`Plan`](layoutlab_layout::Plan) into it, inspect any ext2/3/4 image back into the same
//! model, and ask the real e2fsck whether it is clean.
//!
//! This crate owns the libext2fs FFI (a small C shim, `csrc/shim.c`, linked with `-lext2fs
//! -lcom_err`): every inode, bitmap, directory entry and indirect block is written by
//! libext2fs itself, never by format code of ours. It does not decide where anything goes
//! (that is the layout policies' job), it never writes file data (images are sparse), and it
//! does not mount anything (that is the rig's).
//!
//! ```no_run
//! use layoutlab_image::{fsck_check, inspect, materialize, mkfs, normalize_plan};
//! # fn demo(plan: &layoutlab_layout::Plan) -> Result<(), layoutlab_image::ImageError> {
//! let image = std::path::Path::new("/tmp/fs.img");
//! let args: Vec<String> = ["-t", "ext3", "-b", "4096"].iter().map(|s| s.to_string()).collect();
//! mkfs(image, 512 << 20, &args)?;
//! materialize(image, plan)?;
//! assert!(fsck_check(image)?.clean);
//! let back = inspect(image)?;
//! assert_eq!(back.inode(12).map(|i| &i.planned.data), plan.inodes.first().map(|i| &i.data));
//! # let _ = normalize_plan(plan);
//! # Ok(()) }
//! ```
//!
//! See docs/image.md for the libext2fs calls used, the speed of each path, and limits.

mod error;
mod ffi;
mod fsck;
mod fsck_vitals;
mod inspect;
mod materialize;
mod mkfs;

pub use error::ImageError;
pub use fsck::{fsck_check, FsckVerdict};
pub use fsck_vitals::{parse_fsck_vitals, FsckVitals};
pub use inspect::{
    inspect, normalize_plan, ExtentBlock, GroupDescriptor, ImageCounts, Inspected, InspectedInode,
    SpecialInode, SuperSummary,
};
pub use materialize::{
    materialize, materialize_with, materialize_with_dirs, DirWriter, MapWriter, MaterializeStats,
};
pub use mkfs::{
    add_journal, allocated_bytes, default_journal_blocks, estimate_mkfs_bytes,
    estimate_profile_bytes, mkfs, mkfs_profile, mkfs_profile_with, plan_written_bytes,
    profile_mke2fs_args, HostZeroing, MkfsHow, MkfsReport,
};
