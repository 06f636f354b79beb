//! A memory cgroup the rig creates: a page-cache size limit for the threads placed in it.
//!
//! cgroup v1 (this machine: the `memory` controller on its own hierarchy,
//! `memory.limit_in_bytes`). A page-cache page is charged to the cgroup of the *process*
//! whose read allocated it — `get_mem_cgroup_from_mm()` takes the cgroup of `mm->owner`, not
//! of the reading thread (checked here: a thread moved alone was charged nothing) — so the
//! reads to be limited run in a forked child that joins the cgroup
//! ([`MemCgroup::run_in_child`]), and the rest of the program stays outside.
//!
//! The cgroup is made inside the cgroup this process is in (whoever started us may limit
//! us; we only narrow that), named `layoutlab-PID-N`, and registered with the
//! [`cleanup`](crate::cleanup) registry: on drop, error, panic, SIGINT or SIGTERM any task
//! still in it goes back to that parent, its charges are reclaimed (`memory.force_empty`)
//! and the directory is removed. It touches no cgroup it did not create.

use crate::cgroup::{join_self, procs_cstring, read_u64, write, Controller};
use crate::cleanup::{self, CleanupId};
use crate::error::{Result, RigError};
use std::path::{Path, PathBuf};

/// A memory cgroup (v1) created by the rig.
pub struct MemCgroup {
    path: PathBuf,
    cleanup: Option<CleanupId>,
}

/// The v1 memory controller, as the rig makes its cgroups.
pub(crate) const MEMORY: Controller = Controller {
    name: "memory",
    what: "memory cgroup",
    missing_hint: "the rig limits page cache per thread, which cgroup v2 does not allow; mount \
                   one with `mount -t cgroup -o memory cgroup /sys/fs/cgroup/memory`",
    // Reclaim the charges that keep an emptied cgroup busy.
    before_rmdir: |cgroup| {
        let _ = std::fs::write(cgroup.join("memory.force_empty"), "0");
    },
};

impl MemCgroup {
    /// A new memory cgroup limited to `limit_bytes` (whole pages; at least 1 MiB).
    pub fn create(limit_bytes: u64) -> Result<MemCgroup> {
        crate::require_root("creating a memory cgroup")?;
        if limit_bytes < 1 << 20 {
            return Err(RigError::InvalidArgument(format!(
                "a memory limit of {limit_bytes} bytes is below 1 MiB"
            )));
        }
        let (path, _parent, id) = MEMORY.create()?;
        let cg = MemCgroup {
            path,
            cleanup: Some(id),
        };
        cg.set_limit(limit_bytes)?;
        Ok(cg)
    }

    /// Its directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Sets the limit (`memory.limit_in_bytes`); the kernel reclaims down to it at once.
    pub fn set_limit(&self, limit_bytes: u64) -> Result<()> {
        write(
            &self.path.join("memory.limit_in_bytes"),
            &limit_bytes.to_string(),
        )
    }

    /// The limit the kernel applies (rounded down to whole pages).
    pub fn limit_bytes(&self) -> Result<u64> {
        read_u64(&self.path.join("memory.limit_in_bytes"))
    }

    /// Memory charged now (`memory.usage_in_bytes`).
    pub fn usage_bytes(&self) -> Result<u64> {
        read_u64(&self.path.join("memory.usage_in_bytes"))
    }

    /// Most memory charged so far (`memory.max_usage_in_bytes`).
    pub fn max_usage_bytes(&self) -> Result<u64> {
        read_u64(&self.path.join("memory.max_usage_in_bytes"))
    }

    /// Most kernel memory (slab: xarray nodes, buffer heads, ...) charged so far
    /// (`memory.kmem.max_usage_in_bytes`): memory of the limit page-cache pages could not use.
    pub fn kmem_max_usage_bytes(&self) -> Result<u64> {
        read_u64(&self.path.join("memory.kmem.max_usage_in_bytes"))
    }

    /// How many processes the cgroup's OOM killer has killed (`oom_kill` of
    /// `memory.oom_control`; 0 on kernels that do not count them).
    pub fn oom_kills(&self) -> Result<u64> {
        let p = self.path.join("memory.oom_control");
        let text = std::fs::read_to_string(&p)
            .map_err(|e| RigError::io(format!("reading {}", p.display()), e))?;
        Ok(text
            .lines()
            .find_map(|l| l.strip_prefix("oom_kill ")?.trim().parse().ok())
            .unwrap_or(0))
    }

    /// One counter of `memory.stat` (e.g. "cache", "active_file", "inactive_file").
    pub fn stat(&self, name: &str) -> Result<u64> {
        let p = self.path.join("memory.stat");
        let text = std::fs::read_to_string(&p)
            .map_err(|e| RigError::io(format!("reading {}", p.display()), e))?;
        text.lines()
            .find_map(|l| {
                l.strip_prefix(name)
                    .and_then(|v| v.strip_prefix(' '))
                    .and_then(|v| v.trim().parse().ok())
            })
            .ok_or_else(|| RigError::Parse {
                source_name: p.display().to_string(),
                line: 0,
                reason: format!("no counter '{name}'"),
            })
    }

    /// Forks a child that joins this cgroup, runs `f` and exits with its status; waits for
    /// it and returns that status. What the child reads into the page cache is charged here.
    ///
    /// The child keeps only descriptors 0-2 and `keep`; it closes the others before `f`
    /// runs. A fork copies every descriptor of the process, those other threads hold
    /// included: a child that kept another thread's file on another mount open would outlive
    /// that thread's close, so that file system's last-close work (XFS trims its speculative
    /// preallocation there) waited for the child, and its unmount found it busy (seen
    /// 2026-11-28: an XFS file written beside a bounded writer kept a 36 MiB unwritten extent
    /// past its end through the remount; tests/large_delete_write.rs).
    ///
    /// # Safety
    /// The child of a multi-threaded program may only make async-signal-safe calls: `f` must
    /// not allocate, lock, or touch Rust's standard streams — plain system calls on file
    /// descriptors in `keep` (or 0-2) and buffers made before the call only.
    pub unsafe fn run_in_child(
        &self,
        keep: &[std::os::fd::RawFd],
        f: impl FnOnce() -> i32,
    ) -> Result<i32> {
        let procs = procs_cstring(&self.path)?;
        // Made before the fork: the child may not allocate.
        let mut keep: Vec<std::os::fd::RawFd> = keep.iter().copied().filter(|&d| d > 2).collect();
        keep.sort_unstable();
        keep.dedup();
        // SAFETY: sysconf(3) has no preconditions.
        let open_max = unsafe { libc::sysconf(libc::_SC_OPEN_MAX) }.clamp(1024, 1 << 20) as i32;
        // The child is registered for cleanup as it is made: a SIGINT or SIGTERM to this
        // process kills it (and waits for it) before the mounts it may hold files open on are
        // undone. The child itself dies by those signals: the handlers it inherits would only
        // write to this process's cleanup pipe and let it go on (a writer at scale 1: minutes).
        // After a SIGKILL of this process (no cleanup runs) the child dies too: a writer left
        // going would keep the mount, loop and zram device that `layoutlab clean` must remove
        // busy for as long as its write takes.
        // SAFETY: getpid(2) has no preconditions.
        let parent = unsafe { libc::getpid() };
        let (pid, id) = cleanup::creating(|| -> Result<(libc::pid_t, CleanupId)> {
            // SAFETY: the child below makes only async-signal-safe calls (the caller's promise
            // for `f`, and signal/prctl/getppid/open/write/close/_exit here).
            let pid = unsafe { libc::fork() };
            if pid < 0 {
                return Err(RigError::last_os("fork"));
            }
            if pid == 0 {
                // SAFETY: async-signal-safe calls on a buffer made before the fork.
                unsafe {
                    libc::signal(libc::SIGINT, libc::SIG_DFL);
                    libc::signal(libc::SIGTERM, libc::SIG_DFL);
                    close_all_but(&keep, open_max);
                    if crate::system::die_with_parent(parent).is_err() || join_self(&procs).is_err()
                    {
                        libc::_exit(125);
                    }
                    let code = f();
                    libc::_exit(code);
                }
            }
            let id = cleanup::register(
                format!("child {pid} in {}", self.path.display()),
                move || {
                    // SAFETY: our own child (reaped by at most one of the two waiters).
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                        let mut status = 0;
                        libc::waitpid(pid, &mut status, 0);
                    }
                },
            );
            Ok((pid, id))
        })?;
        let waited = Self::wait_child(pid, &self.path);
        cleanup::forget(&id);
        waited
    }

    /// Waits for the child `pid` of [`Self::run_in_child`] and returns its exit status.
    fn wait_child(pid: libc::pid_t, path: &Path) -> Result<i32> {
        let mut status = 0;
        loop {
            // SAFETY: waiting for our own child.
            if unsafe { libc::waitpid(pid, &mut status, 0) } == pid {
                break;
            }
            if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return Err(RigError::last_os("waitpid"));
            }
        }
        if !libc::WIFEXITED(status) {
            return Err(RigError::Unsupported(format!(
                "the child in {} ended without exiting (status {status})",
                path.display()
            )));
        }
        match libc::WEXITSTATUS(status) {
            125 => Err(RigError::Unsupported(format!(
                "the child could not join {}",
                path.display()
            ))),
            code => Ok(code),
        }
    }
}

/// Closes every descriptor from 3 up but `keep` (sorted, each above 2): close_range(2) over
/// the gaps, or close(2) one by one below `open_max` where the kernel has no close_range
/// (before 5.9). Only system calls: what a forked child of a threaded process may make.
///
/// # Safety
/// Closes descriptors others may own: call it only in a freshly forked child.
unsafe fn close_all_but(keep: &[std::os::fd::RawFd], open_max: i32) {
    let close_range = |from: i32, to: i32| {
        // SAFETY: a system call on plain integers.
        let r = unsafe { libc::syscall(libc::SYS_close_range, from as u32, to as u32, 0u32) };
        if r != 0 {
            for fd in from..=to.min(open_max) {
                // SAFETY: as above.
                unsafe { libc::close(fd) };
            }
        }
    };
    let mut from = 3;
    for &k in keep {
        if k > from {
            close_range(from, k - 1);
        }
        from = k + 1;
    }
    close_range(from, i32::MAX);
}

impl Drop for MemCgroup {
    fn drop(&mut self) {
        if let Some(id) = self.cleanup.take() {
            cleanup::run(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn can_make_cgroups() -> bool {
        crate::cgroup::tests::can_make_in(&MEMORY)
    }

    #[test]
    fn a_limit_holds_the_page_cache_of_the_child_inside_and_cleanup_removes_it() {
        if !can_make_cgroups() {
            return;
        }
        let dir = crate::TempDir::new(&std::env::temp_dir(), "layoutlab-memcgtest").unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, vec![1u8; 32 << 20]).unwrap();
        crate::drop_caches().unwrap();
        let cg = MemCgroup::create(8 << 20).unwrap();
        assert_eq!(cg.limit_bytes().unwrap(), 8 << 20);
        let path = cg.path().to_path_buf();
        let f = std::fs::File::open(&file).unwrap();
        let mut buf = vec![0u8; 1 << 20];
        let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
        // SAFETY: the child only calls pread on a descriptor and buffer made before.
        let code = unsafe {
            cg.run_in_child(&[fd], || {
                for k in 0..32 {
                    let n = libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), k << 20);
                    if n != buf.len() as isize {
                        return 1;
                    }
                }
                0
            })
        }
        .unwrap();
        assert_eq!(code, 0);
        // 32 MiB read through an 8 MiB limit: the cgroup never held more than the limit,
        // and it did charge the reads (more than half the limit).
        let max = cg.max_usage_bytes().unwrap();
        assert!(max <= 8 << 20 && max > 4 << 20, "{max}");
        std::fs::remove_file(&file).unwrap();
        drop(cg);
        assert!(!path.exists(), "{} left behind", path.display());
        let e = MemCgroup::create(4096).err().unwrap().to_string();
        assert!(e.contains("below 1 MiB"), "{e}");
    }

    /// The child holds only what it was given: another descriptor of the process (here a
    /// file of this thread's, as another thread's would be) is closed in the child before
    /// its body runs, and stays open in the parent.
    #[test]
    fn the_child_keeps_only_the_descriptors_it_is_given() {
        if !can_make_cgroups() {
            return;
        }
        let dir = crate::TempDir::new(&std::env::temp_dir(), "layoutlab-memcgfds").unwrap();
        let a = std::fs::File::create(dir.path().join("a")).unwrap();
        let b = std::fs::File::create(dir.path().join("b")).unwrap();
        // The kernel gives the lowest free numbers, and the other tests of this binary open
        // and close files at the same time: which of the two is lower is not known, so the
        // lower one is kept and the other must be closed.
        let (fa, fb) = (
            std::os::fd::AsRawFd::as_raw_fd(&a),
            std::os::fd::AsRawFd::as_raw_fd(&b),
        );
        let (k, o) = (fa.min(fb), fa.max(fb));
        assert!(o > k, "the closed one lies above the kept one ({o} > {k})");
        let cg = MemCgroup::create(8 << 20).unwrap();
        // SAFETY: the child only calls fcntl on plain integers.
        let code = unsafe {
            cg.run_in_child(&[k], || {
                let open = |fd| libc::fcntl(fd, libc::F_GETFD) >= 0;
                match (open(k), open(o), open(2)) {
                    (true, false, true) => 0,
                    (false, _, _) => 1,
                    (_, true, _) => 2,
                    _ => 3,
                }
            })
        }
        .unwrap();
        assert_eq!(
            code, 0,
            "1: the kept one closed; 2: the other left open; 3: stderr closed"
        );
        // SAFETY: fcntl on this process's own descriptor.
        assert!(unsafe { libc::fcntl(o, libc::F_GETFD) } >= 0);
        drop((a, b));
        // The directory goes only when empty: take the two files out first, or every run of
        // this test leaves one behind in the temp directory.
        for name in ["a", "b"] {
            std::fs::remove_file(dir.path().join(name)).unwrap();
        }
        let path = dir.path().to_path_buf();
        drop(dir);
        assert!(!path.exists(), "{} left behind", path.display());
    }

    /// What the cache check's retry rests on: a child the cgroup's OOM killer kills is an
    /// error of `run_in_child` (killed, not exited), and `oom_kills` counts it.
    #[test]
    fn an_oom_killed_child_is_an_error_and_counted() {
        if !can_make_cgroups() {
            return;
        }
        let cg = MemCgroup::create(4 << 20).unwrap();
        assert_eq!(cg.oom_kills().unwrap(), 0);
        // SAFETY: the child only calls mmap and writes to the memory it mapped.
        let r = unsafe {
            cg.run_in_child(&[], || {
                let len = 64usize << 20;
                let p = libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                );
                if p == libc::MAP_FAILED {
                    return 2;
                }
                // 64 MiB of anonymous memory touched in a 4 MiB cgroup (no swap is charged
                // here: the OOM killer ends it).
                for off in (0..len).step_by(4096) {
                    *p.cast::<u8>().add(off) = 1;
                }
                0
            })
        };
        assert!(r.is_err(), "{r:?}");
        assert!(cg.oom_kills().unwrap() >= 1);
    }
}
