//! What a killed layoutlab left behind, found and removed.
//!
//! The cleanup registry undoes everything on drop, error, panic, SIGINT and SIGTERM, but
//! nothing runs on SIGKILL (or a power cut of the test VM): a tracefs instance keeps its ring
//! buffers and enabled events, a private mount stays mounted, a loop device under that mount
//! stays attached, and temp files stay in `$TMPDIR`.
//!
//! Everything the rig creates carries its creator's PID in its name: tracefs instances
//! `layoutlab-PID-N`, and in the temp directory `layoutlab-PID-N` (work directories),
//! `layoutlab-mnt-PID-N` (mount points), `layoutlab-trace-PID-N.txt` (trace text). An item is
//! stale only when that process no longer exists; anything of a live process, or not named this
//! way, is never touched — so the sweep keeps the rig's rule of touching only what it created.
//! Images made in a user-chosen `--workdir` are not named by PID and are left to the user.
//! Memory cgroups are named `layoutlab-PID-N` wherever in the v1 memory hierarchy their run
//! made them. zram devices carry no name: the rig records each one it makes as a temp file
//! `layoutlab-zram-PID-ID` holding its size; a device is stale when its record's process is dead
//! and the device still has that size and no holder (loop devices stacked on it go first).
//!
//! Removal order matters: tracefs instances first (they hold nothing else), then mounts under
//! stale temp paths (a mount pins a loop device and makes its mount point undeletable), then
//! loop devices whose backing file is a stale temp path, then the temp files and directories
//! (a directory is removed only once no mount lies beneath it).

use crate::error::{Result, RigError};
use std::path::{Path, PathBuf};

/// The kind of a leftover.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StaleKind {
    /// A tracefs instance directory.
    TracefsInstance,
    /// A mount whose mount point is a stale temp path.
    Mount,
    /// A loop device backed by a file under a stale temp path.
    LoopDevice,
    /// A zram device the rig recorded making.
    Zram,
    /// A memory cgroup the rig made (`layoutlab-PID-N`).
    MemCgroup,
    /// A cpu cgroup the rig made to throttle a traced program (`layoutlab-PID-N`).
    CpuCgroup,
    /// A file or directory in the temp directory.
    TempPath,
}

impl StaleKind {
    /// A stable name for reports (`tracefs_instance`, `mount`, `loop_device`, `zram`,
    /// `memory_cgroup`, `cpu_cgroup`, `temp_path`).
    pub fn as_str(self) -> &'static str {
        match self {
            StaleKind::TracefsInstance => "tracefs_instance",
            StaleKind::Mount => "mount",
            StaleKind::LoopDevice => "loop_device",
            StaleKind::Zram => "zram",
            StaleKind::MemCgroup => "memory_cgroup",
            StaleKind::CpuCgroup => "cpu_cgroup",
            StaleKind::TempPath => "temp_path",
        }
    }
}

/// One leftover of a process that no longer exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stale {
    /// What it is.
    pub kind: StaleKind,
    /// Its path (instance directory, mount point, `/dev/loopN`, temp path).
    pub path: PathBuf,
    /// The PID in its name (or in its backing file's or mount point's name).
    pub pid: u32,
}

/// The PID a rig-made name carries: `layoutlab-[word-]PID-N[-kind][.ext]`, the kind a word that
/// starts with a letter (a kernel file system's sparse image: `layoutlab-kfs-PID-N-ext3.img`).
pub fn pid_in_name(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("layoutlab-")?;
    let mut parts = rest.split('-');
    let first = parts.next()?;
    let pid_text = if first.bytes().all(|b| b.is_ascii_digit()) {
        first
    } else if first.bytes().all(|b| b.is_ascii_lowercase()) {
        parts.next()?
    } else {
        return None;
    };
    // A sequence number follows the PID: `layoutlab-12` alone is someone else's name.
    let seq = parts.next()?;
    let seq = seq.split('.').next()?;
    let kind_ok = match parts.next() {
        None => true,
        Some(kind) => {
            let kind = kind.split('.').next().unwrap_or("");
            kind.starts_with(|c: char| c.is_ascii_lowercase())
                && kind
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        }
    };
    if pid_text.is_empty()
        || !pid_text.bytes().all(|b| b.is_ascii_digit())
        || seq.is_empty()
        || !seq.bytes().all(|b| b.is_ascii_digit())
        || !kind_ok
        || parts.next().is_some()
    {
        return None;
    }
    pid_text.parse().ok().filter(|&p| p > 0)
}

/// Whether process `pid` exists (a zombie counts: its parent may still clean up).
pub fn process_exists(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// The stale PID of `path` if any component from `root` down is a rig-made name of a dead
/// process.
fn stale_pid_under(path: &Path, root: &Path, alive: &dyn Fn(u32) -> bool) -> Option<u32> {
    let rel = path.strip_prefix(root).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let pid = pid_in_name(first)?;
    (!alive(pid)).then_some(pid)
}

/// Mount points of this process's mount namespace.
fn mount_points() -> Result<Vec<PathBuf>> {
    Ok(crate::mount::mounts()?
        .into_iter()
        .map(|(p, _)| p)
        .collect())
}

/// tracefs mount points (where instances live).
fn tracefs_roots() -> Vec<PathBuf> {
    crate::tracefs::tracefs_mounts().unwrap_or_default()
}

/// Finds the leftovers of dead layoutlab processes: tracefs instances in every mounted tracefs,
/// and mounts, loop devices and temp paths under `temp_dir`.
pub fn find(temp_dir: &Path) -> Result<Vec<Stale>> {
    find_with(temp_dir, &process_exists)
}

fn find_with(temp_dir: &Path, alive: &dyn Fn(u32) -> bool) -> Result<Vec<Stale>> {
    let mut out = Vec::new();
    let mut seen_instances = std::collections::BTreeSet::new();
    // tracefs is one superblock however often it is mounted; with no mount at all (the rig
    // then mounts its own, privately), look through a mount of our own for the scan.
    let mut roots = tracefs_roots();
    let _scan_mount = if roots.is_empty() && crate::system::is_root() {
        crate::mount::Mount::new(Path::new("nodev"), None, "tracefs", false, "")
            .ok()
            .inspect(|m| roots.push(m.target().to_path_buf()))
    } else {
        None
    };
    for root in roots {
        let Ok(dir) = std::fs::read_dir(root.join("instances")) else {
            continue;
        };
        for e in dir.flatten() {
            let name = e.file_name();
            let Some(pid) = name.to_str().and_then(pid_in_name) else {
                continue;
            };
            // The same tracefs may be mounted twice; an instance is one item.
            if !alive(pid) && seen_instances.insert(name.clone()) {
                out.push(Stale {
                    kind: StaleKind::TracefsInstance,
                    path: e.path(),
                    pid,
                });
            }
        }
    }
    let mut mounts: Vec<(PathBuf, u32)> = mount_points()?
        .into_iter()
        .filter_map(|m| stale_pid_under(&m, temp_dir, alive).map(|pid| (m, pid)))
        .collect();
    // Innermost first, so nested mounts come off in order.
    mounts.sort_by_key(|(m, _)| std::cmp::Reverse(m.components().count()));
    out.extend(mounts.into_iter().map(|(path, pid)| Stale {
        kind: StaleKind::Mount,
        path,
        pid,
    }));
    let zrams = stale_zrams(temp_dir, alive);
    if let Ok(dir) = std::fs::read_dir("/sys/block") {
        let mut loops: Vec<_> = dir
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_str()?.to_string();
                name.strip_prefix("loop")?.parse::<u32>().ok()?;
                let backing = std::fs::read_to_string(e.path().join("loop/backing_file")).ok()?;
                let backing = PathBuf::from(backing.trim_end().trim_end_matches(" (deleted)"));
                let pid = stale_pid_under(&backing, temp_dir, alive)
                    .or_else(|| zrams.iter().find(|z| z.path == backing).map(|z| z.pid))?;
                Some(Stale {
                    kind: StaleKind::LoopDevice,
                    path: PathBuf::from("/dev").join(name),
                    pid,
                })
            })
            .collect();
        loops.sort_by(|a, b| a.path.cmp(&b.path));
        out.extend(loops);
    }
    out.extend(zrams);
    for (kind, found) in [
        (StaleKind::MemCgroup, crate::memcg::MEMORY.stale(alive)),
        (StaleKind::CpuCgroup, crate::cpucg::CPU.stale(alive)),
    ] {
        out.extend(
            found
                .into_iter()
                .map(|(path, pid)| Stale { kind, path, pid }),
        );
    }
    let mut temps: Vec<_> = std::fs::read_dir(temp_dir)
        .map_err(|e| RigError::io(format!("read {}", temp_dir.display()), e))?
        .flatten()
        .filter_map(|e| {
            let pid = stale_pid_under(&e.path(), temp_dir, alive)?;
            Some(Stale {
                kind: StaleKind::TempPath,
                path: e.path(),
                pid,
            })
        })
        .collect();
    temps.sort_by(|a, b| a.path.cmp(&b.path));
    out.extend(temps);
    Ok(out)
}

/// zram devices recorded by dead processes that still have the recorded size.
fn stale_zrams(temp_dir: &Path, alive: &dyn Fn(u32) -> bool) -> Vec<Stale> {
    let Ok(dir) = std::fs::read_dir(temp_dir) else {
        return Vec::new();
    };
    let mut out: Vec<Stale> = dir
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            name.strip_prefix(crate::zram::RECORD_PREFIX)?;
            let pid = pid_in_name(&name)?;
            if alive(pid) {
                return None;
            }
            recorded_zram_present(&e.path()).map(|path| Stale {
                kind: StaleKind::Zram,
                path,
                pid,
            })
        })
        .collect();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// How long removing a stale zram device waits for its last opener to close it.
const ZRAM_RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The zram device a record `layoutlab-zram-PID-ID` names, when it still has the recorded size:
/// then it is the record's device (found stale by [`find`]), and the record must outlive a
/// failed removal of it.
fn recorded_zram_present(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    let rest = name.strip_prefix(crate::zram::RECORD_PREFIX)?;
    let id: u32 = rest.split('-').nth(1)?.parse().ok()?;
    let recorded = std::fs::read_to_string(path).ok()?;
    let size = std::fs::read_to_string(format!("/sys/block/zram{id}/disksize")).ok()?;
    (recorded.trim() == size.trim()).then(|| PathBuf::from(format!("/dev/zram{id}")))
}

/// Removes one leftover. Mounts come off (lazily if busy), loop devices are detached, a temp
/// directory is removed only if nothing is mounted beneath it.
pub fn remove(item: &Stale) -> Result<()> {
    match item.kind {
        StaleKind::TracefsInstance => {
            // The scan may have looked through a mount that is gone now: find the instance by
            // name under a tracefs mounted now (or one of our own, for the removal).
            let name = item.path.file_name().unwrap_or_default().to_owned();
            let mut roots = tracefs_roots();
            let _mount = if roots.is_empty() {
                let m = crate::mount::Mount::new(Path::new("nodev"), None, "tracefs", false, "")?;
                roots.push(m.target().to_path_buf());
                Some(m)
            } else {
                None
            };
            let path = roots[0].join("instances").join(name);
            let _ = std::fs::write(path.join("tracing_on"), "0");
            std::fs::remove_dir(&path)
                .or_else(|e| {
                    if e.kind() == std::io::ErrorKind::NotFound {
                        Ok(())
                    } else {
                        Err(e)
                    }
                })
                .map_err(|e| RigError::io(format!("rmdir {}", path.display()), e))
        }
        StaleKind::Mount => crate::mount::unmount_checked(&item.path),
        StaleKind::MemCgroup => crate::memcg::MEMORY.remove_stale(&item.path),
        StaleKind::CpuCgroup => crate::cpucg::CPU.remove_stale(&item.path),
        StaleKind::LoopDevice => crate::loopdev::detach_path(&item.path),
        StaleKind::Zram => {
            let name = item.path.file_name().unwrap_or_default().to_string_lossy();
            let id = name.trim_start_matches("zram");
            let holders = Path::new("/sys/block").join(&*name).join("holders");
            if std::fs::read_dir(&holders).map(|d| d.count()).unwrap_or(0) > 0 {
                return Err(RigError::InvalidArgument(format!(
                    "not removing {}: something still holds it",
                    item.path.display()
                )));
            }
            let id: u32 = id.parse().map_err(|_| {
                RigError::InvalidArgument(format!("{} is no zram device", item.path.display()))
            })?;
            // The loop device on it was detached a moment ago, lazily: it lets go of the zram
            // device only when its last opener closes (a CI run's `clean` met EBUSY here).
            crate::zram::hot_remove_waiting(id, ZRAM_RELEASE_WAIT)
                .map_err(|e| RigError::io(format!("hot_remove {}", item.path.display()), e))
        }
        StaleKind::TempPath => {
            if let Some(dev) = recorded_zram_present(&item.path) {
                return Err(RigError::InvalidArgument(format!(
                    "not removing {}: {} it records is still there (the record is how \
                     `layoutlab clean` finds it)",
                    item.path.display(),
                    dev.display()
                )));
            }
            let meta = std::fs::symlink_metadata(&item.path)
                .map_err(|e| RigError::io(format!("stat {}", item.path.display()), e))?;
            if meta.is_dir() {
                if let Some(m) = mount_points()?
                    .into_iter()
                    .find(|m| m.starts_with(&item.path))
                {
                    return Err(RigError::InvalidArgument(format!(
                        "not removing {}: {} is still mounted beneath it",
                        item.path.display(),
                        m.display()
                    )));
                }
                std::fs::remove_dir_all(&item.path)
            } else {
                std::fs::remove_file(&item.path)
            }
            .map_err(|e| RigError::io(format!("remove {}", item.path.display()), e))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_pid() {
        assert_eq!(pid_in_name("layoutlab-123-0"), Some(123));
        assert_eq!(pid_in_name("layoutlab-mnt-45-2"), Some(45));
        assert_eq!(pid_in_name("layoutlab-trace-7-11.txt"), Some(7));
        // A kernel file system's sparse image (KernelFs on Backing::SparseFile): a SIGKILLed
        // run's 10 GB image went unswept before (2026-11-27).
        assert_eq!(pid_in_name("layoutlab-kfs-16224-0-ext3.img"), Some(16224));
        assert_eq!(pid_in_name("layoutlab-kfs-16224-1-btrfs.img"), Some(16224));
        assert_eq!(pid_in_name("layoutlab-kfs-16224-1-3x.img"), None);
        assert_eq!(pid_in_name("layoutlab-kfs-16224-1-ext3-x.img"), None);
        // Not ours, or not in the rig's form.
        for n in [
            "layoutlab",
            "layoutlab-12",
            "layoutlab-results",
            "layoutlab-mnt-x-1",
            "layoutlab-0-1",
            "layoutlab-12-3-4",
            "ll-exp-12",
            "xlayoutlab-12-0",
            "layoutlab-Mnt-12-0",
            "layoutlab-12-x",
        ] {
            assert_eq!(pid_in_name(n), None, "{n}");
        }
    }

    #[test]
    fn only_dead_processes_items_are_found() {
        let root = std::env::temp_dir().join(format!("ll-stale-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        for n in [
            "layoutlab-1001-0",
            "layoutlab-trace-1001-3.txt",
            "layoutlab-2002-0",
            "layoutlab-results",
            "other-1001-0",
        ] {
            if n.ends_with(".txt") || n.starts_with("other") {
                std::fs::write(root.join(n), b"x").unwrap();
            } else {
                std::fs::create_dir(root.join(n)).unwrap();
                std::fs::write(root.join(n).join("image.img"), b"x").unwrap();
            }
        }
        // 1001 is dead, 2002 alive.
        let alive = |pid: u32| pid == 2002;
        let found = find_with(&root, &alive).unwrap();
        let temps: Vec<_> = found
            .iter()
            .filter(|s| s.kind == StaleKind::TempPath)
            .map(|s| s.path.file_name().unwrap().to_str().unwrap().to_string())
            .collect();
        assert_eq!(temps, ["layoutlab-1001-0", "layoutlab-trace-1001-3.txt"]);
        for s in found.iter().filter(|s| s.kind == StaleKind::TempPath) {
            remove(s).unwrap();
        }
        assert!(!root.join("layoutlab-1001-0").exists());
        assert!(!root.join("layoutlab-trace-1001-3.txt").exists());
        assert!(root.join("layoutlab-2002-0/image.img").exists());
        assert!(root.join("layoutlab-results").exists());
        assert!(root.join("other-1001-0").exists());
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn mountinfo_escapes_decode() {
        use crate::mount::unescape_octal;
        assert_eq!(unescape_octal(r"/tmp/a\040b"), "/tmp/a b");
        assert_eq!(unescape_octal(r"/tmp/x\\y"), r"/tmp/x\\y");
        assert_eq!(unescape_octal("/plain"), "/plain");
    }
}
