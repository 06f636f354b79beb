//! `ext4-meta-ssd`: ext4 of 2010 with its metadata in a leading region of the address space,
//! meant for a device whose first part is an SSD and the rest a disk (Coly Li's question at
//! CLSF 2010: allocate metadata from a device with faster seeks so that fsck hardly seeks;
//! issue 29). The region holds:
//! - the superblock, group descriptors, every group's bitmaps and inode table, the root
//!   directory, lost+found and the journal: placed by mke2fs, which packs them at the start
//!   when the file system is made with the `ext4-meta-ssd` mkfs profile (one flex group for
//!   all groups, `-J location=0`); the policy refuses a geometry whose tables or journal end
//!   past the region;
//! - directory, extent-tree and slow-symlink blocks: the first free block of the region at
//!   or after the block's goal, or from the region's start when the goal lies outside it
//!   ([`crate::alloc::mballoc::Mballoc::split_metadata`]).
//!
//! File data enters the region only when the data area cannot hold a file (the file then
//! goes there whole; [`MetadataFootprint::data_in_region_blocks`] counts it). Everything else — inode placement (Orlov on flex
//! groups of 16, as mke2fs's default `-G 16`), goals and mballoc — is [`super::ext4_2009`]'s,
//! so the two policies differ only in where metadata goes.
//!
//! When the region is full, a metadata block falls back to its goal in the data area, where
//! ext4-2009 would have put it (next to its directory's last block or its file's data):
//! [`Ext4MetaSsd::overflowed_metadata_blocks`] counts them, and plans report them.
//!
//! Parameter: `region` (fraction of the file system's blocks, from its first data block;
//! default: the tables and journal plus 1/32 of the file system, [`DEFAULT_HEADROOM`]).

use crate::alloc::ext4_fs::Ext4SpaceRules;
use crate::alloc::ext4_ialloc::OrlovFlex;
use crate::geometry::{Geometry, MetaKind};
use crate::plan::{InodeKind, Plan};
use crate::policy::{check_known, parse_region_fraction, PolicyEntry, PolicyParams, OnePass};
use crate::LayoutError;

/// Its entry in the policy registry.
pub const ENTRY: PolicyEntry = PolicyEntry {
    name: "ext4-meta-ssd",
    default_mkfs_profile: "ext4-meta-ssd",
    build: |params| Ok(Box::new(Ext4MetaSsd::from_params(params)?)),
    overflowed_mapping_blocks: None,
    metadata_region_end: Some(|params, geo| Ok(Ext4MetaSsd::from_params(params)?.region_end_block(geo))),
};

const NAME: &str = ENTRY.name;

/// Groups per flex group the allocator assumes: e2fsprogs 1.41's default `-G 16`
/// (profiles/mkfs/ext4-2009.toml), whatever the packing of the tables.
pub const ALLOCATOR_FLEX_GROUPS: u64 = 16;

/// The metadata-region policy.
#[derive(Clone, Debug, Default)]
pub struct Ext4MetaSsd {
    /// Size of the region as a fraction of the file system's blocks; None: the default,
    /// the static metadata plus [`DEFAULT_HEADROOM`] of the file system.
    pub region: Option<f64>,
}

/// Room the default region leaves past the tables and journal for directories, extent trees
/// and slow symlinks, as a fraction of the file system: 1/32, twice the ext4-2009 profile's
/// inode tables (256-byte inodes, one per 16 KiB: 1/64). The plan says what the metadata
/// actually needed.
pub const DEFAULT_HEADROOM: f64 = 1.0 / 32.0;

/// Where a file system's metadata lies on a device split at `region_end_block`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MetadataFootprint {
    /// First block past the region.
    pub region_end_block: u64,
    /// First block past the metadata mke2fs placed in the region (tables, journal, root,
    /// lost+found; with ext3 only the region's own groups' tables, the rest stay in their
    /// groups).
    pub static_end_block: u64,
    /// First block past the last metadata block inside the region: the SSD capacity the
    /// metadata needs, in blocks from the start.
    pub used_end_block: u64,
    /// Metadata blocks (directory, extent-tree, slow-symlink) the plan placed in the region.
    pub in_region_blocks: u64,
    /// Metadata blocks the plan placed past the region (the overflow).
    pub overflow_blocks: u64,
    /// File data blocks in the region (files a full data area could not hold).
    pub data_in_region_blocks: u64,
}

impl Ext4MetaSsd {
    /// Reads `region`.
    pub fn from_params(params: &PolicyParams) -> Result<Ext4MetaSsd, LayoutError> {
        check_known(NAME, params, &["region"])?;
        let mut p = Ext4MetaSsd::default();
        if let Some(v) = params.get("region") {
            p.region = Some(parse_region_fraction(NAME, "region", v)?);
        }
        Ok(p)
    }

    /// First block past the region on `geo`.
    pub fn region_end_block(&self, geo: &Geometry) -> u64 {
        let end = match self.region {
            Some(f) => geo.first_data_block + (geo.blocks_count as f64 * f).ceil() as u64,
            None => {
                static_metadata_end(geo)
                    + (geo.blocks_count as f64 * DEFAULT_HEADROOM).ceil() as u64
            }
        };
        end.min(geo.blocks_count)
    }

    /// Where the plan's metadata lies relative to the region.
    pub fn footprint(&self, plan: &Plan, geo: &Geometry) -> MetadataFootprint {
        footprint(plan, geo, self.region_end_block(geo))
    }

    /// Metadata blocks of `plan` that lie past the region (where a full region sent them).
    pub fn overflowed_metadata_blocks(&self, plan: &Plan, geo: &Geometry) -> u64 {
        self.footprint(plan, geo).overflow_blocks
    }
}

/// Where `plan`'s metadata lies relative to a region ending at block `region_end_block`.
pub fn footprint(plan: &Plan, geo: &Geometry, region_end_block: u64) -> MetadataFootprint {
    // mke2fs's metadata the region holds (with ext3, only its own groups' tables)
    let static_end_block = geo
        .meta
        .iter()
        .filter(|m| m.start < region_end_block && is_checked_metadata(geo, m))
        .map(|m| (m.start + m.blocks).min(region_end_block))
        .max()
        .unwrap_or(geo.first_data_block);
    let mut used_end_block = static_end_block;
    let (mut in_region_blocks, mut overflow_blocks) = (0, 0);
    for b in metadata_blocks(plan) {
        if b < region_end_block {
            in_region_blocks += 1;
            used_end_block = used_end_block.max(b + 1);
        } else {
            overflow_blocks += 1;
        }
    }
    let data_in_region_blocks = plan
        .inodes
        .iter()
        .filter(|i| !matches!(i.kind, InodeKind::Dir | InodeKind::Symlink))
        .flat_map(|i| i.data.iter())
        .map(|r| (r.physical + r.len).min(region_end_block) - r.physical.min(region_end_block))
        .sum();
    MetadataFootprint {
        region_end_block,
        static_end_block,
        used_end_block,
        in_region_blocks,
        overflow_blocks,
        data_in_region_blocks,
    }
}

/// Blocks the plan allocated as metadata: directory blocks, extent-tree (or indirect)
/// blocks and slow symlinks' blocks.
pub fn metadata_blocks(plan: &Plan) -> impl Iterator<Item = u64> + '_ {
    plan.inodes.iter().flat_map(|inode| {
        let data = matches!(inode.kind, InodeKind::Dir | InodeKind::Symlink)
            .then_some(inode.data.iter())
            .into_iter()
            .flatten()
            .flat_map(|r| r.physical..r.physical + r.len);
        data.chain(inode.mapping.iter().map(|m| m.physical))
    })
}

/// First block past the metadata mke2fs placed that a check reads: group 0's superblock and
/// descriptors, every group's bitmaps and inode table, the root directory, lost+found, the
/// resize inode's block and the journal (backup superblocks and descriptors stay in their
/// groups: e2fsck reads them only when the primary is bad).
pub fn static_metadata_end(geo: &Geometry) -> u64 {
    geo.meta
        .iter()
        .filter(|m| is_checked_metadata(geo, m))
        .map(|m| m.start + m.blocks)
        .max()
        .unwrap_or(geo.first_data_block)
}

/// Whether mke2fs's extent `m` is read by a check: everything but backup superblocks and
/// descriptors.
fn is_checked_metadata(geo: &Geometry, m: &crate::geometry::MetaExtent) -> bool {
    match m.kind {
        MetaKind::Superblock | MetaKind::Gdt | MetaKind::ReservedGdt => geo.group_of(m.start) == 0,
        _ => true,
    }
}

crate::policy::one_pass_policy!(Ext4MetaSsd);

impl Ext4MetaSsd {
    /// The ext4 planner with ext4-2009's rules and metadata in the leading region; a region
    /// that does not hold mke2fs's tables, or tables not packed at the start, refused.
    fn one_pass(&self, geo: &Geometry) -> Result<OnePass, LayoutError> {
        let region_end = self.region_end_block(geo);
        let static_end = static_metadata_end(geo);
        if static_end > region_end {
            let needed = (static_end - geo.first_data_block) as f64 / geo.blocks_count as f64;
            return Err(LayoutError::BadParam {
                policy: NAME.into(),
                param: "region".into(),
                reason: format!(
                    "the region (blocks {}..{region_end}) is too small: the {} file system's \
                     bitmaps, inode tables and journal end at block {static_end}, so the \
                     region must be at least {needed:.4} of it (raise region={}){}",
                    geo.first_data_block,
                    geo.profile,
                    (needed * 1e4).ceil() / 1e4,
                    if geo.profile == "ext4-meta-ssd" {
                        ""
                    } else {
                        "; or format with the ext4-meta-ssd mkfs profile, which packs them at \
                         the start"
                    }
                ),
            });
        }
        let free = geo.free_map();
        let gaps = (geo.first_data_block..static_end)
            .filter(|&b| !free.is_used(b))
            .count();
        if gaps > 0 {
            return Err(LayoutError::Unsupported(format!(
                "{NAME} needs the tables and journal packed at the start of the file system; the \
                 {} file system leaves {gaps} free blocks among them (they end at block \
                 {static_end} of {}): format with the ext4-meta-ssd mkfs profile",
                geo.profile, geo.blocks_count
            )));
        }
        let chooser = OrlovFlex {
            flex_size: ALLOCATOR_FLEX_GROUPS,
            whole_flex_max_dirs: false,
        };
        let space = Ext4SpaceRules {
            flex_size: ALLOCATOR_FLEX_GROUPS,
            meta_region_end: Some(region_end),
        };
        Ok(OnePass::Ext4 {
            chooser: Box::new(chooser),
            rules: crate::policy::ext4_2009::RULES,
            space,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;
    use crate::mkfs::MkfsProfile;

    fn geo(profile: &str, bytes: u64) -> Geometry {
        Geometry::new(&MkfsProfile::by_name(profile).unwrap(), bytes).unwrap()
    }

    #[test]
    fn the_profile_packs_tables_and_journal_at_the_start() {
        let g = geo("ext4-meta-ssd", 20 << 30);
        let end = static_metadata_end(&g);
        // 160 groups × (2 bitmap blocks + 512 inode-table blocks) and the 128 MiB journal, with
        // no free block among them (backup superblocks of groups 1 and 3 sit in between)
        assert!(end >= g.group_count() * (2 + g.inode_table_blocks) + g.journal_total_blocks);
        let free = g.free_map();
        let free_below = (g.first_data_block..end)
            .filter(|&b| !free.is_used(b))
            .count();
        assert_eq!(free_below, 0, "free blocks among the packed metadata");
        // ext4-2009 spreads them over the disk (the journal in the middle)
        assert!(static_metadata_end(&geo("ext4-2009", 20 << 30)) > g.blocks_count / 2);
    }

    #[test]
    fn a_region_smaller_than_the_tables_is_refused_with_the_size_needed() {
        let g = geo("ext4-meta-ssd", 20 << 30);
        let pop = layoutlab_workload::population_by_name("bench5")
            .unwrap()
            .scale(0.05)
            .unwrap();
        let mut params = PolicyParams::new();
        params.insert("region".into(), "1/256".into());
        let e = Ext4MetaSsd::from_params(&params)
            .unwrap()
            .plan(&g, &pop, 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("too small") && e.contains("at least 0.0"), "{e}");
        // on ext4-2009's geometry no region short of the whole disk holds the tables
        let e = Ext4MetaSsd::default()
            .plan(&geo("ext4-2009", 20 << 30), &pop, 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("ext4-meta-ssd mkfs profile"), "{e}");
    }

    #[test]
    fn params() {
        let mut params = PolicyParams::new();
        params.insert("region".into(), "0".into());
        assert!(Ext4MetaSsd::from_params(&params).is_err());
        params.insert("region".into(), "1/8".into());
        assert_eq!(
            Ext4MetaSsd::from_params(&params).unwrap().region,
            Some(1.0 / 8.0)
        );
        params.insert("size".into(), "1".into());
        assert!(Ext4MetaSsd::from_params(&params).is_err());
    }
}
