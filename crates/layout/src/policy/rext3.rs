//! `rext3`: the layout of rext3 from Ao Ma, Chris Dragga, Andrea C. Arpaci-Dusseau and
//! Remzi H. Arpaci-Dusseau, "ffsck: The Fast File System Checker" (FAST '13), as this
//! project's issue 9 describes it: every block group keeps an *indirect region* right after
//! its inode table and the group's indirect blocks go there, so a checker reads a group's
//! metadata (inode table, then indirect blocks) in one sweep. The paper's abstract says
//! rext3 "co-locates and self-identifies its metadata blocks"; its body could not be read
//! here, so the region's size, the overflow rule and the place of directory blocks are
//! choices, said as such (docs/policies.md). Self-identification (back-pointers in the
//! blocks) is an on-disk format change and is left out: only the placement is modelled, and
//! the images stay plain ext3.
//!
//! - The region of a group starts at the first block after the group's inode table that
//!   mke2fs left free (in group 0 that is after the root directory, lost+found and the
//!   journal; with flex_bg, whose tables sit elsewhere, after the group's own first block)
//!   and is `size` of the group long (default 1/128, 256 of 32,768 blocks: the metacluster's
//!   default, not a figure from the paper), cut at the group's end.
//! - Data (file blocks, and directory blocks unless `dirs = "region"`) never goes into a
//!   region: it is an [`Ext3Alloc`] hole. Its blocks stay free in the bitmap and the group
//!   counts, so every count-based decision is vanilla ext3's and an unused region block is,
//!   on disk, an ordinary free block (what e2fsck's pass 5 expects of a block no inode
//!   owns).
//! - A write needing indirect blocks allocates its data block first (ext3-2007's goal,
//!   window and search), then each indirect block, in allocation order, takes the first
//!   free block of the region of the data block's group.
//! - A full region falls back to the old allocation from the start of the data block's
//!   group (`ext3_new_blocks(goal = group start)` without a window, moving on to later
//!   groups only when the group is full): the same rule as [`super::ext3_metacluster`]'s
//!   default, so the two policies differ only in where the region sits.
//! - Everything else (inodes, first-block colours, windows, directories unless
//!   `dirs = "region"`) is [`super::ext3_2007`]'s allocator, through the shared
//!   [`plan_ext3`].
//!
//! Parameters: `size` (fraction of the group, decimal or `a/b`, default 1/128); `dirs`
//! (`outside`, default: directory blocks where ext3-2007 puts them; `region`: each
//! directory block in the region of its goal's group while it has room, else where ext3
//! puts it — an exploration, not a claim about the paper).

use crate::alloc::ext3_alloc::Ext3Alloc;
use crate::alloc::writer::IndirectPlacer;
use crate::geometry::Geometry;
use crate::plan::Plan;
use crate::policy::{place_each, take_from_hole, check_known, PolicyEntry, parse_region_fraction, PolicyParams, OnePass};
use crate::LayoutError;

/// This policy's entry in the registry ([`super::POLICIES`]).
pub const ENTRY: PolicyEntry = PolicyEntry {
    name: "rext3",
    default_mkfs_profile: "ext3-2007",
    build: |params| Ok(Box::new(Rext3::from_params(params)?)),
    overflowed_mapping_blocks: Some(|params, plan, geo| {
        Ok(Rext3::from_params(params)?.overflowed_mapping_blocks(plan, geo))
    }),
    metadata_region_end: None,
};

const NAME: &str = ENTRY.name;

/// The rext3 layout policy.
#[derive(Clone, Debug)]
pub struct Rext3 {
    /// Size of each group's indirect region as a fraction of the group.
    pub size: f64,
    /// Directory blocks go into the regions too (`dirs = "region"`; default: outside,
    /// where ext3-2007 puts them).
    pub dirs_in_region: bool,
}

impl Default for Rext3 {
    fn default() -> Self {
        Rext3 {
            size: 1.0 / 128.0,
            dirs_in_region: false,
        }
    }
}

impl Rext3 {
    /// Reads `size` and `dirs`.
    pub fn from_params(params: &PolicyParams) -> Result<Rext3, LayoutError> {
        check_known(NAME, params, &["size", "dirs"])?;
        let mut p = Rext3::default();
        if let Some(v) = params.get("dirs") {
            p.dirs_in_region = match v.as_str() {
                "outside" => false,
                "region" => true,
                other => {
                    return Err(LayoutError::BadParam {
                        policy: NAME.into(),
                        param: "dirs".into(),
                        reason: format!("'{other}'; valid: outside, region"),
                    })
                }
            };
        }
        if let Some(v) = params.get("size") {
            p.size = parse_region_fraction(NAME, "size", v)?;
        }
        Ok(p)
    }

    /// The indirect region of every group of `geo`: absolute `[start, end)`, empty
    /// (`start == end`) when mke2fs left nothing free after the inode table.
    pub fn regions(&self, geo: &Geometry) -> Vec<(u64, u64)> {
        let used = geo.free_map();
        geo.groups
            .iter()
            .map(|g| {
                let group_end = g.first_block + g.blocks;
                let table_end = g.inode_table + geo.inode_table_blocks;
                // With flex_bg a group's table may lie in another group: the region then
                // follows whatever mke2fs put at the start of this group.
                let after = if g.inode_table >= g.first_block && table_end <= group_end {
                    table_end
                } else {
                    g.first_block
                };
                let start = used.next_free(after, group_end).unwrap_or(group_end);
                let len = ((g.blocks as f64 * self.size) as u64).max(1);
                (start, (start + len).min(group_end))
            })
            .collect()
    }

    /// Mapping blocks of `plan` that lie outside the region of their data block's group
    /// (the ones the fallback placed).
    pub fn overflowed_mapping_blocks(&self, plan: &Plan, geo: &Geometry) -> u64 {
        let regions = self.regions(geo);
        super::mapping_blocks_outside(plan, geo, |g| regions[g as usize])
    }
}

/// Indirect blocks into the data block's group's region, else from the group's start;
/// directory blocks, when asked, into the region of their goal's group, else where ext3
/// puts them.
struct RegionPlacer {
    dirs: bool,
}

impl RegionPlacer {
    fn one(alloc: &mut Ext3Alloc, group: u64) -> Option<u64> {
        if let Some(b) = take_from_hole(alloc, group) {
            return Some(b);
        }
        let first = alloc.map.group_first(group);
        alloc.new_blocks(first, 1, None).map(|(b, _)| b)
    }
}

impl IndirectPlacer for RegionPlacer {
    fn inline(&self) -> bool {
        false
    }

    fn place(&mut self, alloc: &mut Ext3Alloc, data_block: u64, count: usize) -> Option<Vec<u64>> {
        let group = alloc.map.group_of(data_block);
        place_each(alloc, count, |alloc| Self::one(alloc, group))
    }

    fn dir_block(&mut self, alloc: &mut Ext3Alloc, goal: u64) -> Option<u64> {
        if self.dirs {
            // ext3_new_blocks() takes a goal past the end as the first data block
            let goal = if goal < alloc.map.blocks_count() {
                goal
            } else {
                alloc.map.first_data_block()
            };
            if let Some(b) = take_from_hole(alloc, alloc.map.group_of(goal)) {
                return Some(b);
            }
        }
        alloc.new_blocks(goal, 1, None).map(|(b, _)| b)
    }
}

crate::policy::one_pass_policy!(Rext3);

impl Rext3 {
    /// The ext3 planner with each group's region held back for mapping blocks.
    fn one_pass(&self, geo: &Geometry) -> Result<OnePass, LayoutError> {
        let placer = RegionPlacer {
            dirs: self.dirs_in_region,
        };
        Ok(OnePass::ext3(geo, self.regions(geo), placer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mkfs::MkfsProfile;

    #[test]
    fn regions_follow_the_inode_tables() {
        let profile = MkfsProfile::by_name("ext3-2007").unwrap();
        let geo = Geometry::new(&profile, 20_000_000_000).unwrap();
        let regions = Rext3::default().regions(&geo);
        let journal_end = geo
            .meta
            .iter()
            .filter(|m| m.kind == crate::geometry::MetaKind::Journal)
            .map(|m| m.start + m.blocks)
            .max()
            .unwrap();
        for (g, (&(s, e), grp)) in regions.iter().zip(&geo.groups).enumerate() {
            let table_end = grp.inode_table + geo.inode_table_blocks;
            if journal_end <= grp.first_block {
                // nothing of mke2fs's after the table: the region starts right there
                assert_eq!(s, table_end, "group {g}");
                assert_eq!(e - s, geo.blocks_per_group / 128, "group {g}");
            } else {
                // group 0 (and 1): after the root directory, lost+found and the journal
                assert!(
                    s >= journal_end.min(grp.first_block + grp.blocks),
                    "group {g}"
                );
            }
            for b in s..e {
                assert!(!geo.is_meta(b), "group {g}: region block {b} is mke2fs's");
            }
        }
    }

    #[test]
    fn params() {
        let mut params = PolicyParams::new();
        params.insert("size".into(), "1/64".into());
        assert_eq!(Rext3::from_params(&params).unwrap().size, 1.0 / 64.0);
        params.insert("size".into(), "0".into());
        assert!(Rext3::from_params(&params).is_err());
        params.insert("size".into(), "1/0".into());
        assert!(Rext3::from_params(&params).is_err());
        let mut params = PolicyParams::new();
        params.insert("position".into(), "1/2".into());
        let e = Rext3::from_params(&params).unwrap_err().to_string();
        assert!(e.contains("size") && e.contains("dirs"), "{e}");
        let mut params = PolicyParams::new();
        params.insert("dirs".into(), "region".into());
        assert!(Rext3::from_params(&params).unwrap().dirs_in_region);
        params.insert("dirs".into(), "inside".into());
        let e = Rext3::from_params(&params).unwrap_err().to_string();
        assert!(e.contains("outside, region"), "{e}");
    }
}
