//! Layout: where every inode, data block, mapping block and directory block goes.
//!
//! This crate owns the mke2fs-compatible [`Geometry`] of an ext file system and the
//! [`MkfsProfile`]s that make it, the [`Policy`] trait (one allocator per file under
//! `policy/`, shared allocation machinery under `alloc/`), and the [`Plan`] a policy
//! produces with its metrics. It does no I/O (beyond reading a profile file when asked) and
//! writes no image (that is `layoutlab-image`): a plan for a 400 GB file system is computed
//! in memory in seconds.
//!
//! ```
//! use layoutlab_layout::{policy, Geometry, MkfsProfile, PolicyParams};
//! let profile = MkfsProfile::by_name("ext3-2007").unwrap();
//! let pop = layoutlab_workload::population_by_name("bench5").unwrap().scale(0.002).unwrap();
//! let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
//! let vanilla = policy::by_name("ext3-2007", &PolicyParams::new()).unwrap();
//! let plan = vanilla.plan(&geo, &pop, 42).unwrap();
//! plan.check(&geo).unwrap();
//! assert!(plan.mapping_blocks() > 0);
//! // Arguments for today's mke2fs that make the same file system:
//! let args = profile.mke2fs_args(pop.fs_bytes);
//! assert!(args.contains(&"-I".to_string()));
//! ```

pub mod alloc;
pub mod classify;
mod error;
pub mod geometry;
pub mod mapping;
pub mod metrics;
pub mod mke2fs;
pub mod mkfs;
pub mod plan;
pub mod policy;

pub use classify::{BlockClass, BlockClasses};
pub use error::LayoutError;
pub use geometry::Geometry;
pub use mapping::MapFormat;
pub use mkfs::MkfsProfile;
pub use plan::*;
pub use policy::{by_name as policy_by_name, Policy, PolicyParams};
