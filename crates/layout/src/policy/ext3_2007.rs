//! `ext3-2007`: Linux 2.6.23 ext3 laying out files written sequentially.
//!
//! Read from fs/ext3/balloc.c, ialloc.c, inode.c and namei.c of 2.6.2x (see
//! docs/policies.md for the function-by-function account):
//! - inodes: `find_group_other()` (the root's group while it has a free inode and a free
//!   block, then a quadratic hash) — [`crate::alloc::ialloc`];
//! - first block: `ext3_find_near()` with the writer's pid colour; then
//!   `ext3_find_goal()`'s "last allocated + 1";
//! - blocks: `ext3_new_blocks()` with reservation windows (8 blocks, doubling to 1027 while
//!   more than half of a window was used) — [`crate::alloc::ext3_alloc`];
//! - each IND/DIND/TIND block in the same `ext3_alloc_blocks()` call as the data block it
//!   leads to, just before it — this file's [`IndirectPlacer`].

use crate::alloc::ext3_alloc::Ext3Alloc;
use crate::alloc::writer::IndirectPlacer;
use crate::geometry::Geometry;
use crate::policy::{check_known, PolicyEntry, PolicyParams, OnePass};
use crate::LayoutError;

/// This policy's entry in the registry ([`super::POLICIES`]).
pub const ENTRY: PolicyEntry = PolicyEntry {
    name: "ext3-2007",
    default_mkfs_profile: "ext3-2007",
    build: |params| Ok(Box::new(Ext3_2007::from_params(params)?)),
    overflowed_mapping_blocks: None,
    metadata_region_end: None,
};

/// The vanilla 2.6.23 ext3 allocator.
#[derive(Clone, Debug, Default)]
pub struct Ext3_2007;

impl Ext3_2007 {
    /// Takes no parameters.
    pub fn from_params(params: &PolicyParams) -> Result<Ext3_2007, LayoutError> {
        check_known(ENTRY.name, params, &[])?;
        Ok(Ext3_2007)
    }
}

/// 2.6.23's placement: each IND/DIND/TIND is allocated by the data allocator just before the
/// data it maps (`inline`), so `place` is never asked.
pub(crate) struct InlineIndirect;

impl IndirectPlacer for InlineIndirect {
    fn inline(&self) -> bool {
        true
    }

    fn place(&mut self, _: &mut Ext3Alloc, _: u64, _: usize) -> Option<Vec<u64>> {
        unreachable!("inline placers allocate indirect blocks with the data")
    }
}

crate::policy::one_pass_policy!(Ext3_2007);

impl Ext3_2007 {
    /// The ext3 planner with 2.6.23's reservation windows and indirect blocks inline.
    fn one_pass(&self, geo: &Geometry) -> Result<OnePass, LayoutError> {
        Ok(OnePass::ext3(geo, [], InlineIndirect))
    }
}
