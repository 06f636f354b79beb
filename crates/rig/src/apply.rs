//! A [`Population`]'s operations, every kind, applied to a mounted directory with real
//! system calls, in order: the same stream the layout policies plan, on a kernel file system.
//!
//! | operation | system calls |
//! |---|---|
//! | mkdir | `mkdir(2)` |
//! | create | `open(O_WRONLY\|O_APPEND\|O_CREAT\|O_EXCL)`, `write(2)` of zeros in 1 MiB pieces; `close(2)` at once, or after the file's last append |
//! | append | `write(2)` of zeros on the creating writer's descriptor, kept open since the create ([`NsOp::Append`]) |
//! | extend | `open(O_WRONLY\|O_APPEND)`, `write(2)`, `close(2)`: a new writer ([`NsOp::Extend`]) |
//! | truncate | `open(O_WRONLY)`, `ftruncate(2)`, `close(2)` |
//! | unlink, rename, rmdir | `unlink(2)`, `rename(2)`, `rmdir(2)` |
//! | symlink, link, mknod | `symlink(2)`, `link(2)`, `mknod(2)` (mode 0644) |
//!
//! Data is zeros: on the rig's zram backing ([`crate::Backing::Zram`]) a page of zeros costs
//! no memory, so a stream may write many times the machine's memory. Every
//! [`ApplyOptions::writeback_bytes`] of data written, the file system is written back
//! (`syncfs(2)`), as the `ext4-kernel` policy's `writeback_mib` models it: left to itself the
//! flusher would start at `dirty_background_ratio` of this machine's memory, a machine-dependent
//! batch.
//!
//! Before anything is written the stream is checked ([`Population::check_tree`]) and its peak
//! live data ([`peak_live_bytes`]) against the space the file system says is free: a stream
//! that could not fit is refused, not run into `ENOSPC`. An operation the kernel refuses stops
//! applying with [`RigError::ApplyOp`], naming the operation's index, verb, path and errno;
//! what was made stays for the caller (a [`crate::KernelFs`] tears it all down).

use crate::error::{Result, RigError};
use crate::system::{free_space_bytes, statvfs};
use layoutlab_workload::{NodeKind, NsOp, Population};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Instant;

/// How to apply a population's operations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApplyOptions {
    /// Write the file system back (`syncfs`) after every this many bytes of file data
    /// written; 0 never does (the kernel's own flusher decides).
    pub writeback_bytes: u64,
}

impl Default for ApplyOptions {
    /// Every 64 MiB: the `ext4-kernel` policy's default `writeback_mib`.
    fn default() -> ApplyOptions {
        ApplyOptions {
            writeback_bytes: 64 << 20,
        }
    }
}

/// Where an application of the operations is, passed to its progress callback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApplyProgress {
    /// Operations done.
    pub ops_done: usize,
    /// Operations in the stream.
    pub ops_total: usize,
    /// Bytes of file data written so far.
    pub bytes_written: u64,
}

/// What applying the operations did.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ApplyStats {
    /// Operations applied.
    pub operations: usize,
    /// Bytes of file data written (creates, appends, extends).
    pub bytes_written: u64,
    /// Writebacks (`syncfs`) done during the stream.
    pub writebacks: u64,
    /// Peak live file data of the stream, in 4 KiB blocks as bytes ([`peak_live_bytes`]).
    pub peak_live_bytes: u64,
    /// Wall time of applying them, seconds.
    pub seconds: f64,
}

/// The most file data, in whole 4 KiB blocks, that is live (reachable by a name) at any
/// point of the stream, and the index of the operation that reaches it: what the file system
/// must hold at once. A truncate frees the blocks beyond the new end, an unlink the file's
/// blocks with its last name. Operations [`Population::check_tree`] would refuse are skipped.
pub fn peak_live_bytes(pop: &Population) -> (u64, usize) {
    const BLOCK: u64 = 4096;
    // per file: (size, names)
    let mut files: Vec<(u64, u32)> = Vec::new();
    let mut by_name: HashMap<&str, usize> = HashMap::new();
    let (mut live, mut peak, mut at) = (0u64, 0u64, 0usize);
    let blocks = |b: u64| b.div_ceil(BLOCK) * BLOCK;
    for (i, op) in pop.ops.iter().enumerate() {
        match op {
            NsOp::Create { path, bytes } if !by_name.contains_key(path.as_str()) => {
                by_name.insert(path, files.len());
                files.push((*bytes, 1));
                live += blocks(*bytes);
            }
            NsOp::Append { path, bytes } | NsOp::Extend { path, bytes } => {
                if let Some(&f) = by_name.get(path.as_str()) {
                    live = live - blocks(files[f].0) + blocks(files[f].0 + bytes);
                    files[f].0 += bytes;
                }
            }
            NsOp::Truncate { path, bytes } => {
                if let Some(&f) = by_name.get(path.as_str()) {
                    let new = files[f].0.min(*bytes);
                    live = live - blocks(files[f].0) + blocks(new);
                    files[f].0 = new;
                }
            }
            NsOp::Link { path, target } => {
                if let Some(&f) = by_name.get(target.as_str()) {
                    by_name.insert(path, f);
                    files[f].1 += 1;
                }
            }
            NsOp::Rename { path, to } => {
                if let Some(f) = by_name.remove(path.as_str()) {
                    by_name.insert(to, f);
                }
            }
            NsOp::Unlink { path } => {
                if let Some(f) = by_name.remove(path.as_str()) {
                    files[f].1 -= 1;
                    if files[f].1 == 0 {
                        live -= blocks(files[f].0);
                    }
                }
            }
            _ => {}
        }
        if live > peak {
            (peak, at) = (live, i);
        }
    }
    (peak, at)
}

/// The most inodes the stream's names hold at any point (directories, files, symlinks,
/// device nodes; an inode is freed with its last name), and the index of the operation that
/// reaches it. Operations [`Population::check_tree`] would refuse are skipped.
pub fn peak_live_inodes(pop: &Population) -> (u64, usize) {
    // names -> inode; inode -> names
    let mut inode_of: HashMap<&str, usize> = HashMap::new();
    let mut names: Vec<u32> = Vec::new();
    let (mut live, mut peak, mut at) = (0u64, 0u64, 0usize);
    for (i, op) in pop.ops.iter().enumerate() {
        let path = op.path();
        match op {
            NsOp::Mkdir { .. }
            | NsOp::Create { .. }
            | NsOp::Symlink { .. }
            | NsOp::Mknod { .. }
                if !inode_of.contains_key(path) =>
            {
                inode_of.insert(path, names.len());
                names.push(1);
                live += 1;
            }
            NsOp::Link { target, .. } if !inode_of.contains_key(path) => {
                if let Some(&n) = inode_of.get(target.as_str()) {
                    inode_of.insert(path, n);
                    names[n] += 1;
                }
            }
            NsOp::Rename { to, .. } => {
                if let Some(n) = inode_of.remove(path) {
                    inode_of.insert(to, n);
                }
            }
            NsOp::Unlink { .. } | NsOp::Rmdir { .. } => {
                if let Some(n) = inode_of.remove(path) {
                    names[n] -= 1;
                    if names[n] == 0 {
                        live -= 1;
                    }
                }
            }
            _ => {}
        }
        if live > peak {
            (peak, at) = (live, i);
        }
    }
    (peak, at)
}

/// Inodes free to an unprivileged writer under `dir` (`statvfs` f_favail), or `None` where
/// the file system has no fixed inode count (btrfs reports 0 inodes in all).
fn free_inodes(dir: &Path) -> Result<Option<u64>> {
    let st = statvfs(dir)?;
    Ok((st.f_files > 0).then_some(st.f_favail as u64))
}

/// For each operation that creates a regular file, the index of the last operation that
/// writes to it through the creating writer (its last [`NsOp::Append`], through any of its
/// names; the create itself when none follows): where that writer closes it.
fn writer_closes(pop: &Population) -> HashMap<usize, usize> {
    let mut file_of: HashMap<&str, usize> = HashMap::new();
    let mut last: HashMap<usize, usize> = HashMap::new();
    for (i, op) in pop.ops.iter().enumerate() {
        match op {
            NsOp::Create { path, .. } => {
                file_of.insert(path, i);
                last.insert(i, i);
            }
            NsOp::Append { path, .. } => {
                if let Some(&f) = file_of.get(path.as_str()) {
                    last.insert(f, i);
                }
            }
            NsOp::Link { path, target } => {
                if let Some(&f) = file_of.get(target.as_str()) {
                    file_of.insert(path, f);
                }
            }
            NsOp::Rename { path, to } => {
                if let Some(f) = file_of.remove(path.as_str()) {
                    file_of.insert(to, f);
                }
            }
            NsOp::Unlink { path } => {
                file_of.remove(path.as_str());
            }
            _ => {}
        }
    }
    last
}

/// The most creating writers open at once, from [`writer_closes`]: a writer is open from its
/// create to its close.
fn max_open_writers(closes: &HashMap<usize, usize>) -> u64 {
    let mut events: Vec<(usize, i64)> = Vec::with_capacity(closes.len() * 2);
    for (&open, &close) in closes {
        // opens at `open`, closed after `close` (the same operation when no append follows)
        events.push((open, 1));
        events.push((close + 1, -1));
    }
    events.sort_unstable();
    let (mut n, mut most) = (0i64, 0i64);
    for (_, d) in events {
        n += d;
        most = most.max(n);
    }
    most as u64
}

/// Descriptors kept free for everything else the process holds.
const SPARE_DESCRIPTORS: u64 = 64;

/// Raises the soft limit on open files (up to the hard one) so that `writers` descriptors
/// fit beside the process's others; an error before anything is written if they cannot.
fn ensure_descriptors(writers: u64) -> Result<()> {
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: lim is a valid rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(RigError::last_os("getrlimit RLIMIT_NOFILE"));
    }
    let need = writers + SPARE_DESCRIPTORS;
    if (lim.rlim_cur as u64) >= need {
        return Ok(());
    }
    if (lim.rlim_max as u64) < need {
        return Err(RigError::InvalidArgument(format!(
            "the stream keeps {writers} files open at once (creates whose appends come later), \
             more than the {} descriptors this process may open (ulimit -Hn)",
            lim.rlim_max
        )));
    }
    lim.rlim_cur = need as libc::rlim_t;
    // SAFETY: lim is a valid rlimit.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
        return Err(RigError::last_os("setrlimit RLIMIT_NOFILE"));
    }
    Ok(())
}

/// Writes `bytes` zeros to `f` in 1 MiB pieces.
fn write_zeros(f: &mut File, mut bytes: u64, zeros: &[u8]) -> std::io::Result<()> {
    while bytes > 0 {
        let n = bytes.min(zeros.len() as u64) as usize;
        f.write_all(&zeros[..n])?;
        bytes -= n as u64;
    }
    Ok(())
}

fn syncfs(dir: &File, root: &Path) -> Result<()> {
    // SAFETY: a valid descriptor of an open directory.
    if unsafe { libc::syncfs(dir.as_raw_fd()) } != 0 {
        return Err(RigError::last_os(format!("syncfs {}", root.display())));
    }
    Ok(())
}

/// Applies every operation of `pop`, in order, under the directory `root` (the mount point of
/// a file system the rig made), calling `progress` after each; then closes every writer and
/// writes the file system back (`syncfs`), so what the kernel placed is on the device.
///
/// Refuses, before writing anything, a stream [`Population::check_tree`] rejects
/// ([`RigError::InvalidArgument`] naming the operation) or whose peak live data or inodes
/// exceed what is free under `root` ([`RigError::InvalidArgument`] naming where the peak is). An operation the kernel refuses stops the
/// applying with [`RigError::ApplyOp`]; what was made before it is left in place.
pub fn apply_ops(
    root: &Path,
    pop: &Population,
    opts: &ApplyOptions,
    progress: &mut dyn FnMut(&ApplyProgress),
) -> Result<ApplyStats> {
    pop.check_tree()
        .map_err(|e| RigError::InvalidArgument(format!("population '{}': {e}", pop.name)))?;
    let (peak, peak_at) = peak_live_bytes(pop);
    let free = free_space_bytes(root)?;
    if peak > free {
        return Err(RigError::InvalidArgument(format!(
            "population '{}' holds up to {peak} bytes of file data at once (after ops[{peak_at}]), \
             more than the {free} bytes free on the file system at {}: use a smaller --scale or \
             a larger file system",
            pop.name,
            root.display()
        )));
    }
    let (inodes, inodes_at) = peak_live_inodes(pop);
    if let Some(free) = free_inodes(root)? {
        if inodes > free {
            return Err(RigError::InvalidArgument(format!(
                "population '{}' holds up to {inodes} inodes at once (after ops[{inodes_at}]), \
                 more than the {free} inodes free on the file system at {}: use a larger file \
                 system or one with more inodes",
                pop.name,
                root.display()
            )));
        }
    }
    let closes = writer_closes(pop);
    ensure_descriptors(max_open_writers(&closes))?;
    let dir = File::open(root).map_err(|e| RigError::io(format!("open {}", root.display()), e))?;
    let zeros = vec![0u8; 1 << 20];
    // open writers: file (index of its create) -> descriptor; by name -> file
    let mut writers: HashMap<usize, File> = HashMap::new();
    let mut file_of: HashMap<&str, usize> = HashMap::new();
    let mut close_at: HashMap<usize, Vec<usize>> = HashMap::new();
    for (&file, &at) in &closes {
        close_at.entry(at).or_default().push(file);
    }
    let started = Instant::now();
    let (mut written, mut dirty, mut writebacks) = (0u64, 0u64, 0u64);
    let total = pop.ops.len();
    for (index, op) in pop.ops.iter().enumerate() {
        let path = root.join(op.path());
        let fail = |error: std::io::Error| RigError::ApplyOp {
            index,
            verb: op.verb(),
            path: op.path().to_string(),
            error,
        };
        let data = op.data_bytes();
        match op {
            NsOp::Mkdir { .. } => std::fs::create_dir(&path).map_err(fail)?,
            NsOp::Create { path: name, bytes } => {
                let mut f = OpenOptions::new()
                    .append(true)
                    .create_new(true)
                    .mode(0o644)
                    .open(&path)
                    .map_err(fail)?;
                write_zeros(&mut f, *bytes, &zeros).map_err(fail)?;
                file_of.insert(name, index);
                writers.insert(index, f);
            }
            NsOp::Append { path: name, bytes } => {
                let f = file_of
                    .get(name.as_str())
                    .and_then(|file| writers.get_mut(file))
                    .ok_or_else(|| {
                        fail(std::io::Error::other(
                            "no open writer (check_tree lets an append follow only its file's \
                             create)",
                        ))
                    })?;
                write_zeros(f, *bytes, &zeros).map_err(fail)?;
            }
            NsOp::Extend { bytes, .. } => {
                let mut f = OpenOptions::new().append(true).open(&path).map_err(fail)?;
                write_zeros(&mut f, *bytes, &zeros).map_err(fail)?;
            }
            NsOp::Truncate { bytes, .. } => {
                let f = OpenOptions::new().write(true).open(&path).map_err(fail)?;
                f.set_len(*bytes).map_err(fail)?;
            }
            NsOp::Unlink { path: name } => {
                std::fs::remove_file(&path).map_err(fail)?;
                file_of.remove(name.as_str());
            }
            NsOp::Rename { path: name, to } => {
                std::fs::rename(&path, root.join(to)).map_err(fail)?;
                if let Some(f) = file_of.remove(name.as_str()) {
                    file_of.insert(to, f);
                }
            }
            NsOp::Rmdir { .. } => std::fs::remove_dir(&path).map_err(fail)?,
            NsOp::Symlink { target, .. } => {
                std::os::unix::fs::symlink(target, &path).map_err(fail)?
            }
            NsOp::Link { path: name, target } => {
                std::fs::hard_link(root.join(target), &path).map_err(fail)?;
                if let Some(&f) = file_of.get(target.as_str()) {
                    file_of.insert(name, f);
                }
            }
            NsOp::Mknod {
                node, major, minor, ..
            } => {
                let kind = match node {
                    NodeKind::Char => libc::S_IFCHR,
                    NodeKind::Block => libc::S_IFBLK,
                    NodeKind::Fifo => libc::S_IFIFO,
                    NodeKind::Socket => libc::S_IFSOCK,
                };
                let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
                    .map_err(|e| fail(std::io::Error::other(e)))?;
                // SAFETY: c is a valid NUL-terminated path.
                let rc =
                    unsafe { libc::mknod(c.as_ptr(), kind | 0o644, libc::makedev(*major, *minor)) };
                if rc != 0 {
                    return Err(fail(std::io::Error::last_os_error()));
                }
            }
        }
        // the creating writer closes after the file's last write through it
        if let Some(files) = close_at.get(&index) {
            for file in files {
                writers.remove(file);
            }
        }
        written += data;
        dirty += data;
        if opts.writeback_bytes > 0 && dirty >= opts.writeback_bytes {
            syncfs(&dir, root)?;
            writebacks += 1;
            dirty = 0;
        }
        progress(&ApplyProgress {
            ops_done: index + 1,
            ops_total: total,
            bytes_written: written,
        });
    }
    writers.clear();
    syncfs(&dir, root)?;
    Ok(ApplyStats {
        operations: total,
        bytes_written: written,
        writebacks,
        peak_live_bytes: peak,
        seconds: started.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pop(ops: Vec<NsOp>) -> Population {
        Population {
            name: "t".into(),
            fs_bytes: 1 << 30,
            ops,
        }
    }

    #[test]
    fn peak_live_data_follows_truncates_unlinks_and_links() {
        let p = pop(vec![
            NsOp::Create {
                path: "a".into(),
                bytes: 10_000, // 3 blocks
            },
            NsOp::Link {
                path: "a2".into(),
                target: "a".into(),
            },
            NsOp::Create {
                path: "b".into(),
                bytes: 4096,
            },
            NsOp::Unlink { path: "a".into() }, // a2 keeps it
            NsOp::Extend {
                path: "a2".into(),
                bytes: 1,
            }, // 10_001: still 3 blocks
            NsOp::Append {
                path: "b".into(),
                bytes: 1,
            }, // 2 blocks: 5 in all, the peak
            NsOp::Truncate {
                path: "a2".into(),
                bytes: 0,
            },
            NsOp::Unlink { path: "a2".into() },
            NsOp::Create {
                path: "c".into(),
                bytes: 3 * 4096,
            },
        ]);
        assert_eq!(peak_live_bytes(&p), (5 * 4096, 5));
    }

    #[test]
    fn peak_live_inodes_follow_links_unlinks_and_rmdirs() {
        let p = pop(vec![
            NsOp::Mkdir { path: "d".into() },
            NsOp::Create {
                path: "d/a".into(),
                bytes: 1,
            },
            NsOp::Link {
                path: "b".into(),
                target: "d/a".into(),
            },
            NsOp::Symlink {
                path: "s".into(),
                target: "x".into(),
            },
            NsOp::Unlink { path: "d/a".into() }, // b keeps it
            NsOp::Rmdir { path: "d".into() },
            NsOp::Unlink { path: "b".into() },
            NsOp::Mknod {
                path: "n".into(),
                node: NodeKind::Fifo,
                major: 0,
                minor: 0,
            },
        ]);
        assert_eq!(peak_live_inodes(&p), (3, 3));
    }

    #[test]
    fn the_creating_writer_closes_after_the_last_append_through_any_name() {
        let p = pop(vec![
            NsOp::Create {
                path: "a".into(),
                bytes: 1,
            },
            NsOp::Create {
                path: "b".into(),
                bytes: 1,
            },
            NsOp::Link {
                path: "l".into(),
                target: "a".into(),
            },
            NsOp::Append {
                path: "l".into(),
                bytes: 1,
            },
        ]);
        let c = writer_closes(&p);
        assert_eq!((c[&0], c[&1]), (3, 1));
        // a (0..=3) and b (1) overlap
        assert_eq!(max_open_writers(&c), 2);
        let many = pop((0..1100)
            .map(|i| NsOp::Create {
                path: format!("f{i}"),
                bytes: 1,
            })
            .chain((0..1100).map(|i| NsOp::Append {
                path: format!("f{i}"),
                bytes: 1,
            }))
            .collect());
        assert_eq!(max_open_writers(&writer_closes(&many)), 1100);
        // more writers than the usual soft limit of 1024 descriptors: raised, and replayed
        let dir = std::env::temp_dir().join(format!("layoutlab-replay-fds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let st = apply_ops(&dir, &many, &ApplyOptions::default(), &mut |_| {}).unwrap();
        assert_eq!(st.bytes_written, 2200);
        assert_eq!(std::fs::metadata(dir.join("f1099")).unwrap().len(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Every kind but mknod (which needs root) on any directory, without root: the tree
    /// left is the one the population describes.
    #[test]
    fn a_stream_replays_on_a_plain_directory() {
        let dir = std::env::temp_dir().join(format!("layoutlab-replay-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = pop(vec![
            NsOp::Mkdir { path: "d".into() },
            NsOp::Create {
                path: "d/f".into(),
                bytes: 5000,
            },
            NsOp::Create {
                path: "g".into(),
                bytes: 3 << 20,
            },
            NsOp::Append {
                path: "d/f".into(),
                bytes: 100,
            },
            NsOp::Extend {
                path: "g".into(),
                bytes: 7,
            },
            NsOp::Truncate {
                path: "g".into(),
                bytes: 4097,
            },
            NsOp::Symlink {
                path: "s".into(),
                target: "d/f".into(),
            },
            NsOp::Link {
                path: "h".into(),
                target: "d/f".into(),
            },
            NsOp::Rename {
                path: "g".into(),
                to: "d/g2".into(),
            },
            NsOp::Mkdir { path: "e".into() },
            NsOp::Rmdir { path: "e".into() },
            NsOp::Unlink { path: "h".into() },
        ]);
        let mut calls = 0;
        let st = apply_ops(
            &dir,
            &p,
            &ApplyOptions {
                writeback_bytes: 1 << 20,
            },
            &mut |pr| {
                calls += 1;
                assert_eq!(pr.ops_done, calls);
            },
        )
        .unwrap();
        assert_eq!(calls, p.ops.len());
        assert_eq!(st.bytes_written, 5000 + (3 << 20) + 107);
        assert_eq!(st.writebacks, 1);
        assert_eq!(std::fs::metadata(dir.join("d/f")).unwrap().len(), 5100);
        assert_eq!(std::fs::metadata(dir.join("d/g2")).unwrap().len(), 4097);
        assert!(!dir.join("e").exists() && !dir.join("h").exists() && !dir.join("g").exists());
        assert_eq!(std::fs::read_link(dir.join("s")).unwrap(), Path::new("d/f"));
        // a second replay into the same directory fails at its first op, named
        let e = apply_ops(&dir, &p, &ApplyOptions::default(), &mut |_| {}).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("ops[0] (mkdir 'd')") && msg.contains("os error 17"),
            "{msg}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_impossible_stream_is_refused_before_anything_is_written() {
        let dir = std::env::temp_dir().join(format!("layoutlab-replay-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = pop(vec![
            NsOp::Mkdir { path: "d".into() },
            NsOp::Unlink {
                path: "nope".into(),
            },
        ]);
        let e = apply_ops(&dir, &p, &ApplyOptions::default(), &mut |_| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains("ops[1]") && e.contains("unlink"), "{e}");
        // far more live data than any disk here holds
        let big = pop(vec![NsOp::Create {
            path: "f".into(),
            bytes: 1 << 60,
        }]);
        let e = apply_ops(&dir, &big, &ApplyOptions::default(), &mut |_| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains("ops[0]") && e.contains("--scale"), "{e}");
        assert!(std::fs::read_dir(&dir).unwrap().next().is_none());
        std::fs::remove_dir(&dir).unwrap();
    }
}
