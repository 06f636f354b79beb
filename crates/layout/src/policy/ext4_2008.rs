//! `ext4-2008`: ext4 with flex_bg before 2.6.30 — the allocator of Ted Ts'o's "old" column
//! (February 2009). Read from the kernel sources:
//! - inodes: every inode, directory or not, in the parent's flex group through 2.6.28
//!   fs/ext4/ialloc.c `find_group_flex()` (kept in 2.6.30 behind `-o oldalloc`) —
//!   [`crate::alloc::ext4_ialloc::find_group_flex`];
//! - the first block's goal: fs/ext4/extents.c `ext4_ext_find_goal()` of 2.6.28, the
//!   inode's own group plus the writer's pid colour `(pid % 16) * blocks_per_group / 16`;
//!   later blocks continue the last extent;
//! - blocks: mballoc (fs/ext4/mballoc.c): goal first, group scan, 512-block locality-group
//!   preallocation for files under 16 blocks — [`crate::alloc::mballoc`];
//! - every file, directory and slow symlink extent-mapped, tree blocks next to the data.
//!
//! docs/policies.md says what is simplified.

use crate::alloc::ext4_fs::Ext4Rules;
use crate::alloc::ext4_ialloc::InodeChooser;
use crate::alloc::ext4_ialloc::{find_group_flex, SbTotals};
use crate::alloc::ialloc::InodeMap;
use crate::alloc::FreeMap;
use crate::geometry::Geometry;
use crate::policy::{check_known, PolicyEntry, PolicyParams, OnePass};
use crate::LayoutError;

/// This policy's entry in the registry ([`super::POLICIES`]).
pub const ENTRY: PolicyEntry = PolicyEntry {
    name: "ext4-2008",
    default_mkfs_profile: "ext4-2009",
    build: |params| Ok(Box::new(Ext4_2008::from_params(params)?)),
    overflowed_mapping_blocks: None,
    metadata_region_end: None,
};

/// The 2.6.28 ext4 allocator with flex_bg.
#[derive(Clone, Debug, Default)]
pub struct Ext4_2008;

impl Ext4_2008 {
    /// Takes no parameters.
    pub fn from_params(params: &PolicyParams) -> Result<Ext4_2008, LayoutError> {
        check_known(ENTRY.name, params, &[])?;
        Ok(Ext4_2008)
    }
}

/// `find_group_flex()` for every inode.
struct FlexChooser {
    flex_size: u64,
}

impl InodeChooser for FlexChooser {
    fn choose(
        &self,
        inodes: &InodeMap,
        blocks: &FreeMap,
        parent_group: u64,
        _: Option<u64>,
        _: bool,
        _: bool,
        _: u64,
        _: &SbTotals,
    ) -> Option<u64> {
        find_group_flex(inodes, blocks, self.flex_size, parent_group)
    }
}

crate::policy::one_pass_policy!(Ext4_2008);

impl Ext4_2008 {
    /// The ext4 planner with `find_group_flex()` and 2.6.28's goals.
    fn one_pass(&self, geo: &Geometry) -> Result<OnePass, LayoutError> {
        let chooser = FlexChooser {
            flex_size: geo.flex_bg_size.max(1),
        };
        let rules = Ext4Rules {
            flex_dir_groups: false,
            pid_colour: true,
            data_avoids_first_group: false,
            mballoc_today: false,
            writeback_window_bytes: None,
            percpu_counters: false,
        };
        Ok(OnePass::ext4(chooser, rules, geo))
    }
}
