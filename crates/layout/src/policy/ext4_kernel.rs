//! `ext4-kernel`: today's ext4 allocator (Linux 6.x; this machine runs 6.18), for a tree
//! copied file by file (create, write, close) onto a file system that today's
//! `mke2fs -t ext4` made (the `ext4-kernel` mkfs profile) and mounted with the defaults
//! (delayed allocation). Read from fs/ext4 of Linux 6.x:
//! - inodes: ialloc.c `find_group_orlov()` for directories — top-level directories spread
//!   over flex groups (fewest directories among those with average free inodes and
//!   clusters), others in the first flex group from the parent's (or its last allocation's)
//!   with room — then the first group of that flex group with a free inode;
//!   `find_group_other()` for everything else: the first group of the parent's flex group
//!   with a free inode — [`crate::alloc::ext4_ialloc::OrlovFlex`], the same code as
//!   2.6.30's. (Today a top-level directory's scan starts at the half-MD4 hash of its name
//!   with the file system's `s_hash_seed`; a seeded random start stands for it.)
//! - goals: inode.c `ext4_inode_to_goal_block()`: directories, symlinks and devices aim at
//!   the first group of their flex group, regular files at the second; no pid colour under
//!   delayed allocation; later blocks continue the last extent (extents.c
//!   `ext4_ext_find_goal()`);
//! - blocks: today's mballoc.c, [`crate::alloc::mballoc::Mballoc::today`]: locality-group
//!   preallocations for files of at most 16 blocks, no preallocation for a larger closed
//!   file, buddy-aligned power-of-two requests that skip the first group of each flex group
//!   for data (`ext4_mb_good_group()`, `CR_POWER2_ALIGNED`), best fit otherwise, writeback
//!   in 2048-block requests (inode.c `MAX_WRITEPAGES_EXTENT_LEN`);
//! - mapping: every regular file, directory and slow symlink extent-mapped (ialloc.c
//!   `ext4_new_inode()`), extent-tree blocks near the data (extents.c
//!   `ext4_ext_new_meta_block()`); directory blocks grown as namei.c `ext4_add_entry()` /
//!   `make_indexed_dir()` grow them, each leaf block keeping metadata_csum's 12-byte tail.
//!
//! docs/policies.md ("ext4-kernel vs the kernel") reports how close this comes to the
//! kernel itself and what is simplified.

use crate::alloc::ext4_fs::{plan_ext4, Ext4Rules};
use crate::alloc::ext4_ialloc::OrlovFlex;
use crate::geometry::Geometry;
use crate::plan::Plan;
use crate::policy::{check_known, Policy, PolicyParams};
use crate::LayoutError;
use layoutlab_workload::Population;

/// Today's ext4 allocator.
#[derive(Clone, Debug, Default)]
pub struct Ext4Kernel;

impl Ext4Kernel {
    /// Takes no parameters.
    pub fn from_params(params: &PolicyParams) -> Result<Ext4Kernel, LayoutError> {
        check_known("ext4-kernel", params, &[])?;
        Ok(Ext4Kernel)
    }
}

impl Policy for Ext4Kernel {
    fn name(&self) -> &str {
        "ext4-kernel"
    }

    fn plan(&self, geo: &Geometry, pop: &Population, seed: u64) -> Result<Plan, LayoutError> {
        let chooser = OrlovFlex {
            flex_size: geo.flex_bg_size.max(1),
        };
        let rules = Ext4Rules {
            flex_dir_groups: true,
            pid_colour: false,
            data_avoids_first_group: true,
            mballoc_today: true,
        };
        plan_ext4(self.name(), geo, pop, seed, &chooser, rules)
    }
}
