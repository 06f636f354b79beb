//! The namespace bookkeeping an aging stream needs, shared by the ext3 and ext4 planners:
//! which planned inodes still live, how many names each has, where a rename moved a name,
//! which hard link takes over when an inode's first name goes, and the blocks a truncate
//! gives back. Where blocks go is the policies' business; this module only says which
//! blocks are free again.
//!
//! A plan lists inodes so that a directory comes before what it holds ([`Plan::check`]).
//! A tree copy makes them in that order; after renames the plan lists each inode where the
//! operation that last named it ran (its create, its rename, or the hard link that became
//! its first name), which keeps the rule: the directory it names existed then.
//!
//! [`Plan::check`]: crate::plan::Plan::check

use crate::mapping::required_mapping;
use crate::plan::{HardLink, PlannedInode, Run};

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
        if node.parent == parent && node.name == name {
            if self.nlink[index] == 0 {
                self.alive[index] = false;
                return true;
            }
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
        if node.parent == parent && node.name == name {
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

/// Every block an inode owns, data and mapping, as (start, length): what freeing it gives
/// back.
pub fn owned_blocks(node: &PlannedInode) -> Vec<(u64, u64)> {
    node.data
        .iter()
        .map(|r| (r.physical, r.len))
        .chain(node.mapping.iter().map(|m| (m.physical, 1)))
        .collect()
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
