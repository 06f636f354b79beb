//! Mounts the rig made, unmounted on drop (and only those: it never unmounts what it found).

use crate::cleanup::{self, CleanupId};
use crate::error::{Result, RigError};
use crate::system::{require_root, TempDir};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A file system mounted by the rig; unmounted when dropped (its mount point too, if the rig
/// created it).
#[derive(Debug)]
pub struct Mount {
    target: PathBuf,
    cleanup: Option<CleanupId>,
    // Declared after `cleanup` so that it is removed after the unmount.
    _created_dir: Option<TempDir>,
}

fn c_string(text: &[u8], what: &str) -> Result<CString> {
    CString::new(text).map_err(|_| RigError::InvalidArgument(format!("{what} has a NUL byte")))
}

pub(crate) fn unmount(target: &Path) {
    let Ok(c_target) = CString::new(target.as_os_str().as_bytes()) else {
        return;
    };
    // A just-closed file can keep the mount busy for a moment; then detach lazily so that
    // nothing stays mounted.
    for _ in 0..20 {
        if unsafe { libc::umount2(c_target.as_ptr(), 0) } == 0 {
            return;
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EBUSY) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    unsafe { libc::umount2(c_target.as_ptr(), libc::MNT_DETACH) };
}

/// Unmounts `target` (for the stale sweep): as the drop does, then checks it is gone.
pub(crate) fn unmount_checked(target: &Path) -> Result<()> {
    unmount(target);
    if mounts()?.iter().any(|(point, _)| point == target) {
        return Err(RigError::last_os(format!("umount {}", target.display())));
    }
    Ok(())
}

/// This process's mounts from `/proc/self/mountinfo`: (mount point, file system type), mount
/// points with the kernel's octal escapes (`\040` for a space) decoded.
pub(crate) fn mounts() -> Result<Vec<(PathBuf, String)>> {
    let text = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| RigError::io("read /proc/self/mountinfo", e))?;
    Ok(text
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let fstype = right.split_whitespace().next()?;
            let point = left.split_whitespace().nth(4)?;
            Some((PathBuf::from(unescape_octal(point)), fstype.to_string()))
        })
        .collect())
}

/// Decodes the `\ooo` escapes the kernel writes in mount tables.
pub(crate) fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 4 <= b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = b[i + 1..i + 4]
                .iter()
                .fold(0u32, |v, c| v * 8 + u32::from(c - b'0'));
            out.push(v as u8);
            i += 4;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Mount {
    /// Mounts `source` (a device, or `nodev` for pseudo file systems) of type `fstype` with
    /// `options` (the comma-separated data string, e.g. `"data=ordered"`), read-only if asked.
    /// With `target` `None`, a fresh directory under the temp dir is created and removed again.
    pub fn new(
        source: &Path,
        target: Option<&Path>,
        fstype: &str,
        read_only: bool,
        options: &str,
    ) -> Result<Mount> {
        require_root("mounting a file system")?;
        let created_dir = match target {
            Some(_) => None,
            None => Some(TempDir::new(&std::env::temp_dir(), "layoutlab-mnt")?),
        };
        let target = match (&created_dir, target) {
            (Some(dir), _) => dir.path().to_path_buf(),
            (None, Some(t)) => t.to_path_buf(),
            (None, None) => unreachable!("one of the two is set above"),
        };
        let c_source = c_string(source.as_os_str().as_bytes(), "mount source")?;
        let c_target = c_string(target.as_os_str().as_bytes(), "mount target")?;
        let c_type = c_string(fstype.as_bytes(), "file-system type")?;
        let c_options = c_string(options.as_bytes(), "mount options")?;
        let flags = if read_only { libc::MS_RDONLY } else { 0 };
        let rc = unsafe {
            libc::mount(
                c_source.as_ptr(),
                c_target.as_ptr(),
                c_type.as_ptr(),
                flags,
                c_options.as_ptr() as *const libc::c_void,
            )
        };
        if rc != 0 {
            return Err(RigError::last_os(format!(
                "mount -t {fstype} -o {options} {} {}",
                source.display(),
                target.display()
            )));
        }
        let owned = target.clone();
        let cleanup = cleanup::register(format!("mount {}", target.display()), move || {
            unmount(&owned)
        });
        Ok(Mount {
            target,
            cleanup: Some(cleanup),
            _created_dir: created_dir,
        })
    }

    /// A private tmpfs of at most `size_bytes` on a fresh temp directory: a work directory
    /// whose files cost memory only for the blocks written (holes are free, and punching
    /// them is how libext2fs zeroes inode tables there), unmounted with everything in it at
    /// the end. The size is a cap the kernel enforces, so a run can never eat all memory.
    pub fn tmpfs(size_bytes: u64) -> Result<Mount> {
        let size_kb = (size_bytes / 1024).max(1024);
        Mount::new(
            Path::new("layoutlab"),
            None,
            "tmpfs",
            false,
            &format!("size={size_kb}k,mode=0700"),
        )
    }

    /// Where it is mounted.
    pub fn target(&self) -> &Path {
        &self.target
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if let Some(id) = self.cleanup.take() {
            cleanup::run(&id);
        }
    }
}
