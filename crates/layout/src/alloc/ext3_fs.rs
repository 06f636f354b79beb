//! The ext3 (2.6.23) path from a namespace operation to allocations, shared by the ext3
//! policies: inode placement (fs/ext3/ialloc.c), the root directory's growth
//! (fs/ext3/namei.c), the first block's goal (fs/ext3/inode.c `ext3_find_near()`) and the
//! sequential writes of a file, at once or in appends while the writer keeps it open
//! ([`FileWriter`]). A policy supplies the free map (with any holes) and where indirect
//! blocks go.

use crate::alloc::dir_growth::DirGrowth;
use crate::alloc::ext3_alloc::Ext3Alloc;
use crate::alloc::ialloc::InodeMap;
use crate::alloc::namespace::{DirState, Names, Namespace, Space};
use crate::alloc::writer::{alloc_branch, mapping_needed_at, FileWriter, IndirectPlacer};
use crate::geometry::{addr_per_block, Geometry};
use crate::mapping::MapFormat;
use crate::plan::{
    HardLink, InodeKind, MapBlock, Plan, PlannedInode, Run, Special, FAST_SYMLINK_MAX_BYTES,
};
use crate::policy::{Prefixes, Tree};
use crate::LayoutError;
use layoutlab_workload::{NodeKind, NsOp, Population, ROOT_PATH_ID};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
// The path-keyed maps hash every operation's path a few times: FxHash, not SipHash (issue 28;
// no plan depends on a map's order).
use rustc_hash::{FxHashMap, FxHashSet};

/// Root directory inode number.
pub const ROOT_INO: u32 = 2;

/// ext3_add_entry(): an entry of `name_len` bytes in directory `dir` (whose inode is `node`),
/// growing it as needed. On ENOSPC nothing changes, its growth state included, and `None`
/// comes back. `(name_len, addr, bs)`: the entry's name length, the addressing block count
/// and the block size, as [`grow_dir`] takes them.
fn add_entry(
    alloc: &mut Ext3Alloc,
    dir: &mut DirState,
    node: &mut PlannedInode,
    (name_len, addr, bs): (usize, u64, u64),
    placer: &mut dyn IndirectPlacer,
) -> Option<()> {
    let mark = dir.growth.mark();
    let grow_by = dir.growth.add_entry(name_len);
    // fails only when the directory grows (by `grow_by` > 0 blocks)
    let grown = grow_dir(alloc, node, grow_by, addr, bs, placer);
    if grown.is_none() {
        dir.growth.undo_growth(mark);
    }
    grown
}

/// Appends `blocks` blocks to directory `node` (`ext3_append()` -> `ext3_getblk()`:
/// directories have no reservation window and `ext3_find_near()` aims at the directory's
/// last block; a block past the 12 direct ones brings its indirect blocks in the same call,
/// or where the policy's placer puts them). All or nothing: on ENOSPC everything taken here
/// is given back and None returned.
fn grow_dir(
    alloc: &mut Ext3Alloc,
    node: &mut PlannedInode,
    blocks: u64,
    addr: u64,
    bs: u64,
    placer: &mut dyn IndirectPlacer,
) -> Option<()> {
    // most entries fit in the blocks the directory has: nothing to copy for an undo then
    if blocks == 0 {
        return Some(());
    }
    let saved = node.clone();
    let mut taken: Vec<u64> = Vec::new();
    for _ in 0..blocks {
        let last = node
            .data
            .last()
            .map(|r| r.physical + r.len - 1)
            .unwrap_or(0);
        let logical = node.data.iter().map(|r| r.len).sum::<u64>();
        let need = mapping_needed_at(logical, addr);
        let got = if !need.is_empty() && placer.inline() {
            alloc_branch(alloc, last, need.len(), None)
        } else {
            placer.dir_block(alloc, last).and_then(|b| {
                if need.is_empty() {
                    return Some((Vec::new(), b));
                }
                match placer.place(alloc, b, need.len()) {
                    Some(maps) => Some((maps, b)),
                    None => {
                        alloc.map.mark_free(b, 1);
                        None
                    }
                }
            })
        };
        let Some((maps, b)) = got else {
            for t in taken {
                alloc.map.mark_free(t, 1);
            }
            *node = saved;
            return None;
        };
        taken.push(b);
        for ((kind, l), physical) in need.iter().zip(maps) {
            taken.push(physical);
            node.mapping.push(MapBlock {
                kind: *kind,
                logical: *l,
                physical,
            });
        }
        match node.data.last_mut() {
            Some(r) if r.physical + r.len == b && r.logical + r.len == logical => r.len += 1,
            _ => node.data.push(Run {
                logical,
                physical: b,
                len: 1,
            }),
        }
        node.size_bytes = (logical + 1) * bs;
    }
    Some(())
}

/// A regular file open for writing: its writer and its size in bytes so far.
struct OpenFile {
    writer: FileWriter,
    size: u64,
}

impl OpenFile {
    /// write(2) of `bytes` at the end of the file: the blocks its new size needs beyond those
    /// it has. On ENOSPC the file ends at its last whole block written.
    fn write(
        &mut self,
        alloc: &mut Ext3Alloc,
        placer: &mut dyn IndirectPlacer,
        bytes: u64,
        bs: u64,
    ) {
        let size = self.size + bytes;
        let blocks = size.div_ceil(bs);
        let have = self.writer.out.blocks_written;
        self.writer
            .write(alloc, placer, blocks.saturating_sub(have));
        self.size = if self.writer.out.blocks_written >= blocks {
            size
        } else {
            self.writer.out.blocks_written * bs
        };
    }

    /// close(2): the file's blocks and size go into its planned inode (its window is dropped
    /// with the writer: `ext3_release_file()` discards it).
    fn close_into(self, node: &mut PlannedInode) {
        node.size_bytes = self.size;
        node.data = self.writer.out.data;
        node.mapping = self.writer.out.mapping;
    }
}

/// The names an operation could not make (ENOSPC), whose later operations fail too. Empty
/// unless the file system filled: then no path is hashed to look it up (each lookup read the
/// path's bytes once more, for each of tens of millions of operations; issue 28).
#[derive(Default)]
struct Failed(FxHashSet<u32>);

impl Failed {
    /// Whether the path of id `path` could not be made.
    fn contains(&self, path: u32) -> bool {
        !self.0.is_empty() && self.0.contains(&path)
    }

    /// Whether `path` was there (and is no more).
    fn remove(&mut self, path: u32) -> bool {
        !self.0.is_empty() && self.0.remove(&path)
    }

    fn insert(&mut self, path: u32) {
        self.0.insert(path);
    }
}

/// When each file appended to is written and closed ([`file_writes`]).
#[derive(Default)]
struct FileWrites {
    /// Each append's file, named by the index of the operation that created it.
    file_of_append: FxHashMap<usize, usize>,
    /// The creates and appends after which the writer keeps its file open: every write of a
    /// file appended to but its last.
    stays_open: FxHashSet<usize>,
}

/// The files a population appends to: each append's file (under any of the file's names)
/// and the writes after which the writer keeps the file open (it closes it after its last
/// write, so a file never appended to closes after its create). `pop` passed `check_tree()`.
/// Kept per append rather than per operation, and read only up to the last append (a file
/// created after it is never appended to): an aging stream of tens of millions of operations
/// has no append, and a table per operation took 17 of each pass's bytes per operation
/// (issue 28).
fn file_writes(pop: &Population) -> FileWrites {
    let mut w = FileWrites::default();
    let Some(last_append) = pop
        .ops
        .iter()
        .rposition(|op| matches!(op, NsOp::Append { .. }))
    else {
        return w;
    };
    let mut file_of: FxHashMap<&str, usize> = FxHashMap::default();
    // each appended file's latest write so far
    let mut latest: FxHashMap<usize, usize> = FxHashMap::default();
    for (i, op) in pop.ops[..=last_append].iter().enumerate() {
        match op {
            NsOp::Create { path, .. } => {
                file_of.insert(path, i);
            }
            NsOp::Append { path, .. } => {
                let f = file_of[path.as_str()];
                w.file_of_append.insert(i, f);
                // the write before this one was not the file's last
                w.stays_open.insert(latest.insert(f, i).unwrap_or(f));
            }
            NsOp::Link { path, target } => {
                if let Some(&f) = file_of.get(target.as_str()) {
                    file_of.insert(path, f);
                }
            }
            _ => {}
        }
    }
    w
}

/// Plans `pop` on `geo` with an ext3 policy's allocator and indirect-block placer.
///
/// Each file or directory is made by a new process (`dd`, `cp`, `mkdir`, ...) whose pid
/// picks the colour of its first block (`ext3_find_near()`: `(current->pid % 16) *
/// blocks_per_group / 16` into the inode's group): pids start at a seeded value and grow by
/// 1-4 per operation, as a shell loop forking one process per operation makes them. The
/// random start of Orlov's scan for top-level directories comes from the same seed.
///
/// A file written by a create and later appends ([`NsOp::Append`]) is written by the process
/// that created it, which keeps it open until its last write: between its writes the file
/// keeps its reservation window in the file system's tree (other files' windows go around
/// it), its window's size (doubling while more than half of a window was used) and its goal
/// "last allocated block + 1" (`ext3_find_goal()`); after its last write it is closed and
/// its window discarded (`ext3_release_file()`). fsync/fdatasync between writes change
/// nothing here: ext3 allocates when a page is prepared for writing (`ext3_prepare_write()`
/// → `block_prepare_write()` → `ext3_get_block()`), and `ext3_sync_file()` only writes
/// and commits what is already allocated.
pub fn plan_ext3(
    policy: &str,
    geo: &Geometry,
    pop: &Population,
    seed: u64,
    alloc: Ext3Alloc,
    placer: &mut dyn IndirectPlacer,
    dir_index: bool,
) -> Result<Plan, LayoutError> {
    let plan = plan_ext3_in(
        policy,
        geo,
        Tree::Unchecked(pop),
        seed,
        alloc,
        placer,
        dir_index,
        None,
    )?;
    Ok(plan.expect("without prefixes the planner runs to the end"))
}

/// [`plan_ext3`] of `tree` (checked here unless its caller checked it), also giving
/// `prefixes` the plan of each of their prefixes of it as it
/// passes their ends (then None once no prefix is owed; [`crate::Policy::plan_prefixes`]).
/// The planner reads its operations in order but for one look ahead, each file's last write
/// (when its writer closes it): a prefix that ends while a file is open for appends is
/// refused, since that prefix's plan alone would have closed it.
#[allow(clippy::too_many_arguments)]
pub fn plan_ext3_in(
    policy: &str,
    geo: &Geometry,
    tree: Tree<'_>,
    seed: u64,
    mut alloc: Ext3Alloc,
    placer: &mut dyn IndirectPlacer,
    dir_index: bool,
    mut prefixes: Option<&mut Prefixes>,
) -> Result<Option<Plan>, LayoutError> {
    let bs = u64::from(geo.block_size_bytes);
    let addr = addr_per_block(geo.block_size_bytes);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut pid: u64 = rng.gen_range(300..30_000);
    let mut inodes = InodeMap::new(geo);
    let mut out = vec![PlannedInode::fresh_root(geo, MapFormat::Blocks)];
    // by path id
    let mut dirs: FxHashMap<u32, DirState> = FxHashMap::default();
    dirs.insert(
        ROOT_PATH_ID,
        DirState {
            index: 0,
            group: inodes.group_of(ROOT_INO),
            growth: DirGrowth::fresh_root(bs, dir_index),
            last_alloc_group: None,
        },
    );
    // every operation must be possible on the tree the earlier ones made
    let checked = tree.checked()?;
    let tree = checked.tree();
    let pop = tree.population();
    // non-directories by path id (hard-link targets): their index in `out`
    let mut others: FxHashMap<u32, usize> = FxHashMap::default();
    let mut links: Vec<HardLink> = Vec::new();
    let mut failed = Failed::default();
    let writes = file_writes(pop);
    // regular files open for writing (by their create's operation): their index in `out` and
    // writer
    let mut open: FxHashMap<usize, (usize, OpenFile)> = FxHashMap::default();
    let mut names = Names::new(out.len());
    // the plan so far, as the end of the loop below makes it
    let so_far = |open: &FxHashMap<usize, (usize, OpenFile)>,
                  names: &Names,
                  out: &[PlannedInode],
                  links: &[HardLink]| {
        if !open.is_empty() {
            return Err(LayoutError::Unsupported(format!(
                "a prefix of the population that ends while {} file(s) are open for appends",
                open.len()
            )));
        }
        let (inodes, links) = names.finished(out, links);
        Ok(Plan {
            policy: policy.to_string(),
            inodes,
            links,
        })
    };
    for (op_index, (op, ids)) in tree.ops().enumerate() {
        if let Some(p) = prefixes.as_deref_mut() {
            p.give(op_index, || so_far(&open, &names, &out, &links))?;
            if p.finished() {
                return Ok(None);
            }
        }
        let path = op.path();
        if let NsOp::Append { bytes, .. } = op {
            // Not open: its create failed (ENOSPC), and so does every write to it.
            let file_no = writes.file_of_append[&op_index];
            let Some((index, mut file)) = open.remove(&file_no) else {
                continue;
            };
            // Through a name that could not be made (ENOSPC) the write fails; the writer
            // still closes the file after its last one.
            if !failed.contains(ids.path) {
                alloc.unpark_window(&file.writer.rsv);
                file.write(&mut alloc, placer, *bytes, bs);
                alloc.park_window(&file.writer.rsv);
            }
            if !writes.stays_open.contains(&op_index) {
                alloc.unpark_window(&file.writer.rsv);
                file.close_into(&mut out[index]);
            } else {
                open.insert(file_no, (index, file));
            }
            continue;
        }
        if op.is_aging() {
            let mut fs = Namespace {
                space: Ext3Space {
                    alloc: &mut alloc,
                    placer: &mut *placer,
                    addr,
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
                    // a name that could not be made (ENOSPC) has nothing to remove
                    if !failed.remove(ids.path) {
                        let index = others.remove(&ids.path).expect("check_tree: it exists");
                        fs.unlink(path, ids, index);
                    }
                }
                NsOp::Rmdir { .. } => {
                    if !failed.remove(ids.path) {
                        fs.rmdir(path, ids);
                    }
                }
                NsOp::Rename { to, .. } => {
                    let (to_id, to_dir) = ids.other.expect("a rename has a new name");
                    if failed.remove(ids.path) {
                        failed.insert(to_id);
                    } else {
                        let index = others.remove(&ids.path).expect("check_tree: it exists");
                        if !failed.contains(to_dir)
                            && fs.rename((path, to), ids, index, op_index)?
                        {
                            others.insert(to_id, index);
                        } else {
                            // ENOSPC (its new directory, or the new entry, could not be
                            // made): the kernel leaves the file under its old name, which
                            // the stream no longer uses and may make again. The plan
                            // removes it instead, so that a later create of that name
                            // does not meet it; the stream's later operations on the new
                            // name fail as the kernel's would.
                            fs.unlink(path, ids, index);
                            failed.insert(to_id);
                        }
                    }
                }
                NsOp::Truncate { bytes, .. } => {
                    if !failed.contains(ids.path) {
                        fs.truncate(others[&ids.path], *bytes);
                    }
                }
                NsOp::Extend { bytes, .. } => {
                    if !failed.contains(ids.path) {
                        // a new process opens the file: its pid colours an empty file's goal
                        pid += rng.gen_range(1..=4);
                        let index = others[&ids.path];
                        let group = fs.inodes.group_of(fs.out[index].ino);
                        let goal = fs.space.alloc.map.group_first(group)
                            + (pid % 16) * (geo.blocks_per_group / 16);
                        fs.extend(index, goal, *bytes);
                    }
                }
                _ => unreachable!("the aging operations"),
            }
            continue;
        }
        let (_, name) = path.rsplit_once('/').unwrap_or(("", path));
        if failed.contains(ids.dir) {
            // Its directory could not be made (ENOSPC): the operation fails too.
            failed.insert(ids.path);
            continue;
        }
        // looked up once for the whole operation (issue 28)
        let parent = dirs.get_mut(&ids.dir).expect("check_tree: parents exist");
        let parent_ino = out[parent.index].ino;
        let parent_index = parent.index;
        if let NsOp::Link { .. } = op {
            // ext3_link(): only a new entry in the parent
            let (target, _) = ids.other.expect("a link has a target");
            if failed.contains(target) {
                failed.insert(ids.path);
                continue;
            }
            let target_index = others[&target];
            let entry = (name.len(), addr, bs);
            if add_entry(&mut alloc, parent, &mut out[parent_index], entry, placer).is_none() {
                failed.insert(ids.path);
                continue;
            }
            links.push(HardLink {
                parent: parent_ino,
                name: name.to_string(),
                ino: out[target_index].ino,
            });
            names.linked(target_index, op_index);
            others.insert(ids.path, target_index);
            continue;
        }
        let is_dir = matches!(op, NsOp::Mkdir { .. });
        // ext3_new_inode(): Orlov for directories, find_group_other() for the rest
        let group = if is_dir {
            let random_start = u64::from(rng.gen::<u32>());
            inodes.find_group_orlov(&alloc.map, parent.group, parent_index == 0, random_start)
        } else {
            inodes.find_group_other(&alloc.map, parent.group, parent_ino)
        };
        let created = (out.len() - 1) as u64;
        let group = group.ok_or(LayoutError::NoInodes { created })?;
        let ino = if is_dir {
            inodes.take_dir(group)
        } else {
            inodes.take(group)
        };
        pid += rng.gen_range(1..=4);
        let colour = (pid % 16) * (geo.blocks_per_group / 16);
        let goal = alloc.map.group_first(group) + colour;
        // ext3_mkdir(): the new directory's block 0 (ext3_bread(): no window, goal from
        // ext3_find_near()) comes before its entry in the parent; ext3_symlink(): a target
        // longer than i_data goes through page_symlink() into one block, also before the
        // entry (ext3_add_nondir()).
        let slow_symlink =
            matches!(op, NsOp::Symlink { target, .. } if target.len() > FAST_SYMLINK_MAX_BYTES);
        let mut first_block = None;
        if is_dir || slow_symlink {
            let got = if is_dir {
                placer.dir_block(&mut alloc, goal)
            } else {
                alloc.new_blocks(goal, 1, None).map(|(b, _)| b)
            };
            match got {
                Some(b) => first_block = Some(b),
                None => {
                    inodes.free_inode(ino, is_dir);
                    failed.insert(ids.path);
                    continue;
                }
            }
        }
        // ext3_add_entry() in the parent, growing it if needed; on ENOSPC the operation
        // fails and gives back its inode and blocks.
        let entry = (name.len(), addr, bs);
        if add_entry(&mut alloc, parent, &mut out[parent_index], entry, placer).is_none() {
            if let Some(b) = first_block {
                alloc.map.mark_free(b, 1);
            }
            inodes.free_inode(ino, is_dir);
            failed.insert(ids.path);
            continue;
        }
        let one_block = |b: Option<u64>| -> Vec<Run> {
            b.map(|physical| {
                vec![Run {
                    logical: 0,
                    physical,
                    len: 1,
                }]
            })
            .unwrap_or_default()
        };
        let node = match op {
            NsOp::Mkdir { .. } => {
                dirs.insert(
                    ids.path,
                    DirState {
                        index: out.len(),
                        group,
                        growth: DirGrowth::fresh_dir(bs, dir_index),
                        last_alloc_group: None,
                    },
                );
                PlannedInode {
                    kind: InodeKind::Dir,
                    size_bytes: bs,
                    data: one_block(first_block),
                    ..Default::default()
                }
            }
            // its data is written below, once the inode is in `out`
            NsOp::Create { .. } => PlannedInode {
                kind: InodeKind::File,
                ..Default::default()
            },
            NsOp::Symlink { target, .. } => PlannedInode {
                kind: InodeKind::Symlink,
                size_bytes: target.len() as u64,
                data: one_block(first_block),
                special: Special::Symlink {
                    target: target.clone(),
                },
                ..Default::default()
            },
            NsOp::Mknod {
                node, major, minor, ..
            } => PlannedInode {
                kind: match node {
                    NodeKind::Char => InodeKind::CharDev,
                    NodeKind::Block => InodeKind::BlockDev,
                    NodeKind::Fifo => InodeKind::Fifo,
                    NodeKind::Socket => InodeKind::Socket,
                },
                special: match node {
                    NodeKind::Char | NodeKind::Block => Special::Device {
                        major: *major,
                        minor: *minor,
                    },
                    _ => Special::None,
                },
                ..Default::default()
            },
            NsOp::Link { .. } | NsOp::Append { .. } => unreachable!("handled above"),
            _ => unreachable!("aging operations are refused above"),
        };
        if !is_dir {
            others.insert(ids.path, out.len());
        }
        names.born(op_index);
        out.push(PlannedInode {
            ino,
            parent: parent_ino,
            name: name.to_string(),
            format: MapFormat::Blocks,
            ..node
        });
        if let NsOp::Create { bytes, .. } = op {
            let index = out.len() - 1;
            let mut file = OpenFile {
                writer: FileWriter::new(goal, addr),
                size: 0,
            };
            file.write(&mut alloc, placer, *bytes, bs);
            if !writes.stays_open.contains(&op_index) {
                file.close_into(&mut out[index]);
            } else {
                alloc.park_window(&file.writer.rsv);
                open.insert(op_index, (index, file));
            }
        }
    }
    debug_assert!(open.is_empty(), "every file is closed after its last write");
    if let Some(p) = prefixes {
        p.give(pop.ops.len(), || so_far(&open, &names, &out, &links))?;
        return Ok(None);
    }
    let (inodes, links) = names.finish(out, links);
    Ok(Some(Plan {
        policy: policy.to_string(),
        inodes,
        links,
    }))
}

/// Where an ext3 plan's aging operations free blocks and grow directories: the policy's
/// allocator and indirect-block placer.
struct Ext3Space<'a> {
    alloc: &'a mut Ext3Alloc,
    placer: &'a mut dyn IndirectPlacer,
    /// Block numbers an indirect block holds.
    addr: u64,
}

impl Space for Ext3Space<'_> {
    /// `ext3_free_blocks()`: the blocks go back to the free map.
    fn free_blocks(&mut self, start: u64, len: u64) {
        self.alloc.map.mark_free(start, len);
    }

    /// [`add_entry`], which models ENOSPC: Ok(false) when the directory could not grow.
    fn add_entry(
        &mut self,
        dir: &mut DirState,
        node: &mut PlannedInode,
        name_len: usize,
        bs: u64,
    ) -> Result<bool, LayoutError> {
        let entry = (name_len, self.addr, bs);
        Ok(add_entry(self.alloc, dir, node, entry, self.placer).is_some())
    }
}

impl Namespace<'_, Ext3Space<'_>> {
    /// Open, write `bytes` at the end, close: a new writer ([`FileWriter::resume`]) for the
    /// file at `index`, whose first block (if it has none) aims at `first_goal`.
    fn extend(&mut self, index: usize, first_goal: u64, bytes: u64) {
        let mut file = OpenFile {
            writer: FileWriter::resume(&mut self.out[index], first_goal, self.space.addr),
            size: self.out[index].size_bytes,
        };
        file.write(self.space.alloc, self.space.placer, bytes, self.bs);
        file.close_into(&mut self.out[index]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::ext3_alloc::Ext3Alloc;

    use crate::geometry::Geometry;
    use crate::mkfs::MkfsProfile;

    fn tree() -> Population {
        let mk = |p: &str| NsOp::Mkdir { path: p.into() };
        let cr = |p: &str, b: u64| NsOp::Create {
            path: p.into(),
            bytes: b,
        };
        Population {
            name: "tree".into(),
            fs_bytes: 2_000_000_000,
            ops: [
                mk("a"),
                mk("b"),
                mk("a/c"),
                cr("a/c/x", 9_000_000),
                cr("b/y", 50_000),
                cr("z", 1),
            ]
            .into_iter()
            // 601 names of 200 bytes in b (208-byte entries): a dx root and 31 leaves, so b
            // needs an IND.
            .chain((0..600).map(|i| cr(&format!("b/{i:0>200}"), 4096)))
            .collect(),
        }
    }

    /// The per-operation tables `file_writes` made before issue 28's cut: each write's file
    /// number (files numbered in creation order) and whether it is its file's last write.
    fn per_operation_tables(pop: &Population) -> (Vec<Option<usize>>, Vec<bool>) {
        let mut file_of: FxHashMap<&str, usize> = FxHashMap::default();
        let mut writes = vec![None; pop.ops.len()];
        let mut last: Vec<usize> = Vec::new();
        for (i, op) in pop.ops.iter().enumerate() {
            match op {
                NsOp::Create { path, .. } => {
                    file_of.insert(path, last.len());
                    writes[i] = Some(last.len());
                    last.push(i);
                }
                NsOp::Append { path, .. } => {
                    let f = file_of[path.as_str()];
                    writes[i] = Some(f);
                    last[f] = i;
                }
                NsOp::Link { path, target } => {
                    if let Some(&f) = file_of.get(target.as_str()) {
                        file_of.insert(path, f);
                    }
                }
                _ => {}
            }
        }
        let mut closes = vec![false; pop.ops.len()];
        for i in last {
            closes[i] = true;
        }
        (writes, closes)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

        /// `file_writes`, kept per append and read up to the last append, answers every write
        /// as the per-operation tables did: the same file for each append and the same closes,
        /// over creates, appends through any name, hard links and names made again.
        #[test]
        fn file_writes_answer_as_the_per_operation_tables(
            steps in proptest::collection::vec((0u8..5, proptest::prelude::any::<proptest::sample::Index>()), 0..60),
        ) {
            // names that exist (one per path), and every name ever made
            let mut live: Vec<String> = Vec::new();
            let mut gone: Vec<String> = Vec::new();
            let mut ops = Vec::new();
            for (n, (kind, pick)) in steps.into_iter().enumerate() {
                match kind {
                    // a write to a name that exists, when one does
                    0 | 1 if !live.is_empty() => ops.push(NsOp::Append {
                        path: pick.get(&live).clone(),
                        bytes: 1,
                    }),
                    2 if !live.is_empty() => {
                        let target = pick.get(&live).clone();
                        live.push(format!("l{n}"));
                        ops.push(NsOp::Link { path: format!("l{n}"), target });
                    }
                    // a name goes (its path may be made again)
                    3 if !live.is_empty() => {
                        let path = live.remove(pick.index(live.len()));
                        ops.push(NsOp::Unlink { path: path.clone() });
                        gone.push(path);
                    }
                    // a create: a name made again, or a new one
                    _ => {
                        let path = if kind == 4 && !gone.is_empty() {
                            gone.remove(pick.index(gone.len()))
                        } else {
                            format!("f{n}")
                        };
                        live.push(path.clone());
                        ops.push(NsOp::Create { path, bytes: 1 });
                    }
                }
            }
            let pop = Population { name: "writes".into(), fs_bytes: 1 << 30, ops };
            let (old_writes, old_closes) = per_operation_tables(&pop);
            let created: Vec<usize> = (0..pop.ops.len())
                .filter(|&i| matches!(pop.ops[i], NsOp::Create { .. }))
                .collect();
            let w = file_writes(&pop);
            for (i, op) in pop.ops.iter().enumerate() {
                match op {
                    NsOp::Append { .. } => {
                        let f = old_writes[i].unwrap();
                        proptest::prop_assert_eq!(w.file_of_append.get(&i), Some(&created[f]));
                        proptest::prop_assert_eq!(!w.stays_open.contains(&i), old_closes[i]);
                    }
                    NsOp::Create { .. } => {
                        proptest::prop_assert!(!w.file_of_append.contains_key(&i));
                        proptest::prop_assert_eq!(!w.stays_open.contains(&i), old_closes[i]);
                    }
                    _ => {
                        proptest::prop_assert!(!w.file_of_append.contains_key(&i));
                        proptest::prop_assert!(!w.stays_open.contains(&i));
                    }
                }
            }
        }
    }

    use crate::policy::ext3_2007::InlineIndirect as Inline;

    /// ext3-2007's geometry of the 2 GB file system these tests plan on.
    fn geo_2007() -> Geometry {
        let p = MkfsProfile::by_name("ext3-2007").unwrap();
        Geometry::new(&p, 2_000_000_000).unwrap()
    }

    /// `pop` planned on `geo` as ext3-2007 plans (inline indirect blocks, htree directories),
    /// seed 3.
    fn plan_2007(geo: &Geometry, pop: &Population) -> Result<Plan, LayoutError> {
        plan_ext3(
            "t",
            geo,
            pop,
            3,
            Ext3Alloc::new(geo.free_map()),
            &mut Inline,
            true,
        )
    }

    #[test]
    fn directories_are_planned_and_checked() {
        let geo = geo_2007();
        let plan = plan_2007(&geo, &tree()).unwrap();
        plan.check(&geo).unwrap();
        let by_name = |n: &str| plan.inodes.iter().find(|i| i.name == n).unwrap();
        let (a, c, x) = (by_name("a"), by_name("c"), by_name("x"));
        assert_eq!(a.kind, InodeKind::Dir);
        assert_eq!(c.parent, a.ino);
        assert_eq!(x.parent, c.ino);
        assert_eq!(by_name("z").parent, ROOT_INO);
        // Files go in their directory's group (find_group_other).
        let ipg = geo.inodes_per_group;
        assert_eq!((x.ino - 1) / ipg, (c.ino - 1) / ipg);
        let b = by_name("b");
        assert_eq!(b.data_blocks(), 32);
        assert_eq!(b.mapping.len(), 1);
        // Top-level directories spread out (Orlov): a and b in different groups.
        assert_ne!((a.ino - 1) / ipg, (b.ino - 1) / ipg);
    }

    #[test]
    fn bad_populations_are_errors() {
        let geo = geo_2007();
        let run = |ops: Vec<NsOp>| {
            let pop = Population {
                name: "bad".into(),
                fs_bytes: 2_000_000_000,
                ops,
            };
            plan_2007(&geo, &pop)
        };
        let e = run(vec![NsOp::Create {
            path: "nodir/f".into(),
            bytes: 1,
        }])
        .unwrap_err();
        assert!(e.to_string().contains("parent directory 'nodir'"), "{e}");
        let twice = vec![
            NsOp::Mkdir { path: "d".into() },
            NsOp::Create {
                path: "d".into(),
                bytes: 1,
            },
        ];
        assert!(run(twice)
            .unwrap_err()
            .to_string()
            .contains("already exists"));
        assert!(run(vec![NsOp::Create {
            path: "a//b".into(),
            bytes: 1
        }])
        .is_err());
    }

    #[test]
    fn every_kind_of_object_is_planned() {
        let geo = geo_2007();
        let long = "t/".repeat(40);
        let node = |path: &str, node: NodeKind| NsOp::Mknod {
            path: path.into(),
            node,
            major: 8,
            minor: 1,
        };
        let pop = Population {
            name: "kinds".into(),
            fs_bytes: 2_000_000_000,
            ops: vec![
                NsOp::Mkdir { path: "d".into() },
                NsOp::Create {
                    path: "d/f".into(),
                    bytes: 10_000,
                },
                NsOp::Symlink {
                    path: "fast".into(),
                    target: "d/f".into(),
                },
                NsOp::Symlink {
                    path: "d/slow".into(),
                    target: long.clone(),
                },
                NsOp::Link {
                    path: "hard".into(),
                    target: "d/f".into(),
                },
                NsOp::Link {
                    path: "d/hard2".into(),
                    target: "hard".into(),
                },
                node("sda1", NodeKind::Block),
                node("tty", NodeKind::Char),
                node("d/fifo", NodeKind::Fifo),
                node("d/sock", NodeKind::Socket),
            ],
        };
        let plan = plan_2007(&geo, &pop).unwrap();
        plan.check(&geo).unwrap();
        let by_name = |n: &str| plan.inodes.iter().find(|i| i.name == n).unwrap();
        assert_eq!(by_name("fast").data_blocks(), 0);
        assert_eq!(by_name("fast").size_bytes, 3);
        let slow = by_name("slow");
        assert_eq!((slow.kind, slow.data_blocks()), (InodeKind::Symlink, 1));
        assert_eq!(
            slow.special,
            Special::Symlink {
                target: long.clone()
            }
        );
        assert_eq!(by_name("sda1").kind, InodeKind::BlockDev);
        assert_eq!(by_name("tty").kind, InodeKind::CharDev);
        assert_eq!(by_name("fifo").kind, InodeKind::Fifo);
        assert_eq!(by_name("sock").special, Special::None);
        let f = by_name("f").ino;
        let d = by_name("d").ino;
        assert_eq!(
            plan.links,
            vec![
                HardLink {
                    parent: ROOT_INO,
                    name: "hard".into(),
                    ino: f
                },
                HardLink {
                    parent: d,
                    name: "hard2".into(),
                    ino: f
                }
            ]
        );
        // a plan whose hard link names a directory is refused
        let mut bad = plan.clone();
        bad.links[0].ino = d;
        assert!(bad.check(&geo).unwrap_err().contains("is a directory"));
        // and a population linking to a missing file is an error naming it
        let mut pop2 = pop.clone();
        pop2.ops.push(NsOp::Link {
            path: "x".into(),
            target: "d/nope".into(),
        });
        let e = plan_2007(&geo, &pop2).unwrap_err().to_string();
        assert!(
            e.contains("ops[10]") && e.contains("'d/nope' does not exist"),
            "{e}"
        );
    }

    #[test]
    fn root_indexes_at_first_overflow() {
        let mut d = DirGrowth::fresh_root(4096, true);
        let mut grown = Vec::new();
        for i in 0..350 {
            let g = d.add_entry(4);
            if g > 0 {
                grown.push((i, g));
            }
        }
        // (4096 - 44) / 12 = 337 four-character names fit in block 0.
        assert_eq!(grown, vec![(337, 2)]);
        assert_eq!(d.blocks, 3);
        let mut lin = DirGrowth::fresh_root(4096, false);
        let n: u64 = (0..350).map(|_| lin.add_entry(4)).sum();
        assert_eq!(n, 1);
    }
}
