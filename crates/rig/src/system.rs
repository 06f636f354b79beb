//! Small host helpers: root check, free-space check, dropping caches, temp files the rig owns,
//! and running an external program with a useful error.

use crate::cleanup::{self, CleanupId};
use crate::error::{Result, RigError};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// This machine's page size, bytes (`sysconf(_SC_PAGESIZE)`; 4096 if it cannot say).
pub fn page_bytes() -> usize {
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as usize
    } else {
        4096
    }
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    unsafe { libc::geteuid() == 0 }
}

/// `Ok` when root; otherwise [`RigError::NotRoot`] naming `what` needs it.
pub fn require_root(what: &str) -> Result<()> {
    if is_root() {
        Ok(())
    } else {
        Err(RigError::NotRoot {
            what: what.to_string(),
        })
    }
}

/// `path` as the C string a system call takes; a path with a NUL byte (which no system call
/// can name) is refused as an invalid argument.
pub(crate) fn c_path(path: &Path) -> Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| RigError::InvalidArgument(format!("path {} has a NUL byte", path.display())))
}

/// `statvfs(2)` of the file system holding `dir`.
pub(crate) fn statvfs(dir: &Path) -> Result<libc::statvfs> {
    let c_dir = c_path(dir)?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c_dir is a valid C string, st a statvfs the call fills.
    if unsafe { libc::statvfs(c_dir.as_ptr(), &mut st) } != 0 {
        return Err(RigError::last_os(format!("statvfs {}", dir.display())));
    }
    Ok(st)
}

/// Bytes available to a writer in the file system holding `dir`.
pub fn free_space_bytes(dir: &Path) -> Result<u64> {
    let st = statvfs(dir)?;
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

/// Whether `dir` lies on a memory file system (tmpfs/ramfs), where reads cost no device time.
pub fn is_memory_fs(dir: &Path) -> Result<bool> {
    let c_dir = c_path(dir)?;
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c_dir.as_ptr(), &mut st) } != 0 {
        return Err(RigError::last_os(format!("statfs {}", dir.display())));
    }
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    Ok(matches!(st.f_type as i64, TMPFS_MAGIC | RAMFS_MAGIC))
}

/// `Ok` when the file system of `dir` has at least `bytes` available; otherwise
/// [`RigError::NoSpace`], before anything is written.
pub fn check_free_space(dir: &Path, bytes: u64) -> Result<()> {
    let available_bytes = free_space_bytes(dir)?;
    if available_bytes < bytes {
        return Err(RigError::NoSpace {
            dir: dir.to_path_buf(),
            needed_bytes: bytes,
            available_bytes,
        });
    }
    Ok(())
}

/// Writes dirty pages back and drops the page, dentry and inode caches (root), so the next
/// read reaches the device. Every caller in layoutlab holds the [`crate::RigLock`]
/// exclusively (a [`crate::KernelFs`], or the lock itself): a capture that holds it shared
/// (e2fsck's, [`crate::run_e2fsck_traced`]) must not lose its cache halfway.
pub fn drop_caches() -> Result<()> {
    require_root("dropping the page cache")?;
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3")
        .map_err(|e| RigError::io("write /proc/sys/vm/drop_caches", e))
}

/// How many times anyone has dropped the page cache since boot (`drop_pagecache` of
/// /proc/vmstat: each write of 1 or 3 to /proc/sys/vm/drop_caches). Two readings around a
/// capture say whether another process dropped the cache under it.
pub fn page_cache_drops() -> Result<u64> {
    read_proc_value(
        "/proc/vmstat",
        parse_page_cache_drops,
        "no drop_pagecache counter",
    )
}

/// One value `parse` finds in the /proc file `path`; `missing` says what was not there.
pub(crate) fn read_proc_value(
    path: &str,
    parse: fn(&str) -> Option<u64>,
    missing: &str,
) -> Result<u64> {
    let text =
        std::fs::read_to_string(path).map_err(|e| RigError::io(format!("read {path}"), e))?;
    parse(&text).ok_or_else(|| RigError::Parse {
        source_name: path.into(),
        line: 0,
        reason: missing.into(),
    })
}

fn parse_page_cache_drops(vmstat: &str) -> Option<u64> {
    vmstat
        .lines()
        .find_map(|l| l.strip_prefix("drop_pagecache ")?.trim().parse().ok())
}

/// Runs `program args`, returning its standard output; a non-zero exit becomes
/// [`RigError::Command`] with its standard error.
pub fn run_command(program: &str, args: &[&str]) -> Result<String> {
    let shown = format!("{program} {}", args.join(" "));
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| RigError::Command {
            program: shown.clone(),
            status: "not started".into(),
            stderr: e.to_string(),
        })?;
    if !out.status.success() {
        return Err(RigError::Command {
            program: shown,
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A file (e.g. a sparse image) the rig created and removes on drop, error, panic or signal,
/// unless [`TempFile::keep`] is called.
#[derive(Debug)]
pub struct TempFile {
    path: PathBuf,
    cleanup: Option<CleanupId>,
}

impl TempFile {
    /// Creates a new sparse file of `len_bytes` at `path` (which must not exist). A sparse
    /// file writes no data, so no free-space check happens here: check what you will write.
    pub fn create_sparse(path: &Path, len_bytes: u64) -> Result<TempFile> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| RigError::io(format!("create {}", path.display()), e))?;
        let guard = TempFile::adopt(path);
        file.set_len(len_bytes)
            .map_err(|e| RigError::io(format!("set length of {}", path.display()), e))?;
        Ok(guard)
    }

    /// Takes ownership of an existing file: it is removed when the guard goes.
    pub fn adopt(path: &Path) -> TempFile {
        let owned = path.to_path_buf();
        let cleanup = cleanup::register(format!("temp file {}", path.display()), move || {
            let _ = std::fs::remove_file(&owned);
        });
        TempFile {
            path: path.to_path_buf(),
            cleanup: Some(cleanup),
        }
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Keeps the file (e.g. `--keep`): it is no longer removed.
    pub fn keep(mut self) -> PathBuf {
        if let Some(id) = self.cleanup.take() {
            cleanup::forget(&id);
        }
        self.path.clone()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Some(id) = self.cleanup.take() {
            cleanup::run(&id);
        }
    }
}

/// A directory the rig created (e.g. a mount point), removed (empty only) when dropped.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
    cleanup: Option<CleanupId>,
}

impl TempDir {
    /// Creates a fresh directory `prefix-PID-N` under `parent`. `prefix` is `layoutlab` or
    /// `layoutlab-WORD` (lowercase), so that `layoutlab clean` finds the directory when its
    /// process was killed (`stale::pid_in_name`).
    pub fn new(parent: &Path, prefix: &str) -> Result<TempDir> {
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        loop {
            let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let name = format!("{prefix}-{}-{n}", std::process::id());
            debug_assert_eq!(
                crate::stale::pid_in_name(&name),
                Some(std::process::id()),
                "{name}: a name `layoutlab clean` would not find"
            );
            let path = parent.join(name);
            // mkdir and register as one step (see `cleanup::creating`).
            let made = cleanup::creating(|| {
                std::fs::create_dir(&path).map(|()| {
                    let owned = path.clone();
                    cleanup::register(format!("directory {}", path.display()), move || {
                        // Only if empty: never delete what someone else put there.
                        let _ = std::fs::remove_dir(&owned);
                    })
                })
            });
            match made {
                Ok(cleanup) => {
                    return Ok(TempDir {
                        path,
                        cleanup: Some(cleanup),
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(RigError::io(format!("mkdir {}", path.display()), e)),
            }
        }
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if let Some(id) = self.cleanup.take() {
            cleanup::run(&id);
        }
    }
}

/// For a child the rig spawns, between fork and exec: die with the parent
/// (`PR_SET_PDEATHSIG`), so that a checker never lives on holding the rig's device open when
/// the rig is SIGKILLed (no cleanup runs then); and fail with ESRCH when the parent is already
/// gone, which the prctl came too late to catch. Only async-signal-safe calls.
pub(crate) fn die_with_parent(parent_pid: libc::pid_t) -> std::io::Result<()> {
    // SAFETY: prctl(2) and getppid(2) are async-signal-safe and touch no memory of ours.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if unsafe { libc::getppid() } != parent_pid {
        return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(())
}

/// Writes `value` to a sysfs/procfs/tracefs attribute.
pub(crate) fn write_attr(path: &Path, value: &str) -> Result<()> {
    std::fs::write(path, value)
        .map_err(|e| RigError::io(format!("write {value:?} to {}", path.display()), e))
}

/// Reads a sysfs/procfs/tracefs attribute, trimmed.
pub(crate) fn read_attr(path: &Path) -> Result<String> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| RigError::io(format!("read {}", path.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_space_check_refuses_more_than_the_disk() {
        let dir = std::env::temp_dir();
        check_free_space(&dir, 1).unwrap();
        let err = check_free_space(&dir, u64::MAX).unwrap_err();
        assert!(matches!(err, RigError::NoSpace { .. }), "{err}");
        assert!(err.to_string().contains("need"), "{err}");
    }

    #[test]
    fn temp_file_is_removed_on_drop_and_kept_on_keep() {
        let dir = std::env::temp_dir();
        let p = dir.join(format!("rig-tempfile-{}", std::process::id()));
        let f = TempFile::create_sparse(&p, 1 << 30).unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 1 << 30);
        drop(f);
        assert!(!p.exists());
        let f = TempFile::create_sparse(&p, 10).unwrap();
        let kept = f.keep();
        assert!(kept.exists());
        std::fs::remove_file(kept).unwrap();
    }

    #[test]
    fn failing_command_reports_its_stderr() {
        let err = run_command("sh", &["-c", "echo boom >&2; exit 3"]).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("boom") && text.contains('3'), "{text}");
    }
}

/// What a reaped child's process tree used, as the kernel counts it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ChildUsage {
    /// User and system CPU of the child and of every descendant it waited for (e2fsck, mkfs,
    /// fio, ...); not the kernel's own threads that serve it (loop workers, writeback).
    pub cpu_seconds: f64,
    /// The largest resident set of any one process in that tree (`ru_maxrss`): not their sum,
    /// and not tmpfs or zram pages, which no process maps.
    pub peak_rss_bytes: u64,
}

/// Waits for `child` with `wait4(2)`, which also gives its resource usage (`Child::wait` does
/// not); retried on `EINTR`.
pub fn wait_with_usage(
    child: std::process::Child,
) -> Result<(std::process::ExitStatus, ChildUsage)> {
    use std::os::unix::process::ExitStatusExt;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid out-parameter.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: waiting for our own child, with valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(RigError::io(format!("wait4 for process {pid}"), err));
        }
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok((
        std::process::ExitStatus::from_raw(status),
        ChildUsage {
            cpu_seconds: secs(usage.ru_utime) + secs(usage.ru_stime),
            // Linux counts ru_maxrss in KiB.
            peak_rss_bytes: usage.ru_maxrss.max(0) as u64 * 1024,
        },
    ))
}

#[cfg(test)]
mod usage_tests {
    use super::*;

    #[test]
    fn page_cache_drops_are_read_from_vmstat() {
        let text = "nr_free_pages 6086688\ndrop_pagecache 1707\ndrop_slab 1708\n";
        assert_eq!(parse_page_cache_drops(text), Some(1707));
        assert_eq!(parse_page_cache_drops("drop_slab 3\n"), None);
        assert!(page_cache_drops().is_ok(), "this kernel counts drops");
    }

    /// The CPU a child burns and the memory it touches come back from `wait_with_usage`, with
    /// its exit status: a shell that spins for ~0.3 s of CPU and a `head` that holds 64 MiB.
    #[test]
    fn wait_with_usage_gives_the_childs_status_cpu_and_peak_memory() {
        let spin = std::process::Command::new("sh")
            .args([
                "-c",
                "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; exit 3",
            ])
            .spawn()
            .unwrap();
        let (status, usage) = wait_with_usage(spin).unwrap();
        assert_eq!(status.code(), Some(3));
        assert!(usage.cpu_seconds > 0.05, "{usage:?}");
        let hold = std::process::Command::new("sh")
            .args([
                "-c",
                "head -c 67108864 /dev/zero | tail -c 67108864 >/dev/null",
            ])
            .spawn()
            .unwrap();
        let (status, usage) = wait_with_usage(hold).unwrap();
        assert!(status.success());
        // tail keeps the last 64 MiB in memory: the largest process held at least that.
        assert!(usage.peak_rss_bytes >= 64 << 20, "{usage:?}");
    }
}
