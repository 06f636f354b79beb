//! Paths as small integers (issue 28): [`Population::check_tree`](crate::Population::check_tree)
//! hashes each operation's paths once and names each living path by an id, so that the
//! planners, which read a long aging stream once per policy, index by id instead of hashing
//! and comparing the path's bytes several times per operation in each pass.
//!
//! An id names one path while it lives: from the operation that makes it (mkdir, create,
//! symlink, link, mknod, the new name of a rename) to the one that removes it (unlink, rmdir,
//! the old name of a rename). A removed path's id is given to the next path made, so ids stay
//! below the most paths alive at once, not the stream's length: a table indexed by id is as
//! large as the tree. A path made again after its removal may get another id.

use rustc_hash::FxHashMap;

/// The root directory's id.
pub const ROOT_PATH_ID: u32 = 0;

/// The ids of one population's paths, operation by operation, as
/// [`CheckedTree::ops`](crate::CheckedTree::ops) gives them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PathIds {
    /// Per operation: its path's id and the id of the directory the path is in.
    ops: Vec<[u32; 2]>,
    /// Per rename and hard link, in order: the new name's id and its directory's (a rename),
    /// or the target's and its directory's (a link).
    others: Vec<[u32; 2]>,
    /// Every id is below this.
    pub(crate) count: u32,
}

impl PathIds {
    pub(crate) fn with_capacity(ops: usize) -> PathIds {
        PathIds {
            ops: Vec::with_capacity(ops),
            ..Default::default()
        }
    }

    pub(crate) fn push(&mut self, path: u32, dir: u32) {
        self.ops.push([path, dir]);
    }

    pub(crate) fn push_other(&mut self, path: u32, dir: u32) {
        self.others.push([path, dir]);
    }

    /// Every id is below this: the size of a table indexed by id.
    pub fn count(&self) -> usize {
        self.count as usize
    }

    /// Each operation of `ops` (the operations these ids were made from) with its ids.
    pub(crate) fn walk<'a>(
        &'a self,
        ops: &'a [crate::NsOp],
    ) -> impl Iterator<Item = (&'a crate::NsOp, OpPaths)> + 'a {
        debug_assert_eq!(ops.len(), self.ops.len());
        let mut others = self.others.iter();
        ops.iter().zip(&self.ops).map(move |(op, &[path, dir])| {
            let other = match op {
                crate::NsOp::Rename { .. } | crate::NsOp::Link { .. } => {
                    let &[p, d] = others.next().expect("an id per rename and link");
                    Some((p, d))
                }
                _ => None,
            };
            (op, OpPaths { path, dir, other })
        })
    }
}

/// One operation's paths as ids ([`PathIds`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpPaths {
    /// The path's ([`NsOp::path`](crate::NsOp::path)).
    pub path: u32,
    /// Its directory's.
    pub dir: u32,
    /// A rename's new name and its directory; a hard link's target and the target's
    /// directory; None for the other operations.
    pub other: Option<(u32, u32)>,
}

/// The living paths and their ids, reusing a removed path's id first.
pub(crate) struct Interner<'p> {
    live: FxHashMap<&'p str, u32>,
    free: Vec<u32>,
    next: u32,
}

impl<'p> Interner<'p> {
    /// The root alone, as [`ROOT_PATH_ID`].
    pub(crate) fn new() -> Interner<'p> {
        let mut live = FxHashMap::default();
        live.insert("", ROOT_PATH_ID);
        Interner {
            live,
            free: Vec::new(),
            next: ROOT_PATH_ID + 1,
        }
    }

    pub(crate) fn get(&self, path: &str) -> Option<u32> {
        self.live.get(path).copied()
    }

    /// An id for the new path `path`; None when it lives already.
    pub(crate) fn make(&mut self, path: &'p str) -> Option<u32> {
        match self.live.entry(path) {
            std::collections::hash_map::Entry::Occupied(_) => None,
            std::collections::hash_map::Entry::Vacant(v) => {
                let id = self.free.pop().unwrap_or_else(|| {
                    self.next += 1;
                    self.next - 1
                });
                Some(*v.insert(id))
            }
        }
    }

    /// `path` is removed: its id goes to a later path.
    pub(crate) fn remove(&mut self, path: &str) {
        if let Some(id) = self.live.remove(path) {
            self.free.push(id);
        }
    }

    /// Every id given is below this.
    pub(crate) fn count(&self) -> u32 {
        self.next
    }
}
