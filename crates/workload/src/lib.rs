//! Workloads: what a file system holds and how it got there.
//!
//! This crate owns [`Population`] (namespace operations in the order they happen: mkdir,
//! create with a size, append to a file, ...), the named populations (`bench5`, `ubuntu-32g`; TOML ones under `populations/`) and their scaling. It knows
//! nothing of where blocks go (that is `layoutlab-layout`) and writes nothing to disk.
//!
//! ```
//! use layoutlab_workload::population_by_name;
//! let pop = population_by_name("bench5").unwrap().scale(0.01).unwrap();
//! assert_eq!(pop.ops.len(), 350);
//! assert!(population_by_name("nope").unwrap_err().to_string().contains("bench5"));
//! ```

use serde::{Deserialize, Serialize};

pub mod aging;
mod paths;
pub mod populations;

use paths::Interner;
pub use paths::{OpPaths, PathIds, ROOT_PATH_ID};

/// One namespace operation. Paths are relative to the file system's root, '/'-separated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NsOp {
    /// Make a directory.
    Mkdir {
        /// The directory's path.
        path: String,
    },
    /// Create a regular file and write `bytes` to it sequentially. The writer keeps the file
    /// open while later [`NsOp::Append`]s write to it and closes it after the file's last
    /// write (at once when no append follows).
    Create {
        /// The file's path.
        path: String,
        /// Bytes written.
        bytes: u64,
    },
    /// Write `bytes` more at the end of the existing regular file `path` (made by an earlier
    /// [`NsOp::Create`], or a hard link to one), as write(2) on a descriptor opened with
    /// O_APPEND: the size grows by `bytes`, filling the last partial block first.
    ///
    /// The writer is the one that created the file, which has kept it open since: what a
    /// file system keeps per open file between writes (ext3's reservation window, its goal
    /// of "last allocated block + 1") carries over from the file's previous write. Between
    /// two appends of one file any other operations may run — two `Append` streams taking
    /// turns are two writers interleaving. Anything done between the writes that does not
    /// change the namespace (fsync, fdatasync) is not an operation: a policy whose file
    /// system allocates at write time is not affected by it, and one that delays
    /// allocation must say what it assumes.
    Append {
        /// The file written to.
        path: String,
        /// Bytes added at its end.
        bytes: u64,
    },
    /// Make a symbolic link `path` whose target is the text `target` (symlink(2): the
    /// target need not exist).
    Symlink {
        /// The link's path.
        path: String,
        /// The text it holds.
        target: String,
    },
    /// Make `path` another name (a hard link, link(2)) of the existing non-directory
    /// `target`, a path made by an earlier operation.
    Link {
        /// The new name.
        path: String,
        /// The existing name it joins.
        target: String,
    },
    /// Make a device node, fifo or socket (mknod(2)).
    Mknod {
        /// The node's path.
        path: String,
        /// What kind of node.
        node: NodeKind,
        /// Device major number (what a character or block device names; a fifo or socket has none).
        major: u32,
        /// Device minor number (likewise).
        minor: u32,
    },
    /// Open the existing regular file `path` with O_APPEND, write `bytes` at its end and
    /// close it: a new writer, unlike [`NsOp::Append`]. Nothing carries over from the file's
    /// earlier writes but what its inode holds (its blocks: a file system's goal continues
    /// from the last one); what a file system keeps per open file starts afresh. The
    /// operation of an aging stream that grows a file.
    Extend {
        /// The file written to.
        path: String,
        /// Bytes added at its end.
        bytes: u64,
    },
    /// truncate(2) the regular file `path` to `bytes` (at most its size: holes are not
    /// modelled), freeing the blocks beyond the new end.
    Truncate {
        /// The file cut.
        path: String,
        /// Its new size.
        bytes: u64,
    },
    /// unlink(2) the non-directory name `path`; the inode and its blocks are freed with its
    /// last name.
    Unlink {
        /// The name removed.
        path: String,
    },
    /// rename(2) the non-directory `path` to `to`, a name that does not exist yet, in any
    /// existing directory. Directories are not renamed (a directory rename moves no blocks,
    /// only the entry; it is not modelled).
    Rename {
        /// The name moved.
        path: String,
        /// Its new name.
        to: String,
    },
    /// rmdir(2) the empty directory `path`; its inode and blocks are freed.
    Rmdir {
        /// The directory removed.
        path: String,
    },
}

impl NsOp {
    /// The path the operation makes (for [`NsOp::Append`]: the file it writes to).
    pub fn path(&self) -> &str {
        match self {
            NsOp::Mkdir { path }
            | NsOp::Create { path, .. }
            | NsOp::Append { path, .. }
            | NsOp::Symlink { path, .. }
            | NsOp::Link { path, .. }
            | NsOp::Mknod { path, .. }
            | NsOp::Extend { path, .. }
            | NsOp::Truncate { path, .. }
            | NsOp::Unlink { path }
            | NsOp::Rename { path, .. }
            | NsOp::Rmdir { path } => path,
        }
    }

    /// The operation's name as a shell command would say it, for messages.
    pub fn verb(&self) -> &'static str {
        match self {
            NsOp::Mkdir { .. } => "mkdir",
            NsOp::Create { .. } => "create",
            NsOp::Append { .. } => "append",
            NsOp::Symlink { .. } => "symlink",
            NsOp::Link { .. } => "link",
            NsOp::Mknod { .. } => "mknod",
            NsOp::Extend { .. } => "extend",
            NsOp::Truncate { .. } => "truncate",
            NsOp::Unlink { .. } => "unlink",
            NsOp::Rename { .. } => "rename",
            NsOp::Rmdir { .. } => "rmdir",
        }
    }

    /// The file data the operation writes (create, append, extend): what a writeback
    /// interval counts.
    pub fn data_bytes(&self) -> u64 {
        match self {
            NsOp::Create { bytes, .. }
            | NsOp::Append { bytes, .. }
            | NsOp::Extend { bytes, .. } => *bytes,
            _ => 0,
        }
    }

    /// True for the operations that remove or shrink something (unlink, rmdir, truncate,
    /// rename) or reopen a file (extend): those of an aging stream, which a tree copy does
    /// not make.
    pub fn is_aging(&self) -> bool {
        matches!(
            self,
            NsOp::Extend { .. }
                | NsOp::Truncate { .. }
                | NsOp::Unlink { .. }
                | NsOp::Rename { .. }
                | NsOp::Rmdir { .. }
        )
    }
}

/// What `mknod` makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NodeKind {
    /// A character device.
    Char,
    /// A block device.
    Block,
    /// A named pipe.
    Fifo,
    /// A unix-domain socket.
    Socket,
}

/// Statistics of a population (see [`Population::stats`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PopulationStats {
    /// Regular files (inodes).
    pub regular_files: u64,
    /// Directories, the root and lost+found included.
    pub directories: u64,
    /// Symlinks.
    pub symlinks: u64,
    /// Symlinks of at most 59 bytes (kept in the inode).
    pub fast_symlinks: u64,
    /// Names beyond an inode's first.
    pub hard_links: u64,
    /// Character devices.
    pub char_devices: u64,
    /// Block devices.
    pub block_devices: u64,
    /// Fifos.
    pub fifos: u64,
    /// Sockets.
    pub sockets: u64,
    /// Files of 2 GiB or more.
    pub large_files: u64,
    /// Inodes in use once made, the reserved ones included (as e2fsck counts).
    pub inodes_used: u64,
    /// Bytes of regular-file data.
    pub file_bytes: u64,
    /// 4 KiB blocks of file data and slow-symlink targets (no metadata, no directories).
    pub data_blocks: u64,
    /// Deepest path, in components.
    pub max_depth: u64,
    /// Regular files by size: power-of-two buckets.
    pub size_histogram: Vec<SizeBucket>,
}

/// Files below `below_bytes` (and at least half of it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeBucket {
    /// Upper bound (exclusive) of the bucket; 1 for empty files.
    pub below_bytes: u64,
    /// Files in it.
    pub files: u64,
}

/// Longest symlink target (the kernel allows a block less its NUL; 4 KiB blocks assumed).
pub const MAX_SYMLINK_TARGET_BYTES: usize = 4095;

/// The operations that build a file system's contents, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Population {
    /// Population name, e.g. "bench5".
    pub name: String,
    /// Size of the file system the population is meant for, in bytes.
    pub fs_bytes: u64,
    /// Operations in order.
    pub ops: Vec<NsOp>,
}

/// A population whose operations passed [`Population::check_tree`], borrowed, with its paths
/// as ids ([`PathIds`]): several planners reading one long aging stream check it once
/// between them instead of once each (issue 28: metacluster-aging's four policies each
/// checked ubuntu-32g's 36 million operations again, a tenth of the planning's CPU), and
/// index by path id instead of hashing paths. Made by [`Checked::tree`] or
/// [`CheckedPopulation::tree`].
#[derive(Clone, Copy, Debug)]
pub struct CheckedTree<'a> {
    pop: &'a Population,
    ids: &'a PathIds,
}

impl<'a> CheckedTree<'a> {
    /// The population checked.
    pub fn population(self) -> &'a Population {
        self.pop
    }

    /// Every path id is below this ([`PathIds::count`]).
    pub fn path_ids(self) -> usize {
        self.ids.count()
    }

    /// Each operation, in order, with its paths as ids.
    pub fn ops(self) -> impl Iterator<Item = (&'a NsOp, OpPaths)> + 'a {
        self.ids.walk(&self.pop.ops)
    }
}

/// A borrowed population that passed [`Population::check_tree`], and its path ids.
#[derive(Clone, Debug)]
pub struct Checked<'a> {
    pop: &'a Population,
    ids: PathIds,
}

impl<'a> Checked<'a> {
    /// `pop`, once [`Population::check_tree`] passes; its error otherwise.
    pub fn new(pop: &'a Population) -> Result<Checked<'a>, Error> {
        let ids = pop.path_ids()?;
        Ok(Checked { pop, ids })
    }

    /// The population, checked, for the planners.
    pub fn tree(&self) -> CheckedTree<'_> {
        CheckedTree {
            pop: self.pop,
            ids: &self.ids,
        }
    }
}

/// A population that passed [`Population::check_tree`], owned, with its path ids: checked
/// on the thread that made it (the next workload's aging stream, made while another's passes
/// run; issue 28) and planned on others as a [`CheckedTree`] without a second check.
#[derive(Clone, Debug)]
pub struct CheckedPopulation(Population, PathIds);

impl CheckedPopulation {
    /// `pop`, once [`Population::check_tree`] passes; its error otherwise.
    pub fn new(pop: Population) -> Result<CheckedPopulation, Error> {
        let ids = pop.path_ids()?;
        Ok(CheckedPopulation(pop, ids))
    }

    /// The population, checked, for the planners.
    pub fn tree(&self) -> CheckedTree<'_> {
        CheckedTree {
            pop: &self.0,
            ids: &self.1,
        }
    }

    /// The population.
    pub fn population(&self) -> &Population {
        &self.0
    }
}

/// Why a workload could not be built.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum Error {
    /// No population has this name.
    #[error("unknown population '{name}'; valid populations: {} (or a path to a population .toml)", valid.join(", "))]
    UnknownPopulation {
        /// The name asked for.
        name: String,
        /// Every valid name.
        valid: Vec<&'static str>,
    },
    /// An operation that cannot be done on the tree the earlier ones made.
    #[error("ops[{index}] ({verb} '{path}'): {reason}")]
    BadTree {
        /// Index of the operation in [`Population::ops`].
        index: usize,
        /// What it does.
        verb: &'static str,
        /// The path it makes.
        path: String,
        /// Why it cannot be done, and what would make it possible.
        reason: String,
    },
    /// A population file that cannot be used.
    #[error("population {source_name}: {key}: {reason}")]
    BadPopulation {
        /// The file (or "embedded NAME").
        source_name: String,
        /// The key at fault.
        key: String,
        /// Why, and what would do.
        reason: String,
    },
    /// An aging stream that cannot be made: a parameter out of range, or a target the tree
    /// cannot reach (see [`aging::AgingSpec`]).
    #[error("{source_name}: [aging] {key}: {reason}")]
    BadAging {
        /// Where the spec came from (a file, or "aging spec").
        source_name: String,
        /// The parameter at fault.
        key: String,
        /// Why, and what would do.
        reason: String,
    },
    /// A scale factor that is not a finite number in (0, 1].
    #[error("scale factor {0} is not in (0, 1]")]
    BadScale(f64),
    /// Scaling left the file system too small to be made.
    #[error("scale factor {scale} leaves a {fs_bytes}-byte file system; at least {min_bytes} bytes are needed")]
    TooSmall {
        /// The factor.
        scale: f64,
        /// Resulting size.
        fs_bytes: u64,
        /// Smallest size accepted.
        min_bytes: u64,
    },
}

/// Names of the built-in populations.
pub const POPULATION_NAMES: &[&str] = &["bench5", "bench5-10tb", "ubuntu-32g"];

const UBUNTU_32G_TOML: &str = include_str!("../../../populations/ubuntu-32g.toml");

/// The built-in population `name` at full scale, or the tree population of a TOML file when
/// `name` ends in `.toml` or names an existing file (the format of `populations/*.toml`).
///
/// Errors with [`Error::UnknownPopulation`], whose message lists the valid names, or
/// [`Error::BadPopulation`] naming the file, the key and why.
pub fn population_by_name(name: &str) -> Result<Population, Error> {
    if !POPULATION_NAMES.contains(&name)
        && (name.ends_with(".toml") || std::path::Path::new(name).is_file())
    {
        let text = std::fs::read_to_string(name).map_err(|e| Error::BadPopulation {
            source_name: name.to_string(),
            key: "(file)".to_string(),
            reason: format!("cannot read it: {e}"),
        })?;
        return Ok(populations::tree::TreePopulation::from_toml_str(&text, name)?.generate());
    }
    match name {
        "bench5" => Ok(populations::bench5::bench5()),
        "bench5-10tb" => Ok(populations::bench5::bench5_10tb()),
        "ubuntu-32g" => Ok(populations::tree::TreePopulation::from_toml_str(
            UBUNTU_32G_TOML,
            "embedded ubuntu-32g",
        )?
        .generate()),
        _ => Err(Error::UnknownPopulation {
            name: name.to_string(),
            valid: POPULATION_NAMES.to_vec(),
        }),
    }
}

/// The population `name` (as [`population_by_name`]) at `factor` of its size: a tree
/// population (ubuntu-32g, a `.toml` file) shrinks in every count, its file system and its
/// data ([`populations::tree::TreePopulation::shrink`]): the same shape at fewer files; any
/// other (bench5) keeps its files and shrinks their sizes and the file system
/// ([`Population::scale`]).
pub fn population_shrunk(name: &str, factor: f64) -> Result<Population, Error> {
    let text = if name == "ubuntu-32g" {
        Some((
            UBUNTU_32G_TOML.to_string(),
            "embedded ubuntu-32g".to_string(),
        ))
    } else if !POPULATION_NAMES.contains(&name)
        && (name.ends_with(".toml") || std::path::Path::new(name).is_file())
    {
        let text = std::fs::read_to_string(name).map_err(|e| Error::BadPopulation {
            source_name: name.to_string(),
            key: "(file)".to_string(),
            reason: format!("cannot read it: {e}"),
        })?;
        Some((text, name.to_string()))
    } else {
        None
    };
    match text {
        Some((text, source)) => Ok(populations::tree::TreePopulation::from_toml_str(
            &text, &source,
        )?
        .shrink(factor)?
        .generate()),
        None => population_by_name(name)?.scale(factor),
    }
}

/// Smallest file system a scaled population may ask for: 64 MiB, so that mke2fs still
/// makes 4 KiB blocks, a journal and a few block groups.
pub const MIN_FS_BYTES: u64 = 64 << 20;

impl Population {
    /// `copies` copies of this population side by side on a file system `copies` times as
    /// large: copy `k` (from 1) is made under its own top directory `copyK`, one copy after the
    /// other, as `cp -a` of each tree would make them (issue 29's trees filling a large file
    /// system). Every path, hard-link target and rename target moves under the copy's
    /// directory; symlink targets are text and stay as they are (their lengths decide fast or
    /// slow symlinks). One copy is this population unchanged.
    pub fn copies(&self, copies: u32) -> Result<Population, Error> {
        let bad = |reason: String| Error::BadPopulation {
            source_name: self.name.clone(),
            key: "copies".to_string(),
            reason,
        };
        if copies == 0 {
            return Err(bad("0 copies: at least 1".to_string()));
        }
        if copies == 1 {
            return Ok(self.clone());
        }
        let fs_bytes = self
            .fs_bytes
            .checked_mul(u64::from(copies))
            .ok_or_else(|| bad(format!("{copies} copies overflow the file system size")))?;
        let mut ops = Vec::with_capacity((self.ops.len() + 1) * copies as usize);
        for k in 1..=copies {
            let top = format!("copy{k}");
            let under = |p: &str| format!("{top}/{p}");
            ops.push(NsOp::Mkdir { path: top.clone() });
            ops.extend(self.ops.iter().map(|op| match op {
                NsOp::Mkdir { path } => NsOp::Mkdir { path: under(path) },
                NsOp::Create { path, bytes } => NsOp::Create {
                    path: under(path),
                    bytes: *bytes,
                },
                NsOp::Append { path, bytes } => NsOp::Append {
                    path: under(path),
                    bytes: *bytes,
                },
                NsOp::Symlink { path, target } => NsOp::Symlink {
                    path: under(path),
                    target: target.clone(),
                },
                NsOp::Link { path, target } => NsOp::Link {
                    path: under(path),
                    target: under(target),
                },
                NsOp::Mknod {
                    path,
                    node,
                    major,
                    minor,
                } => NsOp::Mknod {
                    path: under(path),
                    node: *node,
                    major: *major,
                    minor: *minor,
                },
                NsOp::Extend { path, bytes } => NsOp::Extend {
                    path: under(path),
                    bytes: *bytes,
                },
                NsOp::Truncate { path, bytes } => NsOp::Truncate {
                    path: under(path),
                    bytes: *bytes,
                },
                NsOp::Unlink { path } => NsOp::Unlink { path: under(path) },
                NsOp::Rename { path, to } => NsOp::Rename {
                    path: under(path),
                    to: under(to),
                },
                NsOp::Rmdir { path } => NsOp::Rmdir { path: under(path) },
            }));
        }
        Ok(Population {
            name: format!("{}x{copies}", self.name),
            fs_bytes,
            ops,
        })
    }

    /// Shrinks the file system and every file by `factor` (0 < factor ≤ 1), keeping the
    /// order and the names. Sizes are rounded down to whole bytes; a file never shrinks to
    /// zero unless it was empty.
    pub fn scale(&self, factor: f64) -> Result<Population, Error> {
        if !factor.is_finite() || factor <= 0.0 || factor > 1.0 {
            return Err(Error::BadScale(factor));
        }
        let shrink = |bytes: u64| -> u64 {
            if bytes == 0 {
                0
            } else {
                ((bytes as f64 * factor) as u64).max(1)
            }
        };
        let fs_bytes = shrink(self.fs_bytes);
        if fs_bytes < MIN_FS_BYTES {
            return Err(Error::TooSmall {
                scale: factor,
                fs_bytes,
                min_bytes: MIN_FS_BYTES,
            });
        }
        // Each file's scaled size (by any of its names), so that a truncate never asks
        // for more than the scaled file holds: the sum of rounded-down parts can be below
        // the rounded-down whole.
        let mut file_of: std::collections::HashMap<&str, usize> = Default::default();
        let mut size: Vec<u64> = Vec::new();
        let mut ops = Vec::with_capacity(self.ops.len());
        for op in &self.ops {
            ops.push(match op {
                NsOp::Create { path, bytes } => {
                    file_of.insert(path, size.len());
                    size.push(shrink(*bytes));
                    NsOp::Create {
                        path: path.clone(),
                        bytes: shrink(*bytes),
                    }
                }
                NsOp::Append { path, bytes } | NsOp::Extend { path, bytes } => {
                    if let Some(&f) = file_of.get(path.as_str()) {
                        size[f] += shrink(*bytes);
                    }
                    let (path, bytes) = (path.clone(), shrink(*bytes));
                    match op {
                        NsOp::Append { .. } => NsOp::Append { path, bytes },
                        _ => NsOp::Extend { path, bytes },
                    }
                }
                NsOp::Truncate { path, bytes } => {
                    let mut bytes = shrink(*bytes);
                    if let Some(&f) = file_of.get(path.as_str()) {
                        bytes = bytes.min(size[f]);
                        size[f] = bytes;
                    }
                    NsOp::Truncate {
                        path: path.clone(),
                        bytes,
                    }
                }
                NsOp::Link { path, target } => {
                    if let Some(&f) = file_of.get(target.as_str()) {
                        file_of.insert(path, f);
                    }
                    op.clone()
                }
                NsOp::Rename { path, to } => {
                    if let Some(f) = file_of.remove(path.as_str()) {
                        file_of.insert(to, f);
                    }
                    op.clone()
                }
                NsOp::Unlink { path } => {
                    file_of.remove(path.as_str());
                    op.clone()
                }
                other => other.clone(),
            });
        }
        Ok(Population {
            name: self.name.clone(),
            fs_bytes,
            ops,
        })
    }

    /// Total bytes of regular-file data the population writes (creates, appends and
    /// extends; truncates and unlinks do not take any back).
    pub fn file_bytes(&self) -> u64 {
        self.ops
            .iter()
            .map(|op| match op {
                NsOp::Create { bytes, .. }
                | NsOp::Append { bytes, .. }
                | NsOp::Extend { bytes, .. } => *bytes,
                _ => 0,
            })
            .sum()
    }

    /// Each regular file that still has a name once every operation is done, with its final
    /// size, in creation order, named by its first name (the path of its [`NsOp::Create`],
    /// or where a rename moved it; when that name is unlinked, its oldest hard link).
    /// Appends, extends and truncates through a hard link count for the file it names.
    /// Operations [`Population::check_tree`] would refuse are skipped.
    pub fn file_sizes(&self) -> Vec<(&str, u64)> {
        // per file: its size and its names, first name first
        let mut files: Vec<(u64, Vec<&str>)> = Vec::new();
        // every name of a regular file -> its index in `files`
        let mut by_name: std::collections::HashMap<&str, usize> = Default::default();
        for op in &self.ops {
            match op {
                NsOp::Create { path, bytes } => {
                    if by_name.contains_key(path.as_str()) {
                        continue;
                    }
                    by_name.insert(path, files.len());
                    files.push((*bytes, vec![path]));
                }
                NsOp::Append { path, bytes } | NsOp::Extend { path, bytes } => {
                    if let Some(&i) = by_name.get(path.as_str()) {
                        files[i].0 += bytes;
                    }
                }
                NsOp::Truncate { path, bytes } => {
                    if let Some(&i) = by_name.get(path.as_str()) {
                        files[i].0 = files[i].0.min(*bytes);
                    }
                }
                NsOp::Link { path, target } => {
                    if let Some(&i) = by_name.get(target.as_str()) {
                        by_name.insert(path, i);
                        files[i].1.push(path);
                    }
                }
                NsOp::Rename { path, to } => {
                    if let Some(i) = by_name.remove(path.as_str()) {
                        by_name.insert(to, i);
                        for name in files[i].1.iter_mut() {
                            if *name == path.as_str() {
                                *name = to;
                            }
                        }
                    }
                }
                NsOp::Unlink { path } => {
                    if let Some(i) = by_name.remove(path.as_str()) {
                        files[i].1.retain(|n| *n != path.as_str());
                    }
                }
                _ => {}
            }
        }
        files
            .into_iter()
            .filter_map(|(size, names)| names.first().map(|n| (*n, size)))
            .collect()
    }

    /// Counts by kind, data volume, depth and the size histogram (what `layoutlab workload
    /// show` prints). Directories count the root and lost+found, as e2fsck does;
    /// `inodes_used` adds the 9 other reserved inodes (1, 3-10) e2fsck counts as used.
    pub fn stats(&self) -> PopulationStats {
        let mut st = PopulationStats {
            directories: 2,
            ..Default::default()
        };
        let mut hist = std::collections::BTreeMap::new();
        // The tree once every operation is done: each path's inode, each inode's kind and
        // number of names (a rename moves a name, an unlink or rmdir drops one).
        #[derive(Clone, Copy)]
        enum Kind {
            Dir,
            File,
            Symlink { fast: bool },
            Node(NodeKind),
        }
        let mut inode_of: std::collections::HashMap<&str, usize> = Default::default();
        let mut inodes: Vec<(Kind, u64)> = Vec::new();
        for op in &self.ops {
            let path = op.path();
            let new = match op {
                NsOp::Mkdir { .. } => Some(Kind::Dir),
                NsOp::Create { .. } => Some(Kind::File),
                NsOp::Symlink { target, .. } => Some(Kind::Symlink {
                    fast: target.len() <= 59,
                }),
                NsOp::Mknod { node, .. } => Some(Kind::Node(*node)),
                _ => None,
            };
            if let Some(kind) = new {
                if !inode_of.contains_key(path) {
                    inode_of.insert(path, inodes.len());
                    inodes.push((kind, 1));
                }
                continue;
            }
            match op {
                NsOp::Link { target, .. } => {
                    if let Some(&i) = inode_of.get(target.as_str()) {
                        if !inode_of.contains_key(path) {
                            inode_of.insert(path, i);
                            inodes[i].1 += 1;
                        }
                    }
                }
                NsOp::Unlink { .. } | NsOp::Rmdir { .. } => {
                    if let Some(i) = inode_of.remove(path) {
                        inodes[i].1 -= 1;
                    }
                }
                NsOp::Rename { to, .. } => {
                    if let Some(i) = inode_of.remove(path) {
                        inode_of.insert(to, i);
                    }
                }
                _ => {}
            }
        }
        for path in inode_of.keys() {
            let depth = path.matches('/').count() as u64 + 1;
            st.max_depth = st.max_depth.max(depth);
        }
        for &(kind, names) in inodes.iter().filter(|(_, n)| *n > 0) {
            match kind {
                Kind::Dir => st.directories += 1,
                // sizes once every write and truncate is done: below
                Kind::File => {}
                Kind::Symlink { fast } => {
                    st.symlinks += 1;
                    if fast {
                        st.fast_symlinks += 1;
                    } else {
                        st.data_blocks += 1;
                    }
                }
                Kind::Node(node) => match node {
                    NodeKind::Char => st.char_devices += 1,
                    NodeKind::Block => st.block_devices += 1,
                    NodeKind::Fifo => st.fifos += 1,
                    NodeKind::Socket => st.sockets += 1,
                },
            }
            if !matches!(kind, Kind::Dir) {
                st.hard_links += names - 1;
            }
        }
        for (_, bytes) in self.file_sizes() {
            st.regular_files += 1;
            st.file_bytes += bytes;
            st.data_blocks += bytes.div_ceil(4096);
            if bytes >= 2 << 30 {
                st.large_files += 1;
            }
            // power-of-two buckets: "< 2^k bytes"
            let bucket = 64 - bytes.leading_zeros();
            *hist.entry(bucket).or_insert(0u64) += 1;
        }
        st.inodes_used = 9
            + st.directories
            + st.regular_files
            + st.symlinks
            + st.char_devices
            + st.block_devices
            + st.fifos
            + st.sockets;
        st.size_histogram = hist
            .into_iter()
            .map(|(bucket, files)| SizeBucket {
                below_bytes: if bucket >= 64 {
                    u64::MAX
                } else {
                    1u64 << bucket
                },
                files,
            })
            .collect();
        st
    }

    /// Checks that every operation can be done in order: a valid name, a parent directory
    /// that exists, no name made twice, a hard link naming an existing non-directory, a
    /// symlink target of 1..=4095 bytes without NUL, an append or extend naming an existing
    /// regular file (an append only while the writer that created the file has it: before
    /// any extend, truncate, rename or unlink touched it), a truncate to at most the file's
    /// size, an unlink or rename of an existing non-directory (to a new name), an rmdir of
    /// an existing empty directory. Returns the first impossible operation as
    /// [`Error::BadTree`], naming it and why.
    pub fn check_tree(&self) -> Result<(), Error> {
        self.path_ids().map(|_| ())
    }

    /// [`Population::check_tree`], which names each path by a small integer as it goes:
    /// those integers, for the planners ([`CheckedPopulation`]). Its error otherwise.
    fn path_ids(&self) -> Result<PathIds, Error> {
        #[derive(Clone, Copy, PartialEq)]
        enum Made {
            Dir,
            /// A regular file: its number.
            File(usize),
            Other,
        }
        let valid_name = |path: &str| -> Result<(), String> {
            let name = path.rsplit_once('/').map_or(path, |(_, n)| n);
            if name.is_empty()
                || name.len() > 255
                || name == "."
                || name == ".."
                || path.contains('\0')
            {
                return Err("a name must be 1..=255 bytes, not '.' or '..', without NUL".into());
            }
            Ok(())
        };
        // The living paths by id (the root is id 0); per id: what it names, its directory's
        // id and (a directory) how many entries it has. Each path is hashed here and nowhere
        // else: the planners index by id (issue 28).
        let mut paths = Interner::new();
        let mut made: Vec<Made> = vec![Made::Dir];
        let mut dir_of: Vec<u32> = vec![ROOT_PATH_ID];
        let mut children: Vec<u64> = vec![0];
        let mut ids = PathIds::with_capacity(self.ops.len());
        // per regular file: its size, and whether its creating writer has closed it
        let mut files: Vec<(u64, bool)> = Vec::new();
        for (index, op) in self.ops.iter().enumerate() {
            let path = op.path();
            let bad = |reason: String| Error::BadTree {
                index,
                verb: op.verb(),
                path: path.to_string(),
                reason,
            };
            let existing = match op {
                NsOp::Append { .. }
                | NsOp::Extend { .. }
                | NsOp::Truncate { .. }
                | NsOp::Unlink { .. }
                | NsOp::Rename { .. }
                | NsOp::Rmdir { .. } => Some(paths.get(path).ok_or_else(|| {
                    bad(
                        "it does not exist (no earlier operation made it, or it was removed)"
                            .into(),
                    )
                })?),
                _ => None,
            };
            if let Some(id) = existing {
                let (kind, dir) = (made[id as usize], dir_of[id as usize]);
                ids.push(id, dir);
                let file = match kind {
                    Made::File(f) => Some(f),
                    _ => None,
                };
                match op {
                    NsOp::Append { bytes, .. } | NsOp::Extend { bytes, .. } => {
                        let Some(f) = file else {
                            return Err(bad(
                                "not a regular file (only a created file, or a hard link to one, can be written to)".into(),
                            ));
                        };
                        if matches!(op, NsOp::Append { .. }) && files[f].1 {
                            return Err(bad(
                                "the writer that created the file closed it when an earlier extend, truncate, rename or unlink touched it (use extend: a new writer)".into(),
                            ));
                        }
                        files[f].0 += bytes;
                    }
                    NsOp::Truncate { bytes, .. } => {
                        let Some(f) = file else {
                            return Err(bad("not a regular file".into()));
                        };
                        if *bytes > files[f].0 {
                            return Err(bad(format!(
                                "bytes = {bytes} is more than the file's {} bytes (a truncate may only shrink a file: holes are not modelled)",
                                files[f].0
                            )));
                        }
                        files[f] = (*bytes, true);
                    }
                    NsOp::Unlink { .. } => {
                        if kind == Made::Dir {
                            return Err(bad("a directory (use rmdir)".into()));
                        }
                        if let Some(f) = file {
                            files[f].1 = true;
                        }
                        paths.remove(path);
                        children[dir as usize] -= 1;
                    }
                    NsOp::Rename { to, .. } => {
                        if kind == Made::Dir {
                            return Err(bad(
                                "a directory (directories are not renamed: a rename of one moves no blocks and is not modelled)".into(),
                            ));
                        }
                        valid_name(to).map_err(|e| bad(format!("new name '{to}': {e}")))?;
                        // a borrowed parent, not a String per rename
                        let to_parent = to.rsplit_once('/').map_or("", |(d, _)| d);
                        let to_dir = match paths.get(to_parent) {
                            Some(d) if made[d as usize] == Made::Dir => d,
                            _ => {
                                return Err(bad(format!(
                                    "the new name's directory '{to_parent}' does not exist"
                                )))
                            }
                        };
                        // made before the old name goes: the two names have two ids
                        let Some(to_id) = paths.make(to) else {
                            return Err(bad(format!(
                                "the new name '{to}' already exists (renames do not replace)"
                            )));
                        };
                        if let Some(f) = file {
                            files[f].1 = true;
                        }
                        paths.remove(path);
                        ids.push_other(to_id, to_dir);
                        name_id(&mut made, &mut dir_of, &mut children, to_id, kind, to_dir);
                        children[dir as usize] -= 1;
                        children[to_dir as usize] += 1;
                    }
                    NsOp::Rmdir { .. } => {
                        if kind != Made::Dir {
                            return Err(bad("not a directory (use unlink)".into()));
                        }
                        let n = children[id as usize];
                        if n > 0 {
                            return Err(bad(format!("the directory is not empty ({n} entries)")));
                        }
                        paths.remove(path);
                        children[dir as usize] -= 1;
                    }
                    _ => unreachable!("only operations on existing paths"),
                }
                continue;
            }
            let (parent, _) = path.rsplit_once('/').unwrap_or(("", path));
            valid_name(path).map_err(bad)?;
            let dir = match paths.get(parent) {
                Some(d) if made[d as usize] == Made::Dir => d,
                Some(_) => return Err(bad(format!("parent '{parent}' is not a directory"))),
                None => {
                    return Err(bad(format!(
                        "parent directory '{parent}' does not exist (make it with an earlier mkdir)"
                    )))
                }
            };
            let Some(id) = paths.make(path) else {
                return Err(bad("the path already exists".into()));
            };
            ids.push(id, dir);
            let kind = match op {
                NsOp::Link { target, .. } => match paths.get(target) {
                    None => {
                        return Err(bad(format!(
                            "hard link target '{target}' does not exist (it must be made by an earlier operation)"
                        )))
                    }
                    Some(t) if made[t as usize] == Made::Dir => {
                        return Err(bad(format!(
                            "hard link target '{target}' is a directory (directories cannot be hard-linked)"
                        )))
                    }
                    Some(t) => {
                        ids.push_other(t, dir_of[t as usize]);
                        made[t as usize]
                    }
                },
                NsOp::Symlink { target, .. }
                    if target.is_empty()
                        || target.len() > MAX_SYMLINK_TARGET_BYTES
                        || target.contains('\0') =>
                {
                    return Err(bad(format!(
                        "symlink target of {} bytes: it must be 1..={MAX_SYMLINK_TARGET_BYTES} bytes without NUL",
                        target.len()
                    )));
                }
                NsOp::Mkdir { .. } => Made::Dir,
                NsOp::Create { bytes, .. } => {
                    files.push((*bytes, false));
                    Made::File(files.len() - 1)
                }
                _ => Made::Other,
            };
            name_id(&mut made, &mut dir_of, &mut children, id, kind, dir);
            children[dir as usize] += 1;
        }
        ids.count = paths.count();
        return Ok(ids);

        /// Records what the new (or reused) `id` names, in directory `dir`, with no entries.
        fn name_id<T: Copy>(
            made: &mut Vec<T>,
            dir_of: &mut Vec<u32>,
            children: &mut Vec<u64>,
            id: u32,
            kind: T,
            dir: u32,
        ) {
            let i = id as usize;
            if i == made.len() {
                made.push(kind);
                dir_of.push(dir);
                children.push(0);
            } else {
                (made[i], dir_of[i], children[i]) = (kind, dir, 0);
            }
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_population_file_is_read_by_path() {
        let dir = std::env::temp_dir().join(format!("layoutlab-pop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = include_str!("../../../populations/ubuntu-32g.toml");
        let good = dir.join("mine.toml");
        std::fs::write(&good, text.replace("seed = 2009", "seed = 7")).unwrap();
        let pop = population_by_name(good.to_str().unwrap()).unwrap();
        assert_eq!(pop.fs_bytes, 34_359_738_368);
        let bad = dir.join("bad.toml");
        std::fs::write(&bad, text.replace("directories = 28022", "directories = 1")).unwrap();
        let e = population_by_name(bad.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("bad.toml") && e.contains("counts.directories"),
            "{e}"
        );
        let e = population_by_name("/no/such/tree.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/no/such/tree.toml") && e.contains("cannot read"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    use super::*;

    #[test]
    fn copies_put_each_tree_under_its_own_directory() {
        let one = population_shrunk("ubuntu-32g", 0.01).unwrap();
        let three = one.copies(3).unwrap();
        assert_eq!(three.fs_bytes, 3 * one.fs_bytes);
        assert_eq!(three.ops.len(), 3 * (one.ops.len() + 1));
        let (a, b) = (one.stats(), three.stats());
        assert_eq!(b.regular_files, 3 * a.regular_files);
        assert_eq!(b.hard_links, 3 * a.hard_links);
        assert_eq!(b.symlinks, 3 * a.symlinks);
        assert_eq!(b.fast_symlinks, 3 * a.fast_symlinks);
        assert_eq!(b.file_bytes, 3 * a.file_bytes);
        // the root and lost+found once, each copy's tree and its top directory
        assert_eq!(b.directories, 3 * (a.directories - 2) + 3 + 2);
        assert_eq!(b.max_depth, a.max_depth + 1);
        assert_eq!(
            three.ops[0],
            NsOp::Mkdir {
                path: "copy1".into()
            }
        );
        assert!(three.ops.iter().all(|op| op.path().starts_with("copy")));
        assert_eq!(one.copies(1).unwrap(), one);
        assert!(one.copies(0).is_err());
    }

    #[test]
    fn unknown_population_lists_valid_names() {
        let err = population_by_name("bench6").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("bench6") && msg.contains("bench5"), "{msg}");
    }

    #[test]
    fn scale_rejects_bad_factors() {
        let pop = population_by_name("bench5").unwrap();
        for f in [0.0, -1.0, 1.5, f64::NAN, f64::INFINITY] {
            assert!(pop.scale(f).is_err(), "{f}");
        }
        assert!(matches!(pop.scale(1e-6), Err(Error::TooSmall { .. })));
    }

    #[test]
    fn impossible_trees_name_the_operation_and_why() {
        let pop = |ops: Vec<NsOp>| Population {
            name: "t".into(),
            fs_bytes: 1 << 30,
            ops,
        };
        let mk = |p: &str| NsOp::Mkdir { path: p.into() };
        let link = |p: &str, t: &str| NsOp::Link {
            path: p.into(),
            target: t.into(),
        };
        let ok = pop(vec![
            mk("d"),
            NsOp::Create {
                path: "d/f".into(),
                bytes: 1,
            },
            link("g", "d/f"),
            NsOp::Symlink {
                path: "s".into(),
                target: "/nowhere".into(),
            },
            link("s2", "s"),
            NsOp::Mknod {
                path: "d/null".into(),
                node: NodeKind::Char,
                major: 1,
                minor: 3,
            },
        ]);
        ok.check_tree().unwrap();
        let e = pop(vec![mk("d"), link("d/h", "d/missing")])
            .check_tree()
            .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("ops[1]")
                && msg.contains("d/h")
                && msg.contains("'d/missing' does not exist"),
            "{msg}"
        );
        let e = pop(vec![mk("d"), link("h", "d")]).check_tree().unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        let e = pop(vec![mk("a/b")]).check_tree().unwrap_err();
        assert!(
            e.to_string()
                .contains("parent directory 'a' does not exist"),
            "{e}"
        );
        let e = pop(vec![mk("a"), mk("a")]).check_tree().unwrap_err();
        assert!(e.to_string().contains("already exists"), "{e}");
        let e = pop(vec![NsOp::Symlink {
            path: "s".into(),
            target: String::new(),
        }])
        .check_tree()
        .unwrap_err();
        assert!(e.to_string().contains("symlink target of 0 bytes"), "{e}");
    }

    #[test]
    fn appends_grow_the_file_they_name() {
        let cr = |p: &str, b: u64| NsOp::Create {
            path: p.into(),
            bytes: b,
        };
        let ap = |p: &str, b: u64| NsOp::Append {
            path: p.into(),
            bytes: b,
        };
        let pop = Population {
            name: "t".into(),
            fs_bytes: 1 << 30,
            ops: vec![
                NsOp::Mkdir { path: "d".into() },
                cr("d/a", 0),
                cr("b", 5000),
                ap("d/a", 8 << 20),
                ap("b", 3 << 30),
                NsOp::Link {
                    path: "a2".into(),
                    target: "d/a".into(),
                },
                ap("a2", 1),
                ap("d/a", 10),
            ],
        };
        pop.check_tree().unwrap();
        // through the hard link too, and once per file
        assert_eq!(
            pop.file_sizes(),
            vec![("d/a", (8 << 20) + 11), ("b", 5000 + (3 << 30))]
        );
        assert_eq!(pop.file_bytes(), (8 << 20) + 11 + 5000 + (3 << 30));
        let st = pop.stats();
        assert_eq!((st.regular_files, st.large_files), (2, 1));
        assert_eq!(st.file_bytes, pop.file_bytes());
        assert_eq!(st.data_blocks, 2049 + (5000 + (3u64 << 30)).div_ceil(4096));
        assert_eq!(st.inodes_used, 9 + 3 + 2);
        // scaling shrinks appends as it shrinks creates
        let half = pop.scale(0.5).unwrap();
        assert_eq!(half.ops[3], ap("d/a", 4 << 20));
        assert_eq!(
            half.file_bytes(),
            pop.ops
                .iter()
                .map(|op| match op {
                    NsOp::Create { bytes, .. } | NsOp::Append { bytes, .. } =>
                        ((*bytes as f64 * 0.5) as u64).max(u64::from(*bytes > 0)),
                    _ => 0,
                })
                .sum::<u64>()
        );
        // appends to what is not a regular file are refused, naming the operation
        let bad = |ops: Vec<NsOp>| {
            Population {
                name: "t".into(),
                fs_bytes: 1 << 30,
                ops,
            }
            .check_tree()
            .unwrap_err()
            .to_string()
        };
        let e = bad(vec![ap("nope", 1)]);
        assert!(
            e.contains("ops[0] (append 'nope')") && e.contains("does not exist"),
            "{e}"
        );
        let e = bad(vec![NsOp::Mkdir { path: "d".into() }, ap("d", 1)]);
        assert!(e.contains("not a regular file"), "{e}");
        let e = bad(vec![
            NsOp::Symlink {
                path: "s".into(),
                target: "f".into(),
            },
            ap("s", 1),
        ]);
        assert!(
            e.contains("ops[1]") && e.contains("not a regular file"),
            "{e}"
        );
        let e = bad(vec![
            NsOp::Mknod {
                path: "n".into(),
                node: NodeKind::Fifo,
                major: 0,
                minor: 0,
            },
            NsOp::Link {
                path: "n2".into(),
                target: "n".into(),
            },
            ap("n2", 1),
        ]);
        assert!(
            e.contains("ops[2]") && e.contains("not a regular file"),
            "{e}"
        );
        // an append makes no name: a create of the same path after it still clashes
        let e = bad(vec![cr("f", 1), ap("f", 1), cr("f", 1)]);
        assert!(e.contains("ops[2]") && e.contains("already exists"), "{e}");
    }

    #[test]
    fn ubuntu_32g_counts_are_exact_and_in_rsync_order() {
        let pop = population_by_name("ubuntu-32g").unwrap();
        pop.check_tree().unwrap();
        let st = pop.stats();
        // the vital statistics of Ts'o's file system (EXPERIMENTS.md), exactly
        assert_eq!(st.inodes_used, 312_214);
        assert_eq!(st.regular_files, 263_549);
        assert_eq!(st.directories, 28_022);
        assert_eq!((st.symlinks, st.fast_symlinks), (20_618, 19_450));
        assert_eq!(st.hard_links, 615);
        assert_eq!((st.char_devices, st.block_devices), (5, 1));
        assert_eq!((st.fifos, st.sockets), (5, 5));
        // e2fsck's "1 large file" is the resize inode: the tree has none
        assert_eq!(st.large_files, 0);
        // rsync -axH: a directory's entries in name order, then its subdirectories
        let mut last_in_dir: std::collections::HashMap<&str, &str> = Default::default();
        let mut finished: std::collections::HashSet<&str> = Default::default();
        for op in &pop.ops {
            let (dir, name) = op.path().rsplit_once('/').unwrap_or(("", op.path()));
            assert!(
                !finished.contains(dir),
                "{dir} got an entry after its subtree began"
            );
            if let Some(prev) = last_in_dir.insert(dir, name) {
                assert!(prev < name, "{prev} then {name} in '{dir}'");
            }
            // entering `dir` closes its parent's entry list
            let mut up = dir;
            while let Some((p, _)) = up.rsplit_once('/') {
                finished.insert(p);
                up = p;
            }
            if !dir.is_empty() {
                finished.insert("");
            }
        }
        // the same tree every time
        assert_eq!(population_by_name("ubuntu-32g").unwrap(), pop);
        // sizes: the lognormal body's median is e^9.48 = 13 KB before scaling to the volume
        let median_bucket = {
            let mut seen = 0;
            st.size_histogram
                .iter()
                .find(|b| {
                    seen += b.files;
                    seen * 2 >= st.regular_files
                })
                .unwrap()
                .below_bytes
        };
        assert!((4096..=65536).contains(&median_bucket), "{median_bucket}");
    }

    #[test]
    fn bad_tree_populations_name_the_file_and_key() {
        let text = include_str!("../../../populations/ubuntu-32g.toml");
        let bad = text.replace("fast_symlinks = 19450", "fast_symlinks = 30000");
        let e = populations::tree::TreePopulation::from_toml_str(&bad, "my.toml").unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("my.toml")
                && msg.contains("counts.fast_symlinks")
                && msg.contains("30000 fast of 20618"),
            "{msg}"
        );
        let bad = text.replace("regular_files = 263549", "regular_files = 0");
        let msg = populations::tree::TreePopulation::from_toml_str(&bad, "x.toml")
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("counts.hard_links") && msg.contains("no regular file"),
            "{msg}"
        );
        let bad = text.replace("directories = 28022", "directories = 1");
        let msg = populations::tree::TreePopulation::from_toml_str(&bad, "y.toml")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("counts.directories"), "{msg}");
        let bad = text.replace("lognormal_sigma = 2.46", "lognormal_sigma = -1");
        let msg = populations::tree::TreePopulation::from_toml_str(&bad, "z.toml")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("shape.lognormal_sigma"), "{msg}");
    }

    #[test]
    fn scale_shrinks_disk_and_files_together() {
        let pop = population_by_name("bench5").unwrap();
        let small = pop.scale(0.01).unwrap();
        assert_eq!(small.ops.len(), pop.ops.len());
        let ratio_full = pop.file_bytes() as f64 / pop.fs_bytes as f64;
        let ratio_small = small.file_bytes() as f64 / small.fs_bytes as f64;
        assert!((ratio_full - ratio_small).abs() < 1e-6);
        assert_eq!(pop.scale(1.0).unwrap(), pop);
    }
}
