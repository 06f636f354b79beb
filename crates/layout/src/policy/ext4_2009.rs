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

use crate::alloc::ext4_fs::{plan_ext4_in, Ext4Rules, Ext4SpaceRules};
use crate::alloc::ext4_ialloc::OrlovFlex;
use crate::geometry::Geometry;
use crate::plan::Plan;
use crate::policy::{Prefixes, check_known, PolicyEntry, Policy, PolicyParams};
use crate::LayoutError;
use layoutlab_workload::Population;

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

impl Policy for Ext4_2009 {
    fn name(&self) -> &str {
        ENTRY.name
    }

    crate::policy::one_pass_planner!();
}

impl Ext4_2009 {
    /// The plan of `pop`, or with `prefixes` the plans of its prefixes in one pass
    /// ([`Policy::plan_prefixes`]).
    fn plan_in(
        &self,
        geo: &Geometry,
        pop: &Population,
        seed: u64,
        prefixes: Option<&mut Prefixes>,
    ) -> Result<Option<Plan>, LayoutError> {
        let chooser = OrlovFlex {
            flex_size: geo.flex_bg_size.max(1),
            whole_flex_max_dirs: false,
        };
        let rules = Ext4Rules {
            flex_dir_groups: true,
            pid_colour: false,
            data_avoids_first_group: true,
            mballoc_today: false,
            writeback_window_bytes: None,
            percpu_counters: false,
        };
        plan_ext4_in(
            self.name(),
            geo,
            pop,
            seed,
            &chooser,
            rules,
            Ext4SpaceRules::of(geo),
            prefixes,
        )
    }
}
