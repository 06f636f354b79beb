//! `ext4-2009`: Ted Ts'o's flex_bg allocator of February 2009, kernel commit a4912123
//! ("ext4: New inode/block allocation algorithms for flex_bg filesystems", 2.6.30), which
//! cites e2fsck pass 2 time on his netbook (13.34 s -> 4.24 s). Read from fs/ext4 of 2.6.30
//! to 2.6.32:
//! - directories: `find_group_orlov()` on flex groups — top-level directories spread to the
//!   flex group with fewest directories among those with average free inodes and blocks,
//!   others near their parent — then the first group of that flex group with a free inode;
//!   other inodes: `find_group_other()`, the first group of the parent's flex group with a
//!   free inode — [`crate::alloc::ext4_ialloc`];
//! - goals: `ext4_ext_find_goal()`: directories, symlinks and devices aim at the first
//!   group of their flex group, regular files at the second; with delayed allocation (the
//!   default) without the pid colour;
//! - mballoc's `ext4_mb_good_group()` skips the first group of each flex group for data in
//!   its first pass, so directory blocks cluster there, data biased away;
//! - otherwise the mballoc model of `ext4-2008` — [`crate::alloc::mballoc`].

use crate::alloc::ext4_fs::Ext4Rules;
use crate::alloc::ext4_ialloc::OrlovFlex;
use crate::geometry::Geometry;
use crate::policy::{check_known, PolicyEntry, PolicyParams, OnePass};
use crate::LayoutError;

/// This policy's entry in the registry ([`super::POLICIES`]).
pub const ENTRY: PolicyEntry = PolicyEntry {
    name: "ext4-2009",
    default_mkfs_profile: "ext4-2009",
    build: |params| Ok(Box::new(Ext4_2009::from_params(params)?)),
    overflowed_mapping_blocks: None,
    metadata_region_end: None,
};

/// The 2.6.30 ext4 allocator with flex_bg.
#[derive(Clone, Debug, Default)]
pub struct Ext4_2009;

impl Ext4_2009 {
    /// Takes no parameters.
    pub fn from_params(params: &PolicyParams) -> Result<Ext4_2009, LayoutError> {
        check_known(ENTRY.name, params, &[])?;
        Ok(Ext4_2009)
    }
}

crate::policy::one_pass_policy!(Ext4_2009);

/// 2.6.30's goal and mballoc rules (ext4-meta-ssd's too: only its metadata's place differs).
pub(crate) const RULES: Ext4Rules = Ext4Rules {
    flex_dir_groups: true,
    pid_colour: false,
    data_avoids_first_group: true,
    mballoc_today: false,
    writeback_window_bytes: None,
    percpu_counters: false,
};

impl Ext4_2009 {
    /// The ext4 planner with Orlov on flex groups and [`RULES`].
    fn one_pass(&self, geo: &Geometry) -> Result<OnePass, LayoutError> {
        let chooser = OrlovFlex {
            flex_size: geo.flex_bg_size.max(1),
            whole_flex_max_dirs: false,
        };
        Ok(OnePass::ext4(chooser, RULES, geo))
    }
}
