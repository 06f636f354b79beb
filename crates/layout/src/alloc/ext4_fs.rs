//! The ext4 path from a namespace operation to allocations, shared by the ext4 policies:
//! which group an inode goes in (a policy's [`InodeChooser`]), the goal of its first block
//! (fs/ext4/extents.c `ext4_ext_find_goal()`, a policy's [`Ext4Rules`]), the data, directory
//! and extent-tree blocks from [`Mballoc`], and the directory growth of fs/ext4/namei.c
//! (the same `add_entry` arithmetic as ext3: [`DirGrowth`]). Every inode with blocks is
//! extent-mapped, as the kernel makes regular files, directories and slow symlinks on a file
//! system with the extent feature (`ext4_new_inode()`), fast symlinks excepted.

use crate::alloc::dir_growth::DirGrowth;
use crate::alloc::ext4_ialloc::{InodeChooser, SbCounters, SbTotals};
use crate::alloc::ialloc::InodeMap;
use crate::alloc::mballoc::Mballoc;
use crate::alloc::namespace::{DirState, Names, Namespace, Space};
use crate::geometry::Geometry;
use crate::mapping::{required_mapping, MapFormat, MapKind};
use crate::plan::{
    push_run, HardLink, InodeKind, MapBlock, Plan, PlannedInode, Run, Special,
    FAST_SYMLINK_MAX_BYTES,
};
use crate::policy::{Prefixes, Tree};
use crate::LayoutError;
use layoutlab_workload::{NodeKind, NsOp, Population, ROOT_PATH_ID};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
// The path-keyed maps hash every operation's path a few times: FxHash, not SipHash (issue 28;
// no plan depends on a map's order).
use rustc_hash::FxHashMap;
use std::collections::HashSet;

/// The block-goal rules of an era.
#[derive(Clone, Copy, Debug)]
pub struct Ext4Rules {
    /// a4912123: the goal group is the flex group's first for directories and special
    /// files, its second for regular files (flex groups of 4 or more).
    pub flex_dir_groups: bool,
    /// The goal carries the writer's pid colour (`(pid % 16) * blocks_per_group / 16`);
    /// false when delayed allocation drops it (`if (test_opt(sb, DELALLOC)) return
    /// bg_start;`).
    pub pid_colour: bool,
    /// a4912123's `ext4_mb_good_group()`: data skips the first group of a flex group.
    pub data_avoids_first_group: bool,
    /// Today's mballoc ([`Mballoc::today`]) instead of 2.6.28-2.6.30's.
    pub mballoc_today: bool,
    /// Delayed allocation with writeback: file data is allocated only once this many bytes
    /// of files have been written since the last writeback (then all of them, oldest first,
    /// and at the end); None allocates each file's blocks as it is written. Inodes and
    /// directory blocks are allocated at once either way, so Orlov sees free space without
    /// the data still in the page cache (delayed allocation reserves, it does not take:
    /// `s_freeclusters_counter` drops only in `ext4_mb_mark_diskspace_used()`).
    pub writeback_window_bytes: Option<u64>,
    /// Orlov reads the file-system-wide counts as today's kernel does, through percpu
    /// counters that lag by up to a batch ([`SbCounters`]); false: exact counts.
    pub percpu_counters: bool,
}

/// `EXT4_DIR_ENTRY_TAIL` size: the checksum entry at the end of each directory leaf block
/// with metadata_csum.
pub const DIR_CSUM_TAIL_BYTES: u64 = 12;

/// `EXT4_FLEX_SIZE_DIR_ALLOC_SCHEME`: flex groups smaller than this keep no group for
/// directories.
pub const FLEX_SIZE_DIR_ALLOC_SCHEME: u64 = 4;

fn enospc(what: &str) -> LayoutError {
    LayoutError::Unsupported(format!(
        "the ext4 policies do not model running out of space ({what}); plan a larger file system"
    ))
}

/// Plans `pop` on `geo` with ext4's allocators: inodes by `chooser`, goals by `rules`.
pub fn plan_ext4(
    policy: &str,
    geo: &Geometry,
    pop: &Population,
    seed: u64,
    chooser: &dyn InodeChooser,
    rules: Ext4Rules,
) -> Result<Plan, LayoutError> {
    plan_ext4_with(
        policy,
        geo,
        pop,
        seed,
        chooser,
        rules,
        Ext4SpaceRules::of(geo),
    )
}

/// How an ext4 plan sees the file system's space, where it differs from the geometry's.
#[derive(Clone, Copy, Debug)]
pub struct Ext4SpaceRules {
    /// Groups per flex group for goals and mballoc's rules (the geometry's `flex_bg_size`
    /// unless a policy packs its tables with a larger one than its allocator assumes).
    pub flex_size: u64,
    /// Metadata (directory, extent-tree and slow-symlink blocks) from the region below this
    /// block, file data from the rest ([`Mballoc::split_metadata`]); None: no region.
    pub meta_region_end: Option<u64>,
}

impl Ext4SpaceRules {
    /// The space as the geometry has it: its flex groups, no metadata region.
    pub fn of(geo: &Geometry) -> Ext4SpaceRules {
        Ext4SpaceRules {
            flex_size: geo.flex_bg_size.max(1),
            meta_region_end: None,
        }
    }
}

/// [`plan_ext4`] with the space seen as `space` says.
pub fn plan_ext4_with(
    policy: &str,
    geo: &Geometry,
    pop: &Population,
    seed: u64,
    chooser: &dyn InodeChooser,
    rules: Ext4Rules,
    space: Ext4SpaceRules,
) -> Result<Plan, LayoutError> {
    let plan = plan_ext4_in(
        policy,
        geo,
        Tree::Unchecked(pop),
        seed,
        chooser,
        rules,
        space,
        None,
    )?;
    Ok(plan.expect("without prefixes the planner runs to the end"))
}

/// [`plan_ext4_with`] of `tree` (checked here unless its caller checked it), also giving
/// `prefixes` the plan of each of their prefixes of it as
/// it passes their ends (then None once no prefix is owed; [`crate::Policy::plan_prefixes`]).
/// The planner reads its operations strictly in order; a prefix's plan is the state so far
/// finished as the end of the plan finishes it (files still waiting for writeback written
/// back, on copies, so that the pass goes on from the state before).
#[allow(clippy::too_many_arguments)]
pub fn plan_ext4_in(
    policy: &str,
    geo: &Geometry,
    tree: Tree<'_>,
    seed: u64,
    chooser: &dyn InodeChooser,
    rules: Ext4Rules,
    space: Ext4SpaceRules,
    mut prefixes: Option<&mut Prefixes>,
) -> Result<Option<Plan>, LayoutError> {
    if !geo.has_feature("extent") {
        return Err(LayoutError::Unsupported(format!(
            "{policy} needs an ext4 mkfs profile (with the extent feature), not {}; use {p} (layoutlab plan --mkfs-profile {p})",
            geo.profile,
            p = crate::policy::default_mkfs_profile(policy).unwrap_or("ext4-2009"),
        )));
    }
    let checked = tree.checked()?;
    let tree = checked.tree();
    let pop = tree.population();
    // Appends would need a model of when ext4 allocates (delayed allocation at writeback,
    // mballoc's per-inode preallocation kept between writes): not built yet.
    if let Some((i, op)) = pop
        .ops
        .iter()
        .enumerate()
        .find(|(_, op)| matches!(op, NsOp::Append { .. }))
    {
        return Err(LayoutError::Unsupported(format!(
            "policy {policy} does not model appends (ops[{i}]: append '{}'): it has no model yet of \
             when ext4 allocates an appended file's blocks (delayed allocation, mballoc's \
             per-inode preallocation); the ext3 policies (ext3-2007, ext3-metacluster) do",
            op.path()
        )));
    }
    let bs = u64::from(geo.block_size_bytes);
    let flex = space.flex_size.max(1);
    let groups = geo.group_count();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut pid: u64 = rng.gen_range(300..30_000);
    let mut inodes = InodeMap::new(geo);
    let mut mb = if rules.mballoc_today {
        Mballoc::today(geo.free_map(), flex, bs)
    } else {
        Mballoc::new(geo.free_map(), flex, rules.data_avoids_first_group)
    };
    if let Some(end) = space.meta_region_end {
        mb.split_metadata(end);
    }
    let dir_index = geo.has_feature("dir_index");
    let tail = if geo.has_feature("metadata_csum") {
        DIR_CSUM_TAIL_BYTES
    } else {
        0
    };
    let mut out = vec![PlannedInode::fresh_root(geo, MapFormat::Extents)];
    // by path id
    let mut dirs: FxHashMap<u32, DirState> = FxHashMap::default();
    dirs.insert(
        ROOT_PATH_ID,
        DirState {
            index: 0,
            group: 0,
            growth: DirGrowth::fresh_root(bs, dir_index).with_tail(tail),
            last_alloc_group: None,
        },
    );
    // non-directories by path id: their index in `out`
    let mut others: FxHashMap<u32, usize> = FxHashMap::default();
    let mut links = Vec::new();
    // files written and not yet written back: (index in `out`, goal of an empty file), and
    // the bytes written since the last writeback
    let mut pending: Vec<(usize, u64)> = Vec::new();
    let mut names = Names::new(out.len());
    let mut pending_bytes = 0u64;
    let mut counters = rules
        .percpu_counters
        .then(|| SbCounters::new(&inodes, &mb.map));
    // ext4_ext_find_goal() for an inode without blocks
    let goal_of = |group: u64, regular: bool, pid: u64| -> u64 {
        let mut g = group;
        if rules.flex_dir_groups && flex >= FLEX_SIZE_DIR_ALLOC_SCHEME {
            g &= !(flex - 1);
            if regular && g + 1 < groups {
                g += 1;
            }
        }
        let start = geo.first_data_block + g * geo.blocks_per_group;
        if !rules.pid_colour {
            return start;
        }
        let span = geo.blocks_per_group.min(geo.blocks_count - start);
        start + (pid % 16) * (span / 16)
    };
    // the plan so far, as the end of this function makes it: `mb.finish()` there only gives
    // preallocations back to the free map, which no plan holds
    let so_far = |pending: &[(usize, u64)],
                  mb: &Mballoc,
                  counters: &Option<SbCounters>,
                  names: &Names,
                  out: &[PlannedInode],
                  links: &[HardLink]| {
        let (inodes, links) = if pending.is_empty() {
            names.finished(out, links)
        } else {
            let (mut pending, mut mb, mut counters) =
                (pending.to_vec(), mb.clone(), counters.clone());
            let mut out = out.to_vec();
            writeback(&mut pending, &mut out, names, &mut mb, bs, &mut counters)?;
            names.finished(&out, links)
        };
        Ok(Plan {
            policy: policy.to_string(),
            inodes,
            links,
        })
    };
    for (op_index, (op, ids)) in tree.ops().enumerate() {
        if let Some(p) = prefixes.as_deref_mut() {
            p.give(op_index, || {
                so_far(&pending, &mb, &counters, &names, &out, &links)
            })?;
            if p.finished() {
                return Ok(None);
            }
        }
        let path = op.path();
        if op.is_aging() {
            let written = match op {
                NsOp::Extend { bytes, .. } => *bytes,
                _ => 0,
            };
            let mut fs = Namespace {
                space: Ext4Space {
                    mb: &mut mb,
                    counters: &mut counters,
                },
                inodes: &mut inodes,
                dirs: &mut dirs,
                out: &mut out,
                links: &mut links,
                names: &mut names,
                bs,
            };
            match op {
                NsOp::Unlink { .. } => {
                    let index = others.remove(&ids.path).expect("check_tree: it exists");
                    fs.unlink(path, ids, index);
                }
                NsOp::Rmdir { .. } => fs.rmdir(path, ids),
                NsOp::Rename { to, .. } => {
                    let index = others.remove(&ids.path).expect("check_tree: it exists");
                    let renamed = fs.rename((path, to), ids, index, op_index)?;
                    // Ext4Space::add_entry reports ENOSPC as an error, never as no room
                    debug_assert!(renamed);
                    let (to_id, _) = ids.other.expect("a rename has a new name");
                    others.insert(to_id, index);
                }
                NsOp::Truncate { bytes, .. } => fs.truncate(others[&ids.path], *bytes),
                NsOp::Extend { bytes, .. } => {
                    let index = others[&ids.path];
                    // an empty file's first block: the goal of a new file in its group
                    pid += rng.gen_range(1..=4);
                    let group = inodes.group_of(out[index].ino);
                    let goal = goal_of(group, true, pid);
                    let node = &mut out[index];
                    node.size_bytes += bytes;
                    if rules.writeback_window_bytes.is_some() {
                        pending.push((index, goal));
                        pending_bytes += bytes;
                    } else {
                        alloc_data(node, &mut mb, goal, bs)?;
                    }
                }
                _ => unreachable!("the aging operations"),
            }
            if let Some(c) = &mut counters {
                c.blocks_now(mb.counted_free());
            }
            if written > 0
                && rules
                    .writeback_window_bytes
                    .is_some_and(|w| pending_bytes >= w)
            {
                writeback(&mut pending, &mut out, &names, &mut mb, bs, &mut counters)?;
                pending_bytes = 0;
            }
            continue;
        }
        let (_, name) = path.rsplit_once('/').unwrap_or(("", path));
        // looked up once for the whole operation (issue 28)
        let parent = dirs.get_mut(&ids.dir).expect("check_tree: parents exist");
        let (parent_index, parent_group, parent_last) =
            (parent.index, parent.group, parent.last_alloc_group);
        let parent_ino = out[parent_index].ino;
        // the entry in the parent (ext4_add_entry): a new block when it does not fit
        let add_entry = |parent: &mut DirState,
                         out: &mut Vec<PlannedInode>,
                         mb: &mut Mballoc|
         -> Result<(), LayoutError> {
            add_dir_entry(parent, &mut out[parent_index], name.len(), mb, bs)
        };
        if let NsOp::Link { .. } = op {
            add_entry(parent, &mut out, &mut mb)?;
            let index = others[&ids.other.expect("a link has a target").0];
            links.push(HardLink {
                parent: parent_ino,
                name: name.to_string(),
                ino: out[index].ino,
            });
            names.linked(index, op_index);
            others.insert(ids.path, index);
            continue;
        }
        let is_dir = matches!(op, NsOp::Mkdir { .. });
        let top_level = is_dir && parent_index == 0;
        let random_start = if is_dir {
            u64::from(rng.gen::<u32>())
        } else {
            0
        };
        let totals = match &counters {
            Some(c) => c.read(mb.held()),
            None => SbTotals::exact(&inodes, &mb.map),
        };
        let group = chooser
            .choose(
                &inodes,
                &mb.map,
                parent_group,
                parent_last,
                is_dir,
                top_level,
                random_start,
                &totals,
            )
            .ok_or(LayoutError::NoInodes {
                created: (out.len() - 1) as u64,
            })?;
        let ino = if is_dir {
            inodes.take_dir(group)
        } else {
            inodes.take(group)
        };
        if let Some(c) = &mut counters {
            c.took_inode(is_dir);
        }
        parent.last_alloc_group = Some(group);
        pid += rng.gen_range(1..=4);
        let regular = matches!(op, NsOp::Create { .. });
        let goal = goal_of(group, regular, pid);
        let mut node = PlannedInode {
            ino,
            parent: parent_ino,
            name: name.to_string(),
            format: MapFormat::Extents,
            ..Default::default()
        };
        match op {
            NsOp::Mkdir { .. } => {
                // ext4_mkdir(): block 0 before the entry in the parent
                let b = mb
                    .alloc_block(goal)
                    .ok_or_else(|| enospc("directory block"))?;
                node.kind = InodeKind::Dir;
                node.size_bytes = bs;
                node.data = vec![Run {
                    logical: 0,
                    physical: b,
                    len: 1,
                }];
                add_entry(parent, &mut out, &mut mb)?;
                dirs.insert(
                    ids.path,
                    DirState {
                        index: out.len(),
                        group,
                        growth: DirGrowth::fresh_dir(bs, dir_index).with_tail(tail),
                        last_alloc_group: None,
                    },
                );
            }
            NsOp::Create { bytes, .. } => {
                add_entry(parent, &mut out, &mut mb)?;
                node.kind = InodeKind::File;
                node.size_bytes = *bytes;
                if rules.writeback_window_bytes.is_some() {
                    // delayed allocation: the blocks come when writeback reaches the file
                    pending.push((out.len(), goal));
                    pending_bytes += *bytes;
                } else {
                    alloc_data(&mut node, &mut mb, goal, bs)?;
                }
            }
            NsOp::Symlink { target, .. } => {
                node.kind = InodeKind::Symlink;
                node.size_bytes = target.len() as u64;
                node.special = Special::Symlink {
                    target: target.clone(),
                };
                if target.len() > FAST_SYMLINK_MAX_BYTES {
                    // page_symlink(): one block, not a data request of a regular file
                    let b = mb
                        .alloc_block(goal)
                        .ok_or_else(|| enospc("symlink block"))?;
                    node.data = vec![Run {
                        logical: 0,
                        physical: b,
                        len: 1,
                    }];
                } else {
                    // fast symlinks drop the extent flag (ext4_symlink())
                    node.format = MapFormat::Blocks;
                }
                add_entry(parent, &mut out, &mut mb)?;
            }
            NsOp::Mknod {
                node: kind,
                major,
                minor,
                ..
            } => {
                add_entry(parent, &mut out, &mut mb)?;
                node.format = MapFormat::Blocks;
                node.kind = match kind {
                    NodeKind::Char => InodeKind::CharDev,
                    NodeKind::Block => InodeKind::BlockDev,
                    NodeKind::Fifo => InodeKind::Fifo,
                    NodeKind::Socket => InodeKind::Socket,
                };
                if matches!(kind, NodeKind::Char | NodeKind::Block) {
                    node.special = Special::Device {
                        major: *major,
                        minor: *minor,
                    };
                }
            }
            NsOp::Link { .. } => unreachable!("handled above"),
            _ => unreachable!("refused above"),
        }
        if !is_dir {
            others.insert(ids.path, out.len());
        }
        names.born(op_index);
        out.push(node);
        if let Some(c) = &mut counters {
            c.blocks_now(mb.counted_free());
        }
        if rules
            .writeback_window_bytes
            .is_some_and(|w| pending_bytes >= w)
        {
            writeback(&mut pending, &mut out, &names, &mut mb, bs, &mut counters)?;
            pending_bytes = 0;
        }
    }
    if let Some(p) = prefixes {
        p.give(pop.ops.len(), || {
            so_far(&pending, &mb, &counters, &names, &out, &links)
        })?;
        return Ok(None);
    }
    writeback(&mut pending, &mut out, &names, &mut mb, bs, &mut counters)?;
    mb.finish();
    let (inodes, links) = names.finish(out, links);
    Ok(Some(Plan {
        policy: policy.to_string(),
        inodes,
        links,
    }))
}

/// Where an ext4 plan's aging operations free blocks and grow directories: mballoc, and
/// the percpu counters Orlov reads when the policy models them.
struct Ext4Space<'a> {
    mb: &'a mut Mballoc,
    counters: &'a mut Option<SbCounters>,
}

impl Space for Ext4Space<'_> {
    /// `ext4_free_blocks()` through mballoc.
    fn free_blocks(&mut self, start: u64, len: u64) {
        self.mb.free(start, len);
    }

    /// `ext4_free_inode()` also counts the inode back into the percpu counters.
    fn inode_freed(&mut self, is_dir: bool) {
        if let Some(c) = self.counters {
            c.freed_inode(is_dir);
        }
    }

    /// `ext4_add_entry()`: a new block when the entry does not fit ([`grow_dir`]). ENOSPC
    /// is not modelled: it is an error, never Ok(false).
    fn add_entry(
        &mut self,
        dir: &mut DirState,
        node: &mut PlannedInode,
        name_len: usize,
        bs: u64,
    ) -> Result<bool, LayoutError> {
        add_dir_entry(dir, node, name_len, self.mb, bs)?;
        Ok(true)
    }
}

/// `ext4_add_entry()`: an entry of `name_len` bytes in directory `dir` (inode `node`), and
/// a new block when it does not fit ([`grow_dir`]).
fn add_dir_entry(
    dir: &mut DirState,
    node: &mut PlannedInode,
    name_len: usize,
    mb: &mut Mballoc,
    bs: u64,
) -> Result<(), LayoutError> {
    let grow = dir.growth.add_entry(name_len);
    grow_dir(node, grow, mb, bs)
}

/// Adds `blocks` directory blocks to `node` (`ext4_append()`: the goal is the directory's
/// last block), and the extent-tree blocks they need.
fn grow_dir(
    node: &mut PlannedInode,
    blocks: u64,
    mb: &mut Mballoc,
    bs: u64,
) -> Result<(), LayoutError> {
    for _ in 0..blocks {
        let last = node
            .data
            .last()
            .map(|r| r.physical + r.len - 1)
            .unwrap_or(0);
        let b = mb
            .alloc_block(last + 1)
            .ok_or_else(|| enospc("directory block"))?;
        let logical = node.data_blocks();
        push_run(&mut node.data, logical, b, 1);
        node.size_bytes = (logical + 1) * bs;
        grow_tree(node, mb, bs, None)?;
    }
    Ok(())
}

/// The blocks a regular file's size asks for beyond those it has, continuing its last
/// extent (`ext4_ext_find_goal()`) or from `goal` when it has none, and the extent-tree
/// blocks they need.
fn alloc_data(
    node: &mut PlannedInode,
    mb: &mut Mballoc,
    goal: u64,
    bs: u64,
) -> Result<(), LayoutError> {
    let mut logical = node.data_blocks();
    let blocks = node.size_bytes.div_ceil(bs).saturating_sub(logical);
    if blocks == 0 {
        return Ok(());
    }
    let inode_goal = goal;
    let goal = node.data.last().map_or(goal, |r| r.physical + r.len);
    let runs = mb
        .alloc_file(goal, blocks)
        .ok_or_else(|| enospc("file data"))?;
    for (physical, len) in runs {
        push_run(&mut node.data, logical, physical, len);
        logical += len;
    }
    grow_tree(node, mb, bs, Some(inode_goal))
}

/// Writeback under delayed allocation: the pending files' blocks, in the order they were
/// written (the flusher takes dirty inodes oldest first, fs/fs-writeback.c
/// `move_expired_inodes()`, and ext4_writepages() maps each file's pages in order).
///
/// A file deleted before writeback reached it never gets blocks; one truncated or extended
/// meanwhile gets what its size then asks for.
fn writeback(
    pending: &mut Vec<(usize, u64)>,
    out: &mut [PlannedInode],
    names: &Names,
    mb: &mut Mballoc,
    bs: u64,
    counters: &mut Option<SbCounters>,
) -> Result<(), LayoutError> {
    for (index, goal) in pending.drain(..) {
        if !names.alive(index) {
            continue;
        }
        alloc_data(&mut out[index], mb, goal, bs)?;
        if let Some(c) = counters {
            c.blocks_now(mb.counted_free());
        }
    }
    Ok(())
}

/// Allocates the extent-tree blocks the inode's extents now need and does not have.
///
/// The first leaf, made when a fifth extent no longer fits in the inode, comes from
/// extents.c `ext4_ext_grow_indepth()`, whose goal at depth 0 is the inode's own goal block
/// (`ext4_inode_to_goal_block()`: for a regular file the first block of its flex group's
/// second group), `inode_goal` here — not the data's end: the kernel's leaf of a 2 GB file
/// was 3 to 16 blocks after group 1's first free block (33,365, the engine's) in seven runs,
/// where the data's end gives 580,352 (crates/experiments/tests/ext4_engine.rs, which also
/// says why the kernel's lands a few blocks further on). Other tree blocks aim next to the data
/// (`ext4_ext_split()` → `ext4_ext_new_meta_block()` → `ext4_ext_find_goal()`), taken here
/// after the file's data; the kernel takes them during writeback, at the data's end at that
/// moment (not modelled: no experiment's proof covers a file of more than one leaf yet). A
/// directory (`inode_goal` None) keeps the data's end for its first leaf too, as do the
/// 2008-2009 policies, whose kernels' `ext4_ext_grow_indepth()` aimed next to the data.
fn grow_tree(
    node: &mut PlannedInode,
    mb: &mut Mballoc,
    bs: u64,
    inode_goal: Option<u64>,
) -> Result<(), LayoutError> {
    let need = required_mapping(MapFormat::Extents, &node.data, bs)
        .map_err(|e| LayoutError::Unsupported(format!("inode {}: {e}", node.ino)))?;
    let have: HashSet<_> = node.mapping.iter().map(|m| (m.kind, m.logical)).collect();
    for (kind, logical) in need {
        if have.contains(&(kind, logical)) {
            continue;
        }
        let first_leaf = matches!(kind, MapKind::Extent { height: 0 })
            && logical == 0
            && node.mapping.is_empty();
        let goal = match inode_goal {
            // 2.6.28-2.6.30's ext4_ext_grow_indepth() aimed next to the data as a split does
            Some(g) if first_leaf && mb.is_today() => g,
            _ => node.data.last().map(|r| r.physical + r.len).unwrap_or(0),
        };
        let physical = mb
            .alloc_block(goal)
            .ok_or_else(|| enospc("extent-tree block"))?;
        node.mapping.push(MapBlock {
            kind,
            logical,
            physical,
        });
    }
    Ok(())
}
