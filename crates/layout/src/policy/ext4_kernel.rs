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
//!   2.6.30's (with today's `max_dirs`, a flex group's worth of `inodes_per_group / 16`), reading the file-system-wide averages through percpu counters that lag by up
//!   to a batch of 32 (`percpu_counter_read_positive()`, [`crate::alloc::ext4_ialloc::SbCounters`]).
//!   (Today a top-level directory's scan starts at the half-MD4 hash of its name with the
//!   file system's `s_hash_seed`; a seeded random start stands for it.)
//! - goals: inode.c `ext4_inode_to_goal_block()`: directories, symlinks and devices aim at
//!   the first group of their flex group, regular files at the second; no pid colour under
//!   delayed allocation; later blocks continue the last extent (extents.c
//!   `ext4_ext_find_goal()`);
//! - blocks: today's mballoc.c, [`crate::alloc::mballoc::Mballoc::today`]: locality-group
//!   preallocations for files of at most 16 blocks; writeback in 2048-block requests
//!   (inode.c `MAX_WRITEPAGES_EXTENT_LEN`), a larger file's last one without
//!   preallocation, its earlier ones stream allocations; buddy-aligned power-of-two
//!   requests that skip the first group of each flex group for data (`ext4_mb_good_group()`,
//!   `CR_POWER2_ALIGNED`), best fit otherwise; the goal's group and the next three, then
//!   the order lists (`ext4_mb_scan_groups()`, a rotational disk's `mb_max_linear_groups`);
//! - delayed allocation (the default mount option): inodes and directory blocks are
//!   allocated as the tree is made, file data only when writeback comes (parameter
//!   `writeback_mib`), files oldest first — so Orlov's free-space averages do not yet see
//!   the data, and every file is closed when its blocks are chosen;
//! - mapping: every regular file, directory and slow symlink extent-mapped (ialloc.c
//!   `ext4_new_inode()`), extent-tree blocks near the data (extents.c
//!   `ext4_ext_new_meta_block()`); directory blocks grown as namei.c `ext4_add_entry()` /
//!   `make_indexed_dir()` grow them, each leaf block keeping metadata_csum's 12-byte tail.
//!
//! docs/policies.md ("ext4-kernel vs the kernel") reports how close this comes to the
//! kernel itself and what is simplified.

use crate::alloc::ext4_fs::Ext4Rules;
use crate::alloc::ext4_ialloc::OrlovFlex;
use crate::geometry::Geometry;
use crate::policy::{check_known, PolicyEntry, PolicyParams, OnePass};
use crate::LayoutError;

/// This policy's entry in the registry ([`super::POLICIES`]).
pub const ENTRY: PolicyEntry = PolicyEntry {
    name: "ext4-kernel",
    default_mkfs_profile: "ext4-kernel",
    build: |params| Ok(Box::new(Ext4Kernel::from_params(params)?)),
    overflowed_mapping_blocks: None,
    metadata_region_end: None,
};

/// Default of the `writeback_mib` parameter. Not a kernel constant: it is the interval at
/// which the comparison with the real kernel (crates/image/tests/ext4_kernel.rs) calls
/// `syncfs()`, so model and kernel see the same writeback; a real copy's flusher
/// (`dirty_background_ratio`, `dirty_expire_centisecs`) is not modelled.
pub const DEFAULT_WRITEBACK_MIB: u64 = 64;

/// Today's ext4 allocator.
#[derive(Clone, Debug)]
pub struct Ext4Kernel {
    /// Delayed allocation's writeback window in bytes (0: blocks as each file is written).
    pub writeback_bytes: u64,
}

impl Default for Ext4Kernel {
    fn default() -> Ext4Kernel {
        Ext4Kernel {
            writeback_bytes: DEFAULT_WRITEBACK_MIB << 20,
        }
    }
}

impl Ext4Kernel {
    /// Parameter `writeback_mib` (default 64): under delayed allocation file data gets its
    /// blocks only when writeback runs; the model writes back every file written so far
    /// each time this many MiB of files have been written (and at the end), as a copy
    /// that calls `syncfs()` every so often, or a flusher that lags the writer by about
    /// this much, would. 0 allocates each file's blocks as it is written.
    pub fn from_params(params: &PolicyParams) -> Result<Ext4Kernel, LayoutError> {
        check_known(ENTRY.name, params, &["writeback_mib"])?;
        let mut p = Ext4Kernel::default();
        if let Some(v) = params.get("writeback_mib") {
            let mib: u64 = v.trim().parse().map_err(|_| LayoutError::BadParam {
                policy: ENTRY.name.into(),
                param: "writeback_mib".into(),
                reason: format!("'{v}': not a whole number of MiB"),
            })?;
            p.writeback_bytes = mib << 20;
        }
        Ok(p)
    }
}

crate::policy::one_pass_policy!(Ext4Kernel);

impl Ext4Kernel {
    /// The ext4 planner with today's `max_dirs`, mballoc, delayed allocation and percpu
    /// counters.
    fn one_pass(&self, geo: &Geometry) -> Result<OnePass, LayoutError> {
        let chooser = OrlovFlex {
            flex_size: geo.flex_bg_size.max(1),
            whole_flex_max_dirs: true,
        };
        let rules = Ext4Rules {
            flex_dir_groups: true,
            pid_colour: false,
            data_avoids_first_group: true,
            mballoc_today: true,
            writeback_window_bytes: (self.writeback_bytes > 0).then_some(self.writeback_bytes),
            percpu_counters: true,
        };
        Ok(OnePass::ext4(chooser, rules, geo))
    }
}
