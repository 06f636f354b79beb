//! The product of a layout policy: every inode and every block it owns.

use serde::{Deserialize, Serialize};

/// What an inode is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum InodeKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
}

/// A run of data blocks: file blocks `logical..logical+len` live at `physical..physical+len`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    /// First file (logical) block.
    pub logical: u64,
    /// First physical block.
    pub physical: u64,
    /// Number of blocks.
    pub len: u64,
}

/// The kind of a mapping block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum MapKind {
    /// Single indirect block (maps data blocks).
    Ind,
    /// Double indirect block (maps IND blocks).
    Dind,
    /// Triple indirect block (maps DIND blocks).
    Tind,
}

/// One mapping (metadata) block of a file: an indirect block of a block-mapped file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapBlock {
    /// Its kind.
    pub kind: MapKind,
    /// The first logical data block of the range it maps.
    pub logical: u64,
    /// Where it is.
    pub physical: u64,
}

/// One inode of the plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedInode {
    /// Inode number.
    pub ino: u32,
    /// File or directory.
    pub kind: InodeKind,
    /// Inode number of the directory it is linked in (the root links in itself: 2).
    pub parent: u32,
    /// Its name in the parent ("" for the root).
    pub name: String,
    /// Size in bytes (i_size).
    pub size_bytes: u64,
    /// Data runs in logical order (for a directory: its directory blocks).
    pub data: Vec<Run>,
    /// Mapping blocks, in the order the allocator allocated them.
    pub mapping: Vec<MapBlock>,
}

impl PlannedInode {
    /// Number of data blocks.
    pub fn data_blocks(&self) -> u64 {
        self.data.iter().map(|r| r.len).sum()
    }
}

/// Where a policy put everything.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// Policy name, e.g. "ext3-2007".
    pub policy: String,
    /// Inodes in creation order (directories before what they contain).
    pub inodes: Vec<PlannedInode>,
}

impl Plan {
    /// Total number of indirect (mapping) blocks in the plan.
    pub fn mapping_blocks(&self) -> u64 {
        self.inodes.iter().map(|i| i.mapping.len() as u64).sum()
    }
}
