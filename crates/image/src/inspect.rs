//! Reading any ext2/3/4 image (ours or a kernel's) back into the Plan model, through libext2fs.

use std::collections::{HashMap, VecDeque};

use std::path::Path;

use layoutlab_layout::alloc::FreeMap;
use layoutlab_layout::mapping::{kind_of, BlockMapGeometry};
use layoutlab_layout::metrics::{mark_used_where_free, LayoutMetrics};
use layoutlab_layout::{
    push_run, HardLink, InodeKind, MapBlock, MapFormat, MapKind, Plan, PlannedInode, Special,
};

use crate::error::ImageError;
use crate::ffi::Fs;

/// Superblock summary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuperSummary {
    /// Blocks in the file system.
    pub blocks_count: u64,
    /// Free blocks (superblock count).
    pub free_blocks: u64,
    /// Blocks reserved for root.
    pub reserved_blocks: u64,
    /// First data block (1 for 1 KiB blocks, else 0).
    pub first_data_block: u64,
    /// Block size in bytes.
    pub block_bytes: u32,
    /// Blocks per group.
    pub blocks_per_group: u32,
    /// Inodes per group.
    pub inodes_per_group: u32,
    /// Inodes in the file system.
    pub inodes_count: u32,
    /// Free inodes (superblock count).
    pub free_inodes: u32,
    /// Block groups.
    pub groups: u32,
    /// First non-reserved inode.
    pub first_ino: u32,
    /// On-disk inode size in bytes.
    pub inode_bytes: u32,
    /// Journal inode (0 without a journal).
    pub journal_ino: u32,
    /// Feature names as dumpe2fs spells them (known bits only; see the raw masks).
    pub features: Vec<String>,
    /// Raw compat / incompat / ro_compat masks.
    pub feature_masks: [u32; 3],
}

/// One block group as its descriptor records it (layout's `GroupSummary` is another thing:
/// a plan's blocks per group, by kind).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupDescriptor {
    /// Group number.
    pub group: u32,
    /// Its first block.
    pub first_block: u64,
    /// First block of its inode table.
    pub inode_table_block: u64,
    /// Free blocks (descriptor count).
    pub free_blocks: u64,
    /// Free inodes (descriptor count).
    pub free_inodes: u32,
    /// Directories.
    pub used_dirs: u32,
}

/// An extent-tree block (index or leaf node below the inode) of an extent-mapped file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtentBlock {
    /// Owner.
    pub ino: u32,
    /// First logical block it covers.
    pub logical: u64,
    /// Where it is.
    pub physical: u64,
    /// Tree level of the index entry pointing to it (0 = in the inode).
    pub level: u32,
}

/// An inode as read back: the plan model plus what stat/debugfs show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InspectedInode {
    /// The plan view (name and parent from the first link found walking from the root).
    pub planned: PlannedInode,
    /// i_mode.
    pub mode: u32,
    /// i_links_count.
    pub links: u32,
    /// i_blocks in file-system blocks (data + mapping blocks).
    pub blocks_fs: u64,
    /// Mapped by extents (its tree blocks are in [`Inspected::extent_blocks`]).
    pub extent_mapped: bool,
}

/// A reserved inode in use (journal, resize inode, ...), summarised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpecialInode {
    /// Inode number (< first_ino).
    pub ino: u32,
    /// i_size.
    pub size_bytes: u64,
    /// i_blocks in file-system blocks.
    pub blocks_fs: u64,
}

/// Everything `inspect` reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inspected {
    /// Superblock.
    pub superblock: SuperSummary,
    /// Per group.
    pub groups: Vec<GroupDescriptor>,
    /// The root, lost+found and every regular file, directory, symlink, device node, fifo
    /// and socket, by inode number.
    pub inodes: Vec<InspectedInode>,
    /// Names beyond each inode's first (hard links), in the order the walk from the root
    /// found them.
    pub links: Vec<HardLink>,
    /// Extent-tree blocks of extent-mapped inodes.
    pub extent_blocks: Vec<ExtentBlock>,
    /// Reserved inodes in use.
    pub special: Vec<SpecialInode>,
    /// Inodes in use whose mode is no file type ext knows.
    pub other_inodes: Vec<u32>,
    /// Used blocks as (first, len) runs, from the block bitmap (which starts at
    /// `s_first_data_block`).
    pub used_runs: Vec<(u64, u64)>,
}

/// How many of each kind of object an image (or plan) holds, counted from its inodes: inode
/// kinds and mapping blocks. Not a population's declared counts
/// (`layoutlab_workload::populations::tree::TreeCounts`, the generator's target, which has
/// large files and no mapping blocks), nor what e2fsck printed ([`crate::FsckVitals`]); the
/// inode kinds mean the same in all three (e2fsck's terms).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImageCounts {
    /// Regular files (inodes, not names).
    pub regular_files: u64,
    /// Directories, the root and lost+found included.
    pub directories: u64,
    /// Symlinks.
    pub symlinks: u64,
    /// Symlinks whose target is in the inode.
    pub fast_symlinks: u64,
    /// Names beyond each inode's first.
    pub hard_links: u64,
    /// Character devices.
    pub char_devices: u64,
    /// Block devices.
    pub block_devices: u64,
    /// Fifos.
    pub fifos: u64,
    /// Sockets.
    pub sockets: u64,
    /// Inodes mapped by extents.
    pub extent_mapped: u64,
    /// IND/DIND/TIND blocks.
    pub indirect_blocks: u64,
    /// Extent-tree (leaf and index) blocks.
    pub extent_tree_blocks: u64,
}

impl ImageCounts {
    /// The counts of a plan (what `inspect` of its image reports).
    pub fn of_plan(plan: &Plan) -> ImageCounts {
        let mut c = ImageCounts {
            hard_links: plan.links.len() as u64,
            ..Default::default()
        };
        for i in &plan.inodes {
            match i.kind {
                InodeKind::File => c.regular_files += 1,
                InodeKind::Dir => c.directories += 1,
                InodeKind::Symlink => {
                    c.symlinks += 1;
                    if i.data.is_empty() {
                        c.fast_symlinks += 1;
                    }
                }
                InodeKind::CharDev => c.char_devices += 1,
                InodeKind::BlockDev => c.block_devices += 1,
                InodeKind::Fifo => c.fifos += 1,
                InodeKind::Socket => c.sockets += 1,
            }
            if i.format == MapFormat::Extents {
                c.extent_mapped += 1;
            }
            for m in &i.mapping {
                match m.kind {
                    MapKind::Extent { .. } => c.extent_tree_blocks += 1,
                    _ => c.indirect_blocks += 1,
                }
            }
        }
        c
    }
}

impl Inspected {
    /// How many of each kind of object the image holds.
    pub fn counts(&self) -> ImageCounts {
        ImageCounts::of_plan(&self.plan(""))
    }

    /// The inodes as a Plan (policy name as given), in inode-number order.
    pub fn plan(&self, policy: &str) -> Plan {
        Plan {
            policy: policy.to_string(),
            inodes: self.inodes.iter().map(|i| i.planned.clone()).collect(),
            links: self.links.clone(),
        }
    }

    /// The image's free space as its block bitmap says (every used block marked).
    pub fn free_map(&self) -> FreeMap {
        let s = &self.superblock;
        let mut map = FreeMap::new(
            s.blocks_count,
            s.first_data_block,
            u64::from(s.blocks_per_group),
        );
        for &(start, len) in &self.used_runs {
            mark_used_where_free(&mut map, start, len);
        }
        map
    }

    /// The layout metrics of the image: its files, directories and mapping blocks as read,
    /// its free space from the block bitmap (what e2freefrag reads).
    pub fn metrics(&self) -> LayoutMetrics {
        LayoutMetrics::with_free_map(
            &self.plan("inspected"),
            &self.free_map(),
            self.superblock.block_bytes,
        )
    }

    /// The inspected inode `ino`.
    pub fn inode(&self, ino: u32) -> Option<&InspectedInode> {
        self.inodes
            .binary_search_by_key(&ino, |i| i.planned.ino)
            .ok()
            .map(|i| &self.inodes[i])
    }
}

const S_IFMT: u32 = 0xF000;
const S_IFDIR: u32 = 0x4000;
const S_IFREG: u32 = 0x8000;
const S_IFLNK: u32 = 0xA000;
const S_IFCHR: u32 = 0x2000;
const S_IFBLK: u32 = 0x6000;
const S_IFIFO: u32 = 0x1000;
const S_IFSOCK: u32 = 0xC000;

/// A device number from `i_block[0]` (old 8:8 form) or `i_block[1]` (new form), as
/// e2fsprogs' debugfs reads them.
fn decode_rdev(block0: u32, block1: u32) -> (u32, u32) {
    if block0 != 0 {
        ((block0 >> 8) & 0xff, block0 & 0xff)
    } else {
        (
            (block1 & 0xfff00) >> 8,
            (block1 & 0xff) | ((block1 >> 12) & 0xfff00),
        )
    }
}
const EXTENTS_FL: u32 = 0x0008_0000;
const INLINE_DATA_FL: u32 = 0x1000_0000;

fn feature_names(compat: u32, incompat: u32, ro: u32) -> Vec<String> {
    // bit names as in lib/e2p/feature.c
    const COMPAT: &[(u32, &str)] = &[
        (0x1, "dir_prealloc"),
        (0x2, "imagic_inodes"),
        (0x4, "has_journal"),
        (0x8, "ext_attr"),
        (0x10, "resize_inode"),
        (0x20, "dir_index"),
        (0x200, "sparse_super2"),
        (0x400, "fast_commit"),
        (0x1000, "orphan_file"),
    ];
    const INCOMPAT: &[(u32, &str)] = &[
        (0x1, "compression"),
        (0x2, "filetype"),
        (0x4, "needs_recovery"),
        (0x8, "journal_dev"),
        (0x10, "meta_bg"),
        (0x40, "extent"),
        (0x80, "64bit"),
        (0x100, "mmp"),
        (0x200, "flex_bg"),
        (0x400, "ea_inode"),
        (0x1000, "dirdata"),
        (0x2000, "metadata_csum_seed"),
        (0x4000, "large_dir"),
        (0x8000, "inline_data"),
        (0x10000, "encrypt"),
        (0x20000, "casefold"),
    ];
    const RO: &[(u32, &str)] = &[
        (0x1, "sparse_super"),
        (0x2, "large_file"),
        (0x8, "huge_file"),
        (0x10, "uninit_bg"),
        (0x20, "dir_nlink"),
        (0x40, "extra_isize"),
        (0x100, "quota"),
        (0x200, "bigalloc"),
        (0x400, "metadata_csum"),
        (0x1000, "read-only"),
        (0x2000, "project"),
        (0x8000, "verity"),
        (0x10000, "orphan_present"),
    ];
    let mut v = Vec::new();
    for (mask, table) in [(compat, COMPAT), (incompat, INCOMPAT), (ro, RO)] {
        for &(bit, name) in table {
            if mask & bit != 0 {
                v.push(name.to_string());
            }
        }
    }
    v
}

/// Reads the image at `image` (read-only) into the plan model.
pub fn inspect(image: &Path) -> Result<Inspected, ImageError> {
    let fs = Fs::open(image, false)?;
    let sb = fs.super_info();
    let geo = BlockMapGeometry::new(sb.block_size as u64);
    let superblock = SuperSummary {
        blocks_count: sb.blocks_count,
        free_blocks: sb.free_blocks,
        reserved_blocks: sb.reserved_blocks,
        first_data_block: sb.first_data_block,
        block_bytes: sb.block_size,
        blocks_per_group: sb.blocks_per_group,
        inodes_per_group: sb.inodes_per_group,
        inodes_count: sb.inodes_count,
        free_inodes: sb.free_inodes,
        groups: sb.group_count,
        first_ino: sb.first_ino,
        inode_bytes: sb.inode_size,
        journal_ino: sb.journal_inum,
        features: feature_names(sb.feature_compat, sb.feature_incompat, sb.feature_ro_compat),
        feature_masks: [sb.feature_compat, sb.feature_incompat, sb.feature_ro_compat],
    };
    let groups = (0..sb.group_count)
        .map(|g| {
            let (free_blocks, free_inodes, used_dirs, first_block, inode_table_block) =
                fs.group_info(g);
            GroupDescriptor {
                group: g,
                first_block,
                inode_table_block,
                free_blocks,
                free_inodes,
                used_dirs,
            }
        })
        .collect();

    let mut inodes = Vec::new();
    let mut extent_blocks = Vec::new();
    let mut special = Vec::new();
    let mut other_inodes = Vec::new();
    for ino in 1..=sb.inodes_count {
        if !fs.inode_in_use(ino) {
            continue;
        }
        let info = fs.read_inode(ino)?;
        if ino < sb.first_ino && ino != 2 {
            special.push(SpecialInode {
                ino,
                size_bytes: info.size_bytes,
                blocks_fs: info.blocks_fs,
            });
            continue;
        }
        let kind = match info.mode & S_IFMT {
            S_IFDIR => InodeKind::Dir,
            S_IFREG => InodeKind::File,
            S_IFLNK => InodeKind::Symlink,
            S_IFCHR => InodeKind::CharDev,
            S_IFBLK => InodeKind::BlockDev,
            S_IFIFO => InodeKind::Fifo,
            S_IFSOCK => InodeKind::Socket,
            _ => {
                other_inodes.push(ino);
                continue;
            }
        };
        let special = match kind {
            InodeKind::Symlink => Special::Symlink {
                target: fs.read_symlink(ino)?,
            },
            InodeKind::CharDev | InodeKind::BlockDev => {
                let (major, minor) = decode_rdev(info.block0, info.block1);
                Special::Device { major, minor }
            }
            _ => Special::None,
        };
        // a fast symlink's i_block holds its target, a device's its number: no map to walk
        let has_map = match kind {
            InodeKind::File | InodeKind::Dir => true,
            InodeKind::Symlink => info.blocks_fs > 0,
            _ => false,
        };
        let mut data = Vec::new();
        let mut mapping = Vec::new();
        let extent_mapped = info.flags & EXTENTS_FL != 0;
        if info.flags & INLINE_DATA_FL != 0 || !has_map {
            // data lives in the inode: no blocks
        } else if extent_mapped {
            fs.walk_extents(ino, &mut |tree, logical, physical, len, level, depth| {
                if tree {
                    extent_blocks.push(ExtentBlock {
                        ino,
                        logical,
                        physical,
                        level: level as u32,
                    });
                    // the entry at `level` points at a block `depth - level - 1` above the
                    // leaves
                    mapping.push(MapBlock {
                        kind: MapKind::Extent {
                            height: (depth - level - 1).max(0) as u8,
                        },
                        logical,
                        physical,
                    });
                } else {
                    push_run(&mut data, logical, physical, len);
                }
            })?;
        } else {
            // logical position of the next slot, counted as the iterator walks
            let mut cursor = 0u64;
            fs.walk_blocks(ino, &mut |cnt, physical, _, _| {
                if cnt >= 0 {
                    cursor = cnt as u64 + 1;
                    if physical != 0 {
                        push_run(&mut data, cnt as u64, physical, 1);
                    }
                    return;
                }
                let level = (-cnt) as u8;
                if physical == 0 {
                    // the iterator skips the whole subtree
                    cursor += geo.span(level);
                    return;
                }
                mapping.push(MapBlock {
                    kind: kind_of(level),
                    logical: cursor,
                    physical,
                });
            })?;
        }
        inodes.push(InspectedInode {
            planned: PlannedInode {
                ino,
                kind,
                parent: 0,
                name: String::new(),
                size_bytes: info.size_bytes,
                data,
                mapping,
                format: if extent_mapped {
                    MapFormat::Extents
                } else {
                    MapFormat::Blocks
                },
                special,
            },
            mode: info.mode,
            links: info.links,
            blocks_fs: info.blocks_fs,
            extent_mapped,
        });
    }

    // names and parents: breadth first from the root, first link wins
    let index: HashMap<u32, usize> = inodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.planned.ino, i))
        .collect();
    let mut named = vec![false; inodes.len()];
    let mut links = Vec::new();
    let mut queue = VecDeque::new();
    if let Some(&r) = index.get(&2) {
        inodes[r].planned.parent = 2;
        named[r] = true;
        queue.push_back(2u32);
    }
    while let Some(dir) = queue.pop_front() {
        for (name, child) in fs.walk_dir(dir)? {
            if name == b"." || name == b".." {
                continue;
            }
            let Some(&i) = index.get(&child) else {
                continue;
            };
            if named[i] {
                if inodes[i].planned.kind != InodeKind::Dir {
                    links.push(HardLink {
                        parent: dir,
                        name: String::from_utf8_lossy(&name).into_owned(),
                        ino: child,
                    });
                }
                continue;
            }
            named[i] = true;
            inodes[i].planned.parent = dir;
            inodes[i].planned.name = String::from_utf8_lossy(&name).into_owned();
            if inodes[i].planned.kind == InodeKind::Dir {
                queue.push_back(child);
            }
        }
    }
    // the bitmap starts at s_first_data_block (block 0 of a 1 KiB file system is in no
    // group; asking libext2fs about it prints "Illegal block number")
    let used_runs = fs.used_runs(sb.first_data_block, sb.blocks_count - sb.first_data_block);
    Ok(Inspected {
        superblock,
        groups,
        inodes,
        links,
        extent_blocks,
        special,
        other_inodes,
        used_runs,
    })
}

/// `plan` as `inspect` reports it, for comparing plans: inodes in inode-number order, runs
/// that continue each other in both logical and physical space merged, mapping blocks in tree
/// order (by first logical block, the upper level first).
pub fn normalize_plan(plan: &Plan) -> Plan {
    let mut out = plan.clone();
    out.inodes.sort_by_key(|i| i.ino);
    for inode in &mut out.inodes {
        let mut runs = Vec::with_capacity(inode.data.len());
        for r in &inode.data {
            push_run(&mut runs, r.logical, r.physical, r.len);
        }
        inode.data = runs;
        inode
            .mapping
            .sort_by_key(|m| (m.logical, std::cmp::Reverse(m.kind)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use layoutlab_layout::Run;

    #[test]
    fn normalize_merges_runs_and_orders_mapping() {
        let plan = Plan {
            policy: "t".into(),
            inodes: vec![PlannedInode {
                ino: 12,
                kind: InodeKind::File,
                parent: 2,
                name: "f".into(),
                size_bytes: 2000 * 4096,
                data: vec![
                    Run {
                        logical: 0,
                        physical: 100,
                        len: 5,
                    },
                    Run {
                        logical: 5,
                        physical: 105,
                        len: 1031,
                    },
                    Run {
                        logical: 1036,
                        physical: 2000,
                        len: 964,
                    },
                ],
                mapping: vec![
                    MapBlock {
                        kind: MapKind::Ind,
                        logical: 12,
                        physical: 99,
                    },
                    MapBlock {
                        kind: MapKind::Ind,
                        logical: 1036,
                        physical: 1999,
                    },
                    MapBlock {
                        kind: MapKind::Dind,
                        logical: 1036,
                        physical: 1998,
                    },
                ],
                ..Default::default()
            }],
            ..Default::default()
        };
        let n = normalize_plan(&plan);
        assert_eq!(n.inodes[0].data.len(), 2);
        assert_eq!(n.inodes[0].data[0].len, 1036);
        let kinds: Vec<MapKind> = n.inodes[0].mapping.iter().map(|m| m.kind).collect();
        assert_eq!(kinds, vec![MapKind::Ind, MapKind::Dind, MapKind::Ind]);
    }
}
