//! `ext4-2007`: how today's kernel (Linux 6.18 here) allocates on the `ext4-2007` kernel
//! profile's file system (extents, no flex_bg, 128-byte inodes, mounted `nodelalloc`), for the
//! writes large-delete makes: regular files in the root directory, each written from its
//! start in order by one writer (`dd`'s 1 MiB writes), several files' writes taking turns
//! (appends to open files). Anything else is refused: directories, links, truncates, unlinks
//! and files written anywhere but at their end are outside this model.
//!
//! Read from fs/ext4 of Linux 6.x (mballoc.c, extents.c, inode.c), with the kernel's own
//! allocation requests (tracepoints `ext4:ext4_request_blocks` / `ext4_allocate_blocks`) and
//! FIEMAP as the evidence where the reading alone did not settle it:
//! - without delayed allocation every page written asks mballoc for its one block at
//!   write(2) (`ext4_get_block()` → `ext4_ext_map_blocks()`, a request of length 1);
//! - a block inside the file's preallocation (`ext4_mb_use_preallocated()`) is the next
//!   block of that preallocation;
//! - otherwise mballoc.c `ext4_mb_group_or_file()`: a file whose end after the request is at
//!   most `s_mb_stream_request` (16) blocks takes the CPU's locality-group preallocation
//!   ([`Ext4_2007::LG_PREALLOC_BLOCKS`] blocks, `s_mb_group_prealloc`); a larger one a window
//!   of its own (`ext4_mb_normalize_request()`): the file's end rounded up to 16, 32, 64, 128,
//!   256, 512 KiB or 1 MiB from logical block 0, then 2 MiB windows aligned to 2 MiB while the
//!   end is at most 4 MiB, 4 MiB ones up to 8 MiB, then 8 MiB ones (2048 blocks) aligned to
//!   8 MiB, each trimmed to start after the file's last mapped block;
//! - a window whose first block follows the file's last one aims right after that block's
//!   physical block (`EXT4_MB_HINT_TRY_GOAL`, "merge to the left"), and goes there when the
//!   whole window is free in that group (`ext4_mb_find_by_goal()`); else, its length being a
//!   power of two, at the group's first free buddy of that order or larger
//!   (`CR_POWER2_ALIGNED`, `ext4_mb_simple_scan_group()`), groups scanned from the goal's on;
//! - the window is the file's preallocation; the request takes its first block;
//! - extent-tree blocks (metadata requests: no preallocation, no normalisation, no goal
//!   try): the first leaf, made when a fifth extent no longer fits in the inode
//!   (`ext4_ext_grow_indepth()`), aims at the inode's goal (`ext4_inode_to_goal_block()`: its
//!   group), later tree blocks next to the data (`ext4_ext_find_goal()`); a one-block request
//!   takes the first free block of the goal's group (`CR_GOAL_LEN_FAST`,
//!   `ext4_mb_complex_scan_group()` from the group's start), where blocks held by a
//!   preallocation count as used.
//!
//! The proof: crates/experiments/tests/ext4_2007_engine.rs (root) writes large-delete's two
//! file shapes through the kernel and compares its FIEMAP with this plan, block for block;
//! docs/policies.md ("ext4-2007 vs the kernel") gives the figures.

use crate::alloc::dir_growth::DirGrowth;
use crate::alloc::ext3_fs::ROOT_INO;
use crate::alloc::ialloc::InodeMap;
use crate::alloc::FreeMap;
use crate::geometry::Geometry;
use crate::mapping::{required_mapping, MapFormat};
use crate::plan::{push_run, InodeKind, MapBlock, Plan, PlannedInode};
use crate::policy::{check_known, Policy, PolicyEntry, PolicyParams};
use crate::LayoutError;
use layoutlab_workload::{NsOp, Population};

/// This policy's entry in the registry of scoped policies ([`super::SCOPED_POLICIES`]).
pub const ENTRY: PolicyEntry = PolicyEntry {
    name: "ext4-2007",
    default_mkfs_profile: "ext4-2007",
    build: |params| Ok(Box::new(Ext4_2007::from_params(params)?)),
    overflowed_mapping_blocks: None,
    metadata_region_end: None,
};

/// Today's mballoc without delayed allocation, on a file system without flex_bg, for files
/// written from their start in order.
#[derive(Clone, Debug, Default)]
pub struct Ext4_2007;

impl Ext4_2007 {
    /// mballoc.c `MB_DEFAULT_STREAM_THRESHOLD` (`s_mb_stream_request`): files up to this many
    /// blocks share the CPU's locality-group preallocation.
    pub const STREAM_REQUEST_BLOCKS: u64 = 16;

    /// mballoc.c `MB_DEFAULT_GROUP_PREALLOC` (`s_mb_group_prealloc`): blocks of a locality
    /// group's preallocation.
    pub const LG_PREALLOC_BLOCKS: u64 = 512;

    /// Extents the inode holds before the tree needs a leaf block (`i_block`'s 60 bytes: a
    /// 12-byte header and four 12-byte entries).
    pub const INODE_EXTENTS: usize = 4;

    /// Takes no parameters.
    pub fn from_params(params: &PolicyParams) -> Result<Ext4_2007, LayoutError> {
        check_known(ENTRY.name, params, &[])?;
        Ok(Ext4_2007)
    }
}

/// The normalised window (`ext4_mb_normalize_request()`) of a one-block request at logical
/// block `logical` of a file whose blocks before it are all mapped (so `logical` is also
/// the number of blocks mapped, and the file's size is `logical` blocks), for
/// `block_bytes`-byte blocks: (first logical block, length).
pub fn normalised_window(logical: u64, block_bytes: u64) -> (u64, u64) {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * KIB;
    // The file's end once this block is mapped (`extent_logical_end()`; i_size is smaller).
    let size = (logical + 1) * block_bytes;
    let (start_bytes, window_bytes) = match size {
        s if s <= 16 * KIB => (0, 16 * KIB),
        s if s <= 32 * KIB => (0, 32 * KIB),
        s if s <= 64 * KIB => (0, 64 * KIB),
        s if s <= 128 * KIB => (0, 128 * KIB),
        s if s <= 256 * KIB => (0, 256 * KIB),
        s if s <= 512 * KIB => (0, 512 * KIB),
        s if s <= MIB => (0, MIB),
        // NRL_CHECK_SIZE(size, 4 MiB, ...): 2 MiB windows aligned to 2 MiB
        s if s <= 4 * MIB => ((logical * block_bytes) / (2 * MIB) * (2 * MIB), 2 * MIB),
        s if s <= 8 * MIB => ((logical * block_bytes) / (4 * MIB) * (4 * MIB), 4 * MIB),
        // a one-block request is at most 8 MiB: 8 MiB windows aligned to 8 MiB
        _ => ((logical * block_bytes) / (8 * MIB) * (8 * MIB), 8 * MIB),
    };
    let start = start_bytes / block_bytes;
    let len = window_bytes / block_bytes;
    // "don't cover already allocated blocks in selected range": start after the last mapped
    // block (every block before `logical` is mapped)
    let first = start.max(logical);
    (first, start + len - first)
}

/// A file's inode preallocation: logical `[logical, logical + len)` on physical
/// `[physical, physical + len)`, taken from its start.
#[derive(Clone, Copy, Debug)]
struct Prealloc {
    logical: u64,
    physical: u64,
    len: u64,
}

/// The locality group's preallocation: `left` blocks from `physical` on, handed out in turn.
#[derive(Clone, Copy, Debug)]
struct GroupPrealloc {
    physical: u64,
    left: u64,
}

/// One file being written.
struct Writing {
    /// Index in the plan's inodes.
    index: usize,
    /// Its inode's group (the goal group of its first leaf).
    group: u64,
    /// Blocks mapped so far (all of `[0, mapped)`).
    mapped: u64,
    prealloc: Option<Prealloc>,
    /// The locality group serving its small-file requests. Locality groups are per CPU
    /// (`raw_cpu_ptr(sbi->s_locality_groups)` in `ext4_mb_group_or_file()`); large-delete's
    /// writer alternates files across `fdatasync`, after which the scheduler may run it on
    /// either CPU: the model gives each file a CPU's group of its own, as the kernel's run of
    /// the fragmented pair showed (the second file's first blocks in a new preallocation).
    /// On the same CPU the second file would take the first's leftover: its first window
    /// then differs, which the proof's tolerance covers.
    lg: Option<GroupPrealloc>,
    /// Extents counted when the tree was last grown.
    extents: usize,
}

/// mballoc's view of the file system: the blocks the bitmaps hold and those preallocations
/// hold (both used to a new allocation).
struct Space {
    map: FreeMap,
    /// mballoc's largest buddy order: `MB_NUM_ORDERS(sb) - 1`, the block size's bits plus
    /// one (8192 blocks of 4 KiB), or the group's size when that is smaller.
    max_order: u32,
    /// Whether a data block was allocated since the mount.
    allocated: bool,
}

impl Space {
    /// `ext4_mb_find_by_goal()`: `len` blocks at `goal`, when all free and in one group.
    fn at_goal(&self, goal: u64, len: u64) -> bool {
        if goal >= self.map.blocks_count() {
            return false;
        }
        let group = self.map.group_of(goal);
        goal + len <= self.map.group_end(group)
            && self.map.next_used(goal, goal + len) == goal + len
    }

    /// `CR_POWER2_ALIGNED` for `len` (a power of two) blocks: in the first group from
    /// `group` on (wrapping) that has one, the start of its first free buddy of the smallest
    /// order from `len`'s up to [`Space::max_order`] that it has (`ext4_mb_simple_scan_group()`),
    /// a buddy of order k being a free, 2^k-aligned run of 2^k blocks (group-relative) whose
    /// pair does not complete a free run of the next order.
    fn aligned(&self, group: u64, len: u64) -> Option<u64> {
        debug_assert!(len.is_power_of_two());
        let groups = self.map.group_count();
        (0..groups)
            .map(|i| (group + i) % groups)
            .find_map(|g| self.aligned_in_group(g, len))
    }

    fn aligned_in_group(&self, group: u64, len: u64) -> Option<u64> {
        let start = self.map.group_first(group);
        let end = self.map.group_end(group);
        let free = |a: u64, n: u64| a + n <= end && self.map.next_used(a, a + n) == a + n;
        let top = self.max_order;
        (len.trailing_zeros()..=top).find_map(|order| {
            let size = 1u64 << order;
            let mut a = start;
            while a < end {
                // skip to the next free block, aligned up to the order
                let next = self.map.next_free(a, end)?;
                a = start + (next - start).div_ceil(size) * size;
                if a >= end {
                    return None;
                }
                let parent = a - (a - start) % (size * 2);
                if free(a, size) && (order == top || !free(parent, size * 2)) {
                    return Some(a);
                }
                a += size;
            }
            None
        })
    }

    /// A one-block metadata request aimed at `goal`: the first free block of the goal's
    /// group, then of the groups after it.
    fn first_free_from_group_of(&self, goal: u64) -> Option<u64> {
        let groups = self.map.group_count();
        let g0 = self.map.group_of(goal.min(self.map.blocks_count() - 1));
        (0..groups).map(|i| (g0 + i) % groups).find_map(|g| {
            self.map
                .next_free(self.map.group_first(g), self.map.group_end(g))
        })
    }
}

fn enospc(what: &str) -> LayoutError {
    LayoutError::Unsupported(format!(
        "ext4-2007 does not model running out of space ({what}); plan a larger file system"
    ))
}

fn refuse(i: usize, op: &NsOp, why: &str) -> LayoutError {
    LayoutError::Unsupported(format!(
        "policy ext4-2007 models only regular files in the root directory written from their \
         start in order (large-delete's writes); ops[{i}] ({} '{}'): {why}",
        op.verb(),
        op.path()
    ))
}

impl Policy for Ext4_2007 {
    fn name(&self) -> &str {
        ENTRY.name
    }

    fn plan(&self, geo: &Geometry, pop: &Population, _seed: u64) -> Result<Plan, LayoutError> {
        if !geo.has_feature("extent") || geo.flex_bg_size > 0 {
            return Err(LayoutError::Unsupported(format!(
                "ext4-2007 needs the file system the ext4-2007 kernel profile makes (extents, no \
                 flex_bg), not mkfs profile {}; use the ext4-2007 mkfs profile",
                geo.profile
            )));
        }
        pop.check_tree()
            .map_err(|e| LayoutError::BadPopulation(e.to_string()))?;
        let bs = u64::from(geo.block_size_bytes);
        let mut inodes = InodeMap::new(geo);
        let mut root_dir = DirGrowth::fresh_root(bs, geo.has_feature("dir_index"));
        let mut out = vec![PlannedInode::fresh_root(geo, MapFormat::Extents)];
        let mut space = Space {
            map: geo.free_map(),
            max_order: (bs.trailing_zeros() + 1).min(geo.blocks_per_group.trailing_zeros()),
            allocated: false,
        };
        let mut files: Vec<(String, Writing)> = Vec::new();
        for (i, op) in pop.ops.iter().enumerate() {
            let (path, bytes) = match op {
                NsOp::Create { path, bytes } => {
                    if path.contains('/') {
                        return Err(refuse(i, op, "not in the root directory"));
                    }
                    if root_dir.add_entry(path.len()) > 0 {
                        return Err(refuse(i, op, "the root directory would need a new block"));
                    }
                    // ialloc.c find_group_other(): a file goes in its parent's group when it
                    // has a free inode (and free blocks); the root's is group 0
                    if inodes.free(0) == 0 {
                        return Err(refuse(i, op, "group 0 has no free inode"));
                    }
                    let ino = inodes.take(0);
                    files.push((
                        path.clone(),
                        Writing {
                            index: out.len(),
                            group: 0,
                            mapped: 0,
                            prealloc: None,
                            lg: None,
                            extents: 0,
                        },
                    ));
                    out.push(PlannedInode {
                        ino,
                        kind: InodeKind::File,
                        parent: ROOT_INO,
                        name: path.clone(),
                        format: MapFormat::Extents,
                        ..Default::default()
                    });
                    (path, *bytes)
                }
                NsOp::Append { path, bytes } => (path, *bytes),
                _ => return Err(refuse(i, op, "not a create or an append")),
            };
            let Some((_, file)) = files.iter_mut().find(|(p, _)| p == path) else {
                return Err(refuse(i, op, "not a file this population created"));
            };
            let node = &mut out[file.index];
            node.size_bytes += bytes;
            write_blocks(file, node, &mut space, node.size_bytes.div_ceil(bs), bs)?;
        }
        Ok(Plan {
            policy: ENTRY.name.to_string(),
            inodes: out,
            links: Vec::new(),
        })
    }
}

/// Maps `file`'s blocks up to `end` (exclusive), page by page as the writer's write(2)s ask,
/// and grows its extent tree as the extents come.
fn write_blocks(
    file: &mut Writing,
    node: &mut PlannedInode,
    space: &mut Space,
    end: u64,
    bs: u64,
) -> Result<(), LayoutError> {
    while file.mapped < end {
        let logical = file.mapped;
        // inside the file's preallocation: the next blocks of it, as far as the write goes
        if let Some(pa) = file
            .prealloc
            .filter(|pa| logical >= pa.logical && logical < pa.logical + pa.len)
        {
            let take = (pa.logical + pa.len).min(end) - logical;
            push_run(
                &mut node.data,
                logical,
                pa.physical + (logical - pa.logical),
                take,
            );
            file.mapped += take;
        } else if !space.allocated {
            // The first data block allocated since the mount: one block without a
            // preallocation at the first free block of the inode's group. Not what a reading
            // of ext4_mb_group_or_file() says (a one-block file takes the locality group's
            // preallocation, as every later file's first block does): observed in every
            // capture (ld7's tracepoints: goal = the group's start plus the pid colour, block
            // = the group's first free one; FIEMAP of the files the tests write). The likely
            // cause, not confirmed: with `no_prefetch_block_bitmaps` no group's buddy is
            // loaded yet, so mballoc's power-of-two scan of its per-order group lists finds
            // none and a later criterion settles for the one block asked
            // (docs/policies.md, "ext4-2007 vs the kernel").
            let b = space
                .first_free_from_group_of(space.map.group_first(file.group))
                .ok_or_else(|| enospc("the first data block"))?;
            space.map.mark_used(b, 1);
            space.allocated = true;
            push_run(&mut node.data, logical, b, 1);
            file.mapped += 1;
        } else if logical < Ext4_2007::STREAM_REQUEST_BLOCKS {
            let b = group_block(space, &mut file.lg, file.group)?;
            push_run(&mut node.data, logical, b, 1);
            file.mapped += 1;
        } else {
            let (first, len) = normalised_window(logical, bs);
            debug_assert_eq!(first, logical);
            let goal = node
                .data
                .last()
                .map(|r| r.physical + r.len)
                .expect("blocks before a window are mapped");
            let at = if space.at_goal(goal, len) {
                goal
            } else if len.is_power_of_two() {
                space
                    .aligned(
                        space.map.group_of(goal.min(space.map.blocks_count() - 1)),
                        len,
                    )
                    .ok_or_else(|| enospc("file data"))?
            } else {
                return Err(LayoutError::Unsupported(format!(
                    "ext4-2007: a window of {len} blocks at logical {logical} (not a power of \
                     two) would need mballoc's best-fit scan, which this policy does not model"
                )));
            };
            space.map.mark_used(at, len);
            file.prealloc = Some(Prealloc {
                logical: first,
                physical: at,
                len,
            });
            continue;
        }
        grow_tree(file, node, space, bs)?;
    }
    grow_tree(file, node, space, bs)
}

/// A block from the locality group's preallocation `lg`, made when it has none left: the
/// group request of [`Ext4_2007::LG_PREALLOC_BLOCKS`] blocks (`ext4_mb_normalize_group_request()`,
/// no goal try) at the inode's group's first free buddy of that order
/// (`CR_POWER2_ALIGNED`).
fn group_block(
    space: &mut Space,
    lg: &mut Option<GroupPrealloc>,
    group: u64,
) -> Result<u64, LayoutError> {
    if lg.is_none_or(|lg| lg.left == 0) {
        let at = space
            .aligned(group, Ext4_2007::LG_PREALLOC_BLOCKS)
            .ok_or_else(|| enospc("locality-group preallocation"))?;
        space.map.mark_used(at, Ext4_2007::LG_PREALLOC_BLOCKS);
        *lg = Some(GroupPrealloc {
            physical: at,
            left: Ext4_2007::LG_PREALLOC_BLOCKS,
        });
    }
    let lg = lg.as_mut().expect("made above");
    let b = lg.physical;
    lg.physical += 1;
    lg.left -= 1;
    Ok(b)
}

/// The extent-tree blocks the file's extents now need and it does not have, each placed as
/// the kernel places a one-block metadata request: the first leaf aimed at the inode's group,
/// the others next to the file's last data block.
fn grow_tree(
    file: &mut Writing,
    node: &mut PlannedInode,
    space: &mut Space,
    bs: u64,
) -> Result<(), LayoutError> {
    // required_mapping() walks every extent: only when an extent was added
    let extents = node.data.len();
    if extents == file.extents || extents <= Ext4_2007::INODE_EXTENTS {
        file.extents = extents;
        return Ok(());
    }
    file.extents = extents;
    let need = required_mapping(MapFormat::Extents, &node.data, bs)
        .map_err(|e| LayoutError::Unsupported(format!("inode {}: {e}", node.ino)))?;
    for (kind, logical) in need.into_iter().skip(node.mapping.len()) {
        let goal = if node.mapping.is_empty() {
            space.map.group_first(file.group)
        } else {
            let last = node.data.last().expect("a tree maps data");
            last.physical + last.len - 1
        };
        let physical = space
            .first_free_from_group_of(goal)
            .ok_or_else(|| enospc("extent-tree block"))?;
        space.map.mark_used(physical, 1);
        node.mapping.push(MapBlock {
            kind,
            logical,
            physical,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ext4_mb_normalize_request()'s table for a file written from its start, 4 KiB blocks.
    #[test]
    fn windows_grow_with_the_file_then_stay_8_mib_aligned() {
        let w = |l| normalised_window(l, 4096);
        assert_eq!(w(16), (16, 16)); // 68 KiB -> the 128 KiB window [0, 32)
        assert_eq!(w(32), (32, 32)); // [0, 64)
        assert_eq!(w(64), (64, 64));
        assert_eq!(w(128), (128, 128));
        assert_eq!(w(256), (256, 256)); // 1028 KiB -> the 2 MiB window [0, 512)
        assert_eq!(w(512), (512, 512)); // [512, 1024)
        assert_eq!(w(1024), (1024, 1024)); // 4100 KiB -> the 4 MiB window [1024, 2048)
        assert_eq!(w(2048), (2048, 2048)); // 8 MiB windows from here on
        assert_eq!(w(24_414_207), (24_414_207, 1)); // the last block of an 8 MiB window
        assert_eq!(w(2048 * 1000 + 5), (2048 * 1000 + 5, 2043));
    }

    const MIB: u64 = 1 << 20;

    fn geometry(fs_bytes: u64) -> Geometry {
        Geometry::new(&crate::MkfsProfile::by_name("ext4-2007").unwrap(), fs_bytes).unwrap()
    }

    fn runs(i: &PlannedInode) -> Vec<(u64, u64, u64)> {
        i.data
            .iter()
            .map(|r| (r.logical, r.len, r.physical))
            .collect()
    }

    /// large-delete's contiguous file at its default scale (1907 MiB on 4767 MiB): the
    /// kernel's own extents (tests/ext4_2007_kernel.rs printed them, 2026-11-27): block 0
    /// alone at group 0's first free block, 1-15 in the locality group's 512-block
    /// preallocation (its first free order-9 buddy), 16-255 and 256 on in windows, then one
    /// extent per group, each 2048 blocks into its group.
    #[test]
    fn the_contiguous_file_is_laid_out_as_the_kernel_did() {
        let geo = geometry(4767 * MIB);
        let pop = Population {
            name: "contiguous".into(),
            fs_bytes: 4767 * MIB,
            ops: vec![NsOp::Create {
                path: "big".into(),
                bytes: 1907 * MIB,
            }],
        };
        let plan = Ext4_2007.plan(&geo, &pop, 1).unwrap();
        plan.check(&geo).unwrap();
        let big = plan.inodes.iter().find(|i| i.name == "big").unwrap();
        assert_eq!(big.ino, 12);
        let got = runs(big);
        assert_eq!(
            got[..5],
            [
                (0, 1, 558),
                (1, 15, 1024),
                (16, 240, 560),
                (256, 30464, 1536),
                (30720, 30720, 34816)
            ]
        );
        assert_eq!(got.len(), 19);
        for (k, r) in got.iter().enumerate().skip(4) {
            assert_eq!(
                r.2 % 32768,
                2048,
                "run {k} starts 2048 blocks into its group"
            );
        }
        // one leaf for 19 extents, at group 0's first free block after block 0
        assert_eq!(big.mapping.len(), 1);
        assert_eq!(big.mapping[0].physical, 559);
    }

    /// The fragmented pair: two writers' 8 MiB turns are alternate 2048-block windows; the
    /// second file's first blocks come from a locality group of its own (a new
    /// preallocation), as in the kernel's run.
    #[test]
    fn the_two_writers_take_alternate_windows() {
        let fs = 4767 * MIB;
        let geo = geometry(fs);
        let mut ops = vec![
            NsOp::Create {
                path: "big".into(),
                bytes: 0,
            },
            NsOp::Create {
                path: "other".into(),
                bytes: 0,
            },
        ];
        for _ in 0..40 {
            for f in ["big", "other"] {
                ops.push(NsOp::Append {
                    path: f.into(),
                    bytes: 8 * MIB,
                });
            }
        }
        let pop = Population {
            name: "fragmented".into(),
            fs_bytes: fs,
            ops,
        };
        let plan = Ext4_2007.plan(&geo, &pop, 1).unwrap();
        plan.check(&geo).unwrap();
        let file = |n: &str| plan.inodes.iter().find(|i| i.name == n).unwrap();
        let (big, other) = (file("big"), file("other"));
        assert_eq!(
            runs(big)[..5],
            [
                (0, 1, 558),
                (1, 15, 1024),
                (16, 240, 560),
                (256, 1792, 1536),
                (2048, 2048, 6144)
            ]
        );
        assert_eq!(
            runs(other)[..5],
            [
                (0, 16, 3584),
                (16, 112, 800),
                (128, 128, 3328),
                (256, 1792, 4096),
                (2048, 2048, 8192)
            ]
        );
        // from logical 2048 on every window is its own extent, the two files' alternating:
        // each of other's windows after big's of the same turn (the next aligned run, or the
        // next group's first when big's took the last)
        let at = |f: &PlannedInode, w: u64| {
            f.data
                .iter()
                .find(|r| r.logical == w * 2048)
                .unwrap_or_else(|| panic!("window {w} starts an extent"))
                .physical
        };
        for w in 1..39u64 {
            assert!(at(big, w) < at(other, w), "window {w}");
            assert!(at(other, w) < at(big, w + 1), "window {w}");
        }
    }

    #[test]
    fn what_it_does_not_model_is_refused_with_the_reason() {
        let geo = geometry(1024 * MIB);
        let refused = |ops: Vec<NsOp>| {
            let pop = Population {
                name: "t".into(),
                fs_bytes: 1024 * MIB,
                ops,
            };
            Ext4_2007.plan(&geo, &pop, 1).unwrap_err().to_string()
        };
        let e = refused(vec![NsOp::Mkdir { path: "d".into() }]);
        assert!(e.contains("root directory") && e.contains("ops[0]"), "{e}");
        let e = refused(vec![
            NsOp::Create {
                path: "f".into(),
                bytes: MIB,
            },
            NsOp::Unlink { path: "f".into() },
        ]);
        assert!(e.contains("ops[1]"), "{e}");
        // another mkfs profile's file system
        let other = Geometry::new(
            &crate::MkfsProfile::by_name("ext4-kernel").unwrap(),
            1 << 30,
        )
        .unwrap();
        let pop = Population {
            name: "t".into(),
            fs_bytes: 1 << 30,
            ops: vec![],
        };
        let e = Ext4_2007.plan(&other, &pop, 1).unwrap_err().to_string();
        assert!(e.contains("ext4-2007 mkfs profile"), "{e}");
    }
}
