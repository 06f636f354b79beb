//! The namespace bookkeeping an aging stream needs, shared by the ext3 and ext4 planners:
//! which planned inodes still live, how many names each has, where a rename moved a name,
//! which hard link takes over when an inode's first name goes, and the blocks a truncate
//! gives back. [`Namespace`] applies the aging operations (unlink, rmdir, rename of a
//! non-directory, truncate) to a plan being made, once for both planners; each file system
//! supplies through [`Space`] only what differs: where freed blocks go and how a directory
//! grows for a new entry.
//!
//! A plan lists inodes so that a directory comes before what it holds ([`Plan::check`]).
//! A tree copy makes them in that order; after renames the plan lists each inode where the
//! operation that last named it ran (its create, its rename, or the hard link that became
//! its first name), which keeps the rule: the directory it names existed then.
//!
//! [`Plan::check`]: crate::plan::Plan::check

use crate::alloc::dir_growth::DirGrowth;
use crate::alloc::ialloc::InodeMap;
use crate::mapping::required_mapping;
use crate::plan::{HardLink, PlannedInode, Run, Special};
use crate::LayoutError;
// Keyed by path id (`layoutlab_workload::PathIds`): FxHash, not SipHash (issue 28; no plan
// depends on a map's order).
use layoutlab_workload::OpPaths;
use rustc_hash::FxHashMap;

/// Lives, names and ordering of the planned inodes and hard links.
#[derive(Clone, Debug, Default)]
pub struct Names {
    alive: Vec<bool>,
    key: Vec<usize>,
    nlink: Vec<u32>,
    link_alive: Vec<bool>,
    link_key: Vec<usize>,
}

impl Names {
    /// Bookkeeping for a plan whose first `inodes` entries (the root) exist before any
    /// operation.
    pub fn new(inodes: usize) -> Names {
        Names {
            alive: vec![true; inodes],
            key: vec![0; inodes],
            nlink: vec![1; inodes],
            ..Default::default()
        }
    }

    /// The inode pushed next (at index `alive.len()`) was made by operation `op_index`.
    pub fn born(&mut self, op_index: usize) {
        self.alive.push(true);
        // the root and anything made before the first operation sort first
        self.key.push(op_index + 1);
        self.nlink.push(1);
    }

    /// A hard link to the inode at `index` was pushed (next in the links) by `op_index`.
    pub fn linked(&mut self, index: usize, op_index: usize) {
        self.nlink[index] += 1;
        self.link_alive.push(true);
        self.link_key.push(op_index + 1);
    }

    /// Whether the inode at `index` still lives.
    pub fn alive(&self, index: usize) -> bool {
        self.alive[index]
    }

    /// The link in `links` that is the name `name` in directory `parent` of inode `ino`.
    fn link_named(&self, links: &[HardLink], parent: u32, name: &str, ino: u32) -> usize {
        (0..links.len())
            .find(|&j| {
                self.link_alive[j]
                    && links[j].ino == ino
                    && links[j].parent == parent
                    && links[j].name == name
            })
            .expect("a name that is not the inode's first is one of its hard links")
    }

    /// Removes the name `name` in directory `parent` of the non-directory at `index`
    /// (unlink(2)). When it was the inode's first name and others remain, the oldest hard
    /// link becomes its first name. Returns true when it was the last name: the inode is
    /// dead and the caller frees it and its blocks.
    pub fn unlink(
        &mut self,
        out: &mut [PlannedInode],
        links: &mut [HardLink],
        index: usize,
        parent: u32,
        name: &str,
    ) -> bool {
        let node = &mut out[index];
        self.nlink[index] -= 1;
        if self.nlink[index] == 0 {
            // Its only name, so its first: no need to compare the names (that read of the
            // name's bytes, a cache miss per unlink, was 7% of `bench age`'s samples; issue 28).
            debug_assert!(node.parent == parent && node.name == name);
            self.alive[index] = false;
            return true;
        }
        if node.parent == parent && node.name == name {
            let j = (0..links.len())
                .find(|&j| self.link_alive[j] && links[j].ino == node.ino)
                .expect("an inode with names left has a hard link");
            self.link_alive[j] = false;
            node.parent = links[j].parent;
            node.name = std::mem::take(&mut links[j].name);
            self.key[index] = self.key[index].max(self.link_key[j]);
            return false;
        }
        let j = self.link_named(links, parent, name, node.ino);
        self.link_alive[j] = false;
        false
    }

    /// A directory (at `index`) is removed (rmdir(2)).
    pub fn rmdir(&mut self, index: usize) {
        self.alive[index] = false;
    }

    /// Moves the name `name` in `parent` of the non-directory at `index` to `new_name` in
    /// `new_parent` (rename(2) by operation `op_index`).
    #[allow(clippy::too_many_arguments)]
    pub fn rename(
        &mut self,
        out: &mut [PlannedInode],
        links: &mut [HardLink],
        index: usize,
        (parent, name): (u32, &str),
        (new_parent, new_name): (u32, &str),
        op_index: usize,
    ) {
        let node = &mut out[index];
        // an inode of one name is renamed by its first (no names compared, as in `unlink`)
        if self.nlink[index] == 1 || (node.parent == parent && node.name == name) {
            debug_assert!(node.parent == parent && node.name == name);
            node.parent = new_parent;
            node.name = new_name.to_string();
            self.key[index] = op_index + 1;
            return;
        }
        let j = self.link_named(links, parent, name, node.ino);
        links[j].parent = new_parent;
        links[j].name = new_name.to_string();
        self.link_key[j] = op_index + 1;
    }

    /// [`Names::finish`] of copies, leaving the plan being made as it is: the plan of the
    /// operations done so far ([`crate::policy::Prefixes`]).
    pub fn finished(
        &self,
        out: &[PlannedInode],
        links: &[HardLink],
    ) -> (Vec<PlannedInode>, Vec<HardLink>) {
        // the same filter and stable sort as `finish`, on references
        let mut live: Vec<(usize, &PlannedInode)> = out
            .iter()
            .enumerate()
            .filter(|(i, _)| self.alive[*i])
            .map(|(i, node)| (self.key[i], node))
            .collect();
        live.sort_by_key(|(key, _)| *key);
        let mut kept: Vec<(usize, &HardLink)> = links
            .iter()
            .enumerate()
            .filter(|(j, _)| self.link_alive[*j])
            .map(|(j, l)| (self.link_key[j], l))
            .collect();
        kept.sort_by_key(|(key, _)| *key);
        (
            live.into_iter().map(|(_, n)| n.clone()).collect(),
            kept.into_iter().map(|(_, l)| l.clone()).collect(),
        )
    }

    /// The living inodes, each listed where the operation that last named it ran, and the
    /// living hard links.
    pub fn finish(
        self,
        out: Vec<PlannedInode>,
        links: Vec<HardLink>,
    ) -> (Vec<PlannedInode>, Vec<HardLink>) {
        let mut live: Vec<(usize, PlannedInode)> = out
            .into_iter()
            .enumerate()
            .filter(|(i, _)| self.alive[*i])
            .map(|(i, node)| (self.key[i], node))
            .collect();
        live.sort_by_key(|(key, _)| *key);
        let mut kept: Vec<(usize, HardLink)> = links
            .into_iter()
            .enumerate()
            .filter(|(j, _)| self.link_alive[*j])
            .map(|(j, l)| (self.link_key[j], l))
            .collect();
        kept.sort_by_key(|(key, _)| *key);
        (
            live.into_iter().map(|(_, n)| n).collect(),
            kept.into_iter().map(|(_, l)| l).collect(),
        )
    }
}

/// A directory of a plan being made: where its inode is in the output and how full it is.
#[derive(Clone, Debug)]
pub(crate) struct DirState {
    /// Its inode's index in the planned inodes.
    pub index: usize,
    /// The group its inode is in: where its children's inodes start looking.
    pub group: u64,
    /// Its entries' block usage.
    pub growth: DirGrowth,
    /// ext4's `i_last_alloc_group` (the group of the last inode made in it, which
    /// `find_group_other()` tries first); the ext3 planner (2.6.23 keeps no such hint) leaves
    /// it None.
    pub last_alloc_group: Option<u64>,
}

/// The parent directory's path and the last name of `path` (the root is "").
fn split(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or(("", path))
}

/// What an aging operation does differently on each file system: where freed blocks go and
/// how a directory grows for a new entry. Everything else [`Namespace`] does the same way
/// for ext3 and ext4.
pub(crate) trait Space {
    /// Gives back `len` blocks from `start` (freed blocks are reusable at once: the
    /// journal's hold on them until the transaction commits is not modelled).
    fn free_blocks(&mut self, start: u64, len: u64);

    /// An inode was freed, after its blocks: for counters kept beside the inode map. The
    /// default keeps none.
    fn inode_freed(&mut self, _is_dir: bool) {}

    /// Adds an entry of `name_len` bytes to directory `dir`, whose inode is `node`, growing
    /// it as needed with blocks of `bs` bytes. Ok(false) when there was no room (ENOSPC) and
    /// nothing changed; a file system that does not model ENOSPC returns an error instead.
    fn add_entry(
        &mut self,
        dir: &mut DirState,
        node: &mut PlannedInode,
        name_len: usize,
        bs: u64,
    ) -> Result<bool, LayoutError>;
}

/// What an aging operation changes in a plan being made: the planner's state, borrowed for
/// one operation, and the file system's [`Space`].
pub(crate) struct Namespace<'a, S> {
    /// Where blocks are freed and directories grow.
    pub space: S,
    /// The inode bitmaps.
    pub inodes: &'a mut InodeMap,
    /// The living directories by path id.
    pub dirs: &'a mut FxHashMap<u32, DirState>,
    /// The planned inodes so far, dead ones included (see [`Names`]).
    pub out: &'a mut Vec<PlannedInode>,
    /// The hard links so far, dead ones included.
    pub links: &'a mut Vec<HardLink>,
    /// Which inodes and links live, and their order.
    pub names: &'a mut Names,
    /// Block size in bytes.
    pub bs: u64,
}

impl<S: Space> Namespace<'_, S> {
    /// The state and inode number of directory `dir` (a path id), and `path`'s last name.
    fn parent<'s>(&mut self, path: &'s str, dir: u32) -> (&mut DirState, u32, &'s str) {
        let (_, name) = split(path);
        let dir = self.dirs.get_mut(&dir).expect("check_tree: parents exist");
        let ino = self.out[dir.index].ino;
        (dir, ino, name)
    }

    /// Frees the inode at `index` and every block it has (`ext3_free_inode()` and
    /// `ext3_free_blocks()`, or ext4's). A file whose data was still in the page cache
    /// (ext4's delayed allocation) has no blocks yet: writeback skips it once it is dead.
    fn free_inode(&mut self, index: usize, is_dir: bool) {
        // A dead inode is read no more (a plan lists the living only, [`Names`]; ext4's
        // writeback skips the dead): its runs, mapping blocks and name are taken out and
        // dropped here rather than kept to the pass's end (an aging stream kills most of the
        // inodes it makes; issue 28). Data runs are freed first, then mapping blocks, as before.
        let node = &mut self.out[index];
        let (data, mapping) = (
            std::mem::take(&mut node.data),
            std::mem::take(&mut node.mapping),
        );
        node.name = String::new();
        node.special = Special::default();
        let ino = node.ino;
        for r in &data {
            self.space.free_blocks(r.physical, r.len);
        }
        for m in &mapping {
            self.space.free_blocks(m.physical, 1);
        }
        self.inodes.free_inode(ino, is_dir);
        self.space.inode_freed(is_dir);
    }

    /// unlink(2) of the non-directory at `index` by its name `path` (`ids` its ids): the
    /// entry goes; with its last name the inode and its blocks.
    pub fn unlink(&mut self, path: &str, ids: OpPaths, index: usize) {
        let (dir, parent_ino, name) = self.parent(path, ids.dir);
        dir.growth.remove_entry(name.len());
        if self
            .names
            .unlink(self.out, self.links, index, parent_ino, name)
        {
            self.free_inode(index, false);
        }
    }

    /// rmdir(2) of the empty directory `path` (`ids` its ids).
    pub fn rmdir(&mut self, path: &str, ids: OpPaths) {
        let dir = self.dirs.remove(&ids.path).expect("check_tree: it exists");
        self.free_inode(dir.index, true);
        self.names.rmdir(dir.index);
        let (parent, _, name) = self.parent(path, ids.dir);
        parent.growth.remove_entry(name.len());
    }

    /// rename(2) of the non-directory at `index` from `path` to `to` (`ids` their ids) by
    /// operation `op_index` (`ext3_rename()`, `ext4_rename()`: the new entry is added, growing its
    /// directory if needed, then the old one deleted). Ok(false) when the new entry found
    /// no room (ENOSPC, as [`Space::add_entry`] says): nothing changes.
    #[must_use = "a rename that found no room changed nothing"]
    pub fn rename(
        &mut self,
        (path, to): (&str, &str),
        ids: OpPaths,
        index: usize,
        op_index: usize,
    ) -> Result<bool, LayoutError> {
        let (_, to_name) = split(to);
        let (_, to_dir) = ids.other.expect("a rename has a new name");
        let dir = self
            .dirs
            .get_mut(&to_dir)
            .expect("check_tree: parents exist");
        let to_ino = self.out[dir.index].ino;
        let node = &mut self.out[dir.index];
        if !self.space.add_entry(dir, node, to_name.len(), self.bs)? {
            return Ok(false);
        }
        let (dir, parent_ino, name) = self.parent(path, ids.dir);
        dir.growth.remove_entry(name.len());
        self.names.rename(
            self.out,
            self.links,
            index,
            (parent_ino, name),
            (to_ino, to_name),
            op_index,
        );
        Ok(true)
    }

    /// truncate(2) of the file at `index` to at most its size: the blocks past the new end
    /// and the mapping blocks it no longer needs go back ([`cut`]). Blocks not allocated yet
    /// (ext4's delayed allocation) shrink with the size.
    pub fn truncate(&mut self, index: usize, bytes: u64) {
        let node = &mut self.out[index];
        let bytes = bytes.min(node.size_bytes);
        for (start, len) in cut(node, bytes.div_ceil(self.bs), self.bs) {
            self.space.free_blocks(start, len);
        }
        node.size_bytes = bytes;
    }
}

/// Cuts the inode to its first `blocks` data blocks (truncate(2) to a size of that many
/// blocks): the data runs past them go, and every mapping block the shorter file's tree no
/// longer needs (`ext3_truncate()` frees indirect blocks left empty; `ext4_ext_truncate()`
/// frees emptied leaves and index blocks). Returns the blocks given back.
pub fn cut(node: &mut PlannedInode, blocks: u64, block_bytes: u64) -> Vec<(u64, u64)> {
    let mut freed = Vec::new();
    let mut kept: Vec<Run> = Vec::with_capacity(node.data.len());
    for r in node.data.drain(..) {
        if r.logical + r.len <= blocks {
            kept.push(r);
        } else if r.logical < blocks {
            let keep = blocks - r.logical;
            kept.push(Run { len: keep, ..r });
            freed.push((r.physical + keep, r.len - keep));
        } else {
            freed.push((r.physical, r.len));
        }
    }
    node.data = kept;
    let need: std::collections::HashSet<_> = required_mapping(node.format, &node.data, block_bytes)
        .expect("a shorter file maps with the tree it had")
        .into_iter()
        .collect();
    node.mapping.retain(|m| {
        let keep = need.contains(&(m.kind, m.logical));
        if !keep {
            freed.push((m.physical, 1));
        }
        keep
    });
    freed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::MapFormat;
    use crate::plan::{MapBlock, MapKind};

    fn file(ino: u32, parent: u32, name: &str) -> PlannedInode {
        PlannedInode {
            ino,
            parent,
            name: name.into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_hard_link_takes_over_the_first_name_and_the_order() {
        let mut out = vec![file(2, 2, ""), file(12, 2, "a"), file(13, 2, "d")];
        let mut names = Names::new(1);
        names.born(0);
        names.born(1);
        let mut links = vec![HardLink {
            parent: 13,
            name: "b".into(),
            ino: 12,
        }];
        names.linked(1, 2);
        assert!(!names.unlink(&mut out, &mut links, 1, 2, "a"));
        assert_eq!((out[1].parent, out[1].name.as_str()), (13, "b"));
        let (inodes, links2) = names.clone().finish(out.clone(), links.clone());
        // listed after the directory its name is in
        assert_eq!(
            inodes.iter().map(|n| n.ino).collect::<Vec<_>>(),
            vec![2, 13, 12]
        );
        assert!(links2.is_empty());
        assert!(names.unlink(&mut out, &mut links, 1, 13, "b"));
        assert!(!names.alive(1));
    }

    #[test]
    fn cut_frees_the_tail_and_the_indirect_blocks_it_no_longer_needs() {
        let mut node = PlannedInode {
            ino: 12,
            size_bytes: 20 * 4096,
            format: MapFormat::Blocks,
            data: vec![
                Run {
                    logical: 0,
                    physical: 100,
                    len: 12,
                },
                Run {
                    logical: 12,
                    physical: 113,
                    len: 8,
                },
            ],
            mapping: vec![MapBlock {
                kind: MapKind::Ind,
                logical: 12,
                physical: 112,
            }],
            ..Default::default()
        };
        assert_eq!(cut(&mut node, 14, 4096), vec![(115, 6)]);
        assert_eq!(node.mapping.len(), 1);
        let mut freed = cut(&mut node, 10, 4096);
        freed.sort();
        assert_eq!(freed, vec![(110, 2), (112, 1), (113, 2)]);
        assert!(node.mapping.is_empty());
        assert_eq!(node.data_blocks(), 10);
    }
}
