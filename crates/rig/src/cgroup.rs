//! What the rig's cgroups share (cgroup v1, one hierarchy per controller, as on this machine):
//! finding a controller's hierarchy and the cgroup this process is in there, making a
//! `layoutlab-PID-N` cgroup beneath it and registering its removal in one step, finding the ones
//! a dead run left, and removing one (its tasks back to the parent first).
//!
//! The cgroup is made inside the cgroup this process is in: whoever started us may limit us,
//! and we only narrow that. It touches no cgroup it did not create. [`MemCgroup`] (page-cache
//! limits) and [`CpuThrottle`] (a period CPU's speed) are the two kinds.
//!
//! [`MemCgroup`]: crate::MemCgroup
//! [`CpuThrottle`]: crate::CpuThrottle

use crate::cleanup::{self, CleanupId};
use crate::error::{Result, RigError};
use std::path::{Path, PathBuf};

/// One v1 controller the rig makes cgroups in.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Controller {
    /// The controller's name in /proc/self/mountinfo and /proc/self/cgroup (`memory`, `cpu`).
    pub name: &'static str,
    /// How its cgroups are named in messages ("memory cgroup").
    pub what: &'static str,
    /// What to do when it is not mounted (the message's second half).
    pub missing_hint: &'static str,
    /// Run before each attempt to remove one of its cgroups, once its tasks have left (the
    /// memory controller reclaims the charges that would keep the directory busy).
    pub before_rmdir: fn(&Path),
}

impl Controller {
    /// Where the controller's hierarchy is mounted, from /proc/self/mountinfo.
    pub fn root(&self) -> Result<PathBuf> {
        let text = std::fs::read_to_string("/proc/self/mountinfo")
            .map_err(|e| RigError::io("reading /proc/self/mountinfo", e))?;
        for line in text.lines() {
            let Some((left, right)) = line.split_once(" - ") else {
                continue;
            };
            let mut r = right.split_whitespace();
            let (fstype, _source, options) = (r.next(), r.next(), r.next().unwrap_or(""));
            if fstype == Some("cgroup") && options.split(',').any(|o| o == self.name) {
                if let Some(mount_point) = left.split_whitespace().nth(4) {
                    return Ok(PathBuf::from(mount_point));
                }
            }
        }
        Err(RigError::Unsupported(format!(
            "no cgroup v1 {} controller is mounted: {}",
            self.name, self.missing_hint
        )))
    }

    /// The cgroup of the controller this process is in, as a directory.
    pub fn own(&self) -> Result<PathBuf> {
        let root = self.root()?;
        let text = std::fs::read_to_string("/proc/self/cgroup")
            .map_err(|e| RigError::io("reading /proc/self/cgroup", e))?;
        let rel = text
            .lines()
            .filter_map(|l| {
                let mut fields = l.splitn(3, ':').skip(1);
                fields.next().zip(fields.next())
            })
            .find(|(controllers, _)| controllers.split(',').any(|c| c == self.name))
            .map(|(_, path)| path.trim_start_matches('/').to_string())
            .ok_or_else(|| {
                RigError::Unsupported(format!("this process is in no {} cgroup", self.name))
            })?;
        Ok(root.join(rel))
    }

    /// Makes `layoutlab-PID-N` inside [`Controller::own`] and registers its removal with the
    /// cleanup registry, as one step (see [`cleanup::creating`]). Returns its directory, the
    /// parent its tasks go back to, and the cleanup.
    pub fn create(self) -> Result<(PathBuf, PathBuf, CleanupId)> {
        let parent = self.own()?;
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        loop {
            let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path = parent.join(format!("layoutlab-{}-{n}", std::process::id()));
            let made = cleanup::creating(|| {
                std::fs::create_dir(&path).map(|()| {
                    let (owned, p) = (path.clone(), parent.clone());
                    cleanup::register(format!("{} {}", self.what, path.display()), move || {
                        self.remove(&owned, &p)
                    })
                })
            });
            match made {
                Ok(id) => return Ok((path, parent, id)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(RigError::io(format!("mkdir {}", path.display()), e)),
            }
        }
    }

    /// Moves every thread of `cgroup` to `parent` and removes it, retrying while the kernel
    /// still accounts a moved thread out (EBUSY).
    pub fn remove(&self, cgroup: &Path, parent: &Path) {
        for _ in 0..50 {
            if let Ok(tasks) = std::fs::read_to_string(cgroup.join("tasks")) {
                for tid in tasks.split_whitespace() {
                    let _ = std::fs::write(parent.join("tasks"), tid);
                }
            }
            (self.before_rmdir)(cgroup);
            match std::fs::remove_dir(cgroup) {
                Ok(()) => return,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
            }
        }
        eprintln!(
            "layoutlab-rig: could not remove the {} {} (still busy)",
            self.what,
            cgroup.display()
        );
    }

    /// Cgroups named by the rig (`layoutlab-PID-N`) whose process is dead, anywhere in the
    /// controller's hierarchy (a killed run made its cgroup inside the cgroup it ran in, which
    /// may not be ours); none when the controller is not mounted.
    pub fn stale(&self, alive: &dyn Fn(u32) -> bool) -> Vec<(PathBuf, u32)> {
        fn walk(
            dir: &Path,
            depth: u32,
            alive: &dyn Fn(u32) -> bool,
            out: &mut Vec<(PathBuf, u32)>,
        ) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for e in entries.flatten() {
                if !e.file_type().is_ok_and(|t| t.is_dir()) {
                    continue;
                }
                let path = e.path();
                match e.file_name().to_str().and_then(crate::stale::pid_in_name) {
                    Some(pid) if !alive(pid) => out.push((path, pid)),
                    // A live run's cgroup holds nothing of the rig's beneath it.
                    Some(_) => {}
                    None if depth < 6 => walk(&path, depth + 1, alive, out),
                    None => {}
                }
            }
        }
        let mut out = Vec::new();
        if let Ok(root) = self.root() {
            walk(&root, 0, alive, &mut out);
        }
        out.sort();
        out
    }

    /// Removes a cgroup a dead run left (moving any task left in it to its parent).
    pub fn remove_stale(&self, cgroup: &Path) -> Result<()> {
        let parent = cgroup.parent().unwrap_or(cgroup).to_path_buf();
        self.remove(cgroup, &parent);
        if cgroup.exists() {
            return Err(RigError::Unsupported(format!(
                "the {} {} could not be removed",
                self.what,
                cgroup.display()
            )));
        }
        Ok(())
    }
}

/// Writes `value` to a cgroup file, naming both in the error.
pub(crate) fn write(path: &Path, value: &str) -> Result<()> {
    std::fs::write(path, value)
        .map_err(|e| RigError::io(format!("writing '{value}' to {}", path.display()), e))
}

/// Reads a cgroup file holding one number.
pub(crate) fn read_u64(path: &Path) -> Result<u64> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| RigError::io(format!("reading {}", path.display()), e))?;
    text.trim().parse().map_err(|_| RigError::Parse {
        source_name: path.display().to_string(),
        line: 1,
        reason: format!("not a number: '{}'", text.trim()),
    })
}

/// Makes the calling process join the cgroup whose `cgroup.procs` is `procs`: "0" moves the
/// writer. Only open/write/close on a path made before the fork, so it is safe between fork and
/// exec.
///
/// # Safety
/// Call it only where async-signal-safe calls are required to be enough (a forked child).
pub(crate) unsafe fn join_self(procs: &std::ffi::CStr) -> std::io::Result<()> {
    let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let written = libc::write(fd, b"0".as_ptr().cast(), 1);
    let err = std::io::Error::last_os_error();
    libc::close(fd);
    if written != 1 {
        return Err(err);
    }
    Ok(())
}

/// `path/cgroup.procs` as a C string, made before a fork.
pub(crate) fn procs_cstring(path: &Path) -> Result<std::ffi::CString> {
    std::ffi::CString::new(path.join("cgroup.procs").as_os_str().as_encoded_bytes())
        .map_err(|_| RigError::InvalidArgument("cgroup path with a NUL byte".into()))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Whether tests can make a cgroup of `controller` here; says so on stderr when they
    /// cannot, so a skipped test is never silent.
    pub(crate) fn can_make_in(controller: &Controller) -> bool {
        let can = crate::is_root() && controller.root().is_ok();
        if !can {
            eprintln!(
                "skipped: needs root and a cgroup v1 {} controller",
                controller.name
            );
        }
        can
    }

    /// For each kind the rig makes: a cgroup named for a dead PID, as a SIGKILLed run leaves
    /// it, is found and removed; a live run's is not.
    #[test]
    fn a_dead_runs_cgroup_is_found_and_removed_and_a_live_ones_is_not() {
        for (controller, dead_pid) in [
            (crate::memcg::MEMORY, 4_000_001),
            (crate::cpucg::CPU, 4_000_002),
        ] {
            if !can_make_in(&controller) {
                continue;
            }
            let (live, parent, id) = controller.create().unwrap();
            // A PID the alive() below calls dead (and few machines ever hand out).
            let dead = parent.join(format!("layoutlab-{dead_pid}-0"));
            std::fs::create_dir(&dead).unwrap();
            let alive = |pid: u32| pid != dead_pid;
            let found = controller.stale(&alive);
            assert!(
                found.iter().any(|(p, pid)| *p == dead && *pid == dead_pid),
                "{found:?}"
            );
            assert!(!found.iter().any(|(p, _)| *p == live), "{found:?}");
            controller.remove_stale(&dead).unwrap();
            assert!(!dead.exists());
            assert!(live.exists());
            crate::cleanup::run(&id);
            assert!(!live.exists(), "{} left behind", live.display());
        }
    }
}
