//! `ext3-meta-ssd`: ext3 of 2007 with its indirect and directory blocks in a leading region of
//! the address space, meant for a device whose first part is an SSD (issue 29, the ext3 side of
//! [`super::ext4_meta_ssd`]). ext3 has no flex_bg: every group's bitmaps and inode table stay
//! in their group, spread over the whole disk, so a check still seeks to each of them; only
//! the blocks the allocator places can move. The region holds:
//! - whatever mke2fs put there (group 0's superblock, descriptors, tables, root directory,
//!   lost+found and, with the ext3-2007 profile, the journal right after them; the region's
//!   other groups' own bitmaps and tables);
//! - every indirect block (IND, DIND, TIND): the first free block of the region, in
//!   allocation order;
//! - every directory block: the first free block of the region.
//!
//! File data never enters the region (an [`Ext3Alloc`] hole in each group it covers: its
//! free blocks stay free in the bitmap and the group counts, so inode placement is
//! ext3-2007's). When the region is full, an indirect block falls back to the old allocation
//! from its data block's group start and a directory block to ext3's own goal, as
//! [`super::ext3_metacluster`] does; [`Ext3MetaSsd::overflowed_metadata_blocks`] counts them.
//! Everything else is [`super::ext3_2007`]'s allocator, through the shared [`plan_ext3`].
//!
//! Parameter: `region` (fraction of the file system's blocks, from its first data block;
//! default 1/32).

use crate::alloc::ext3_alloc::Ext3Alloc;
use crate::alloc::writer::IndirectPlacer;
use crate::geometry::Geometry;
use crate::plan::Plan;
use crate::policy::ext4_meta_ssd::{footprint, MetadataFootprint};
use crate::policy::{check_known, parse_region_fraction, PolicyEntry, PolicyParams, OnePass};
use crate::LayoutError;

/// Its entry in the policy registry.
pub const ENTRY: PolicyEntry = PolicyEntry {
    name: "ext3-meta-ssd",
    default_mkfs_profile: "ext3-2007",
    build: |params| Ok(Box::new(Ext3MetaSsd::from_params(params)?)),
    overflowed_mapping_blocks: None,
    metadata_region_end: Some(|params, geo| Ok(Ext3MetaSsd::from_params(params)?.region_end_block(geo))),
};

const NAME: &str = ENTRY.name;

/// The ext3 metadata-region policy.
#[derive(Clone, Debug)]
pub struct Ext3MetaSsd {
    /// Size of the region as a fraction of the file system's blocks.
    pub region: f64,
}

impl Default for Ext3MetaSsd {
    /// 1/32: indirect blocks take 1/1024 of the data they map (one 4-byte pointer per 4 KiB
    /// block) and directories of large files little; the rest is headroom, and the region's
    /// groups keep their own tables (1/128 of a group with 128-byte inodes, one per 16 KiB).
    fn default() -> Self {
        Ext3MetaSsd { region: 1.0 / 32.0 }
    }
}

impl Ext3MetaSsd {
    /// Reads `region`.
    pub fn from_params(params: &PolicyParams) -> Result<Ext3MetaSsd, LayoutError> {
        check_known(NAME, params, &["region"])?;
        let mut p = Ext3MetaSsd::default();
        if let Some(v) = params.get("region") {
            p.region = parse_region_fraction(NAME, "region", v)?;
        }
        Ok(p)
    }

    /// First block past the region on `geo`.
    pub fn region_end_block(&self, geo: &Geometry) -> u64 {
        let len = (geo.blocks_count as f64 * self.region).ceil() as u64;
        (geo.first_data_block + len).min(geo.blocks_count)
    }

    /// Where the plan's metadata lies relative to the region (its `static_end_block` is the
    /// end of mke2fs's metadata inside the region: the region's own groups' tables).
    pub fn footprint(&self, plan: &Plan, geo: &Geometry) -> MetadataFootprint {
        footprint(plan, geo, self.region_end_block(geo))
    }

    /// Indirect and directory blocks of `plan` past the region (where a full region sent them).
    pub fn overflowed_metadata_blocks(&self, plan: &Plan, geo: &Geometry) -> u64 {
        self.footprint(plan, geo).overflow_blocks
    }
}

/// Indirect and directory blocks: first free block of the region from a cursor (allocation
/// order), else ext3's fallback.
struct LeadingRegionPlacer {
    first: u64,
    end: u64,
    /// No free block of the region lies before it.
    cursor: u64,
}

impl LeadingRegionPlacer {
    fn in_region(&mut self, alloc: &mut Ext3Alloc) -> Option<u64> {
        let b = alloc.map.next_free(self.cursor, self.end)?;
        alloc.map.mark_used(b, 1);
        self.cursor = b + 1;
        Some(b)
    }
}

impl IndirectPlacer for LeadingRegionPlacer {
    fn inline(&self) -> bool {
        false
    }

    fn place(&mut self, alloc: &mut Ext3Alloc, data_block: u64, count: usize) -> Option<Vec<u64>> {
        let group_start = alloc.map.group_first(alloc.map.group_of(data_block));
        let mut out: Vec<u64> = Vec::with_capacity(count);
        for _ in 0..count {
            // the old allocation from the data block's group start when the region is full
            let b = self
                .in_region(alloc)
                .or_else(|| alloc.new_blocks(group_start, 1, None).map(|(b, _)| b));
            match b {
                Some(b) => out.push(b),
                None => {
                    for b in out {
                        self.free(alloc, b);
                    }
                    return None;
                }
            }
        }
        Some(out)
    }

    fn dir_block(&mut self, alloc: &mut Ext3Alloc, goal: u64) -> Option<u64> {
        self.in_region(alloc)
            .or_else(|| alloc.new_blocks(goal, 1, None).map(|(b, _)| b))
    }
}

impl LeadingRegionPlacer {
    /// Gives `b` back (an ENOSPC unwinding), keeping the cursor before every free region block.
    fn free(&mut self, alloc: &mut Ext3Alloc, b: u64) {
        alloc.map.mark_free(b, 1);
        if (self.first..self.end).contains(&b) {
            self.cursor = self.cursor.min(b);
        }
    }
}

crate::policy::one_pass_policy!(Ext3MetaSsd);

impl Ext3MetaSsd {
    /// The ext3 planner with the leading region held back for metadata; a flex_bg file
    /// system refused.
    fn one_pass(&self, geo: &Geometry) -> Result<OnePass, LayoutError> {
        if geo.has_feature("flex_bg") {
            return Err(LayoutError::Unsupported(format!(
                "{NAME} is ext3's allocator: format with an ext3 mkfs profile (ext3-2007), not {}; \
                 ext4-meta-ssd is the flex_bg one",
                geo.profile
            )));
        }
        let end = self.region_end_block(geo);
        // the groups the region covers (wholly, or the last in part)
        let holes = geo
            .groups
            .iter()
            .take_while(|g| g.first_block < end)
            .map(|g| (g.first_block, end.min(g.first_block + g.blocks)));
        let placer = LeadingRegionPlacer {
            first: geo.first_data_block,
            end,
            cursor: geo.first_data_block,
        };
        Ok(OnePass::ext3(geo, holes, placer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;

    #[test]
    fn params() {
        let mut params = PolicyParams::new();
        params.insert("region".into(), "0".into());
        assert!(Ext3MetaSsd::from_params(&params).is_err());
        params.insert("region".into(), "1/8".into());
        assert_eq!(Ext3MetaSsd::from_params(&params).unwrap().region, 1.0 / 8.0);
        params.insert("dirs".into(), "region".into());
        assert!(Ext3MetaSsd::from_params(&params).is_err());
    }

    #[test]
    fn a_flex_bg_file_system_is_refused() {
        let geo = Geometry::new(
            &crate::mkfs::MkfsProfile::by_name("ext4-2009").unwrap(),
            4 << 30,
        )
        .unwrap();
        let pop = layoutlab_workload::population_by_name("bench5")
            .unwrap()
            .scale(0.01)
            .unwrap();
        let e = Ext3MetaSsd::default()
            .plan(&geo, &pop, 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("ext3-2007"), "{e}");
    }
}
