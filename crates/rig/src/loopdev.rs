//! Loop devices the rig attaches over a file, with their queue tuned like the modelled disk.
//!
//! Attach uses the kernel's ioctls directly (`LOOP_CTL_GET_FREE`, then `LOOP_CONFIGURE`) with
//! `LO_FLAGS_AUTOCLEAR`, and the rig keeps its own descriptor open for the device's life: the
//! kernel detaches an autoclear device at its last close, so even a `SIGKILL`ed run leaves no
//! loop device behind. Drop asks for the detach explicitly (`LOOP_CLR_FD`, which the kernel
//! defers while e.g. a mount still holds the device) and then closes the descriptor.

use crate::cleanup::{self, CleanupId};
use crate::error::{Result, RigError};
use crate::system::{c_path, read_attr, require_root, write_attr};
use layoutlab_trace::DeviceQueue;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

// <linux/loop.h>; not all of these are in the libc crate.
const LOOP_CLR_FD: libc::c_ulong = 0x4C01;
const LOOP_CONFIGURE: libc::c_ulong = 0x4C0A;
const LOOP_CTL_GET_FREE: libc::c_ulong = 0x4C82;
const LO_FLAGS_READ_ONLY: u32 = 1;
const LO_FLAGS_AUTOCLEAR: u32 = 4;
const LO_FLAGS_DIRECT_IO: u32 = 16;
const LO_NAME_SIZE: usize = 64;
const BLKFLSBUF: libc::c_ulong = 0x1261;

#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; LO_NAME_SIZE],
    lo_crypt_name: [u8; LO_NAME_SIZE],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

#[repr(C)]
struct LoopConfig {
    fd: u32,
    block_size: u32,
    info: LoopInfo64,
    reserved: [u64; 8],
}

/// Queue attributes the rig may change, restored at detach.
const TUNED_ATTRS: [&str; 4] = ["read_ahead_kb", "max_sectors_kb", "scheduler", "rotational"];

/// The queue a loop device presents to the kernel above it: the modelled disk's, not the
/// backing store's. A loop device inherits `rotational` from its backing file's device (0 on
/// tmpfs, zram and SSDs), and the kernel and the file systems may choose differently for a
/// non-rotational queue (btrfs's `ssd` mode, ext4's `mb_max_linear_groups`; docs/rig.md,
/// "The queue a capture presents"). `None` leaves what the kernel chose; the scheduler is
/// always `none` ([`LoopDevice::set_scheduler_none`]).
///
/// `physical_block_size` is not here: the loop driver sets it equal to the logical block size
/// and sysfs does not let it be written, so a loop device cannot present a 512-byte-sector
/// drive with 4 KiB physical sectors. What it presents is recorded ([`LoopDevice::queue`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueSpec {
    /// `queue/rotational` (writable on loop devices).
    pub rotational: Option<bool>,
    /// `queue/read_ahead_kb`.
    pub read_ahead_kb: Option<u32>,
    /// `queue/max_sectors_kb`.
    pub max_sectors_kb: Option<u32>,
    /// `queue/logical_block_size` in bytes: read-only in sysfs, set when the device is
    /// attached (`LOOP_CONFIGURE`'s block size, as `losetup --sector-size`); 512 to 4096, a
    /// power of two.
    pub logical_block_bytes: Option<u32>,
}

/// The value to write back: for `scheduler` (`[none] mq-deadline`) the bracketed one.
fn selected_value(text: &str) -> String {
    match (text.find('['), text.find(']')) {
        (Some(open), Some(close)) if open < close => text[open + 1..close].to_string(),
        _ => text.to_string(),
    }
}

/// A loop device attached by the rig over a backing file; detached when dropped.
#[derive(Debug)]
pub struct LoopDevice {
    path: PathBuf,
    number: u32,
    major: u32,
    minor: u32,
    backing_file: PathBuf,
    fd: libc::c_int,
    cleanup: Option<CleanupId>,
}

fn open_raw(path: &Path, flags: libc::c_int) -> Result<libc::c_int> {
    let c_path = c_path(path)?;
    let fd = unsafe { libc::open(c_path.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(RigError::last_os(format!("open {}", path.display())));
    }
    Ok(fd)
}

impl LoopDevice {
    /// Attaches a free loop device over `file` (read-only if asked). Root only.
    pub fn attach(file: &Path, read_only: bool) -> Result<LoopDevice> {
        Self::attach_inner(file, read_only, None, false)
    }

    /// Attaches a free loop device over `file` presenting `queue` (its scheduler set to
    /// `none`); every attribute is read back, and one that did not take is an error (the
    /// device is detached again). Root only.
    pub fn attach_presenting(
        file: &Path,
        read_only: bool,
        queue: &QueueSpec,
    ) -> Result<LoopDevice> {
        Self::attach_presenting_with(file, read_only, queue, false)
    }

    /// [`LoopDevice::attach_presenting`] with the loop driver's direct I/O on
    /// (`LO_FLAGS_DIRECT_IO`, as `losetup --direct-io=on`): each request reaches the backing
    /// file as one `O_DIRECT` read or write instead of going through its page cache, so the
    /// file's owner (the emulator's FUSE daemon) sees and times every request. An error if the
    /// driver could not turn it on (`loop/dio` reads back 0).
    pub fn attach_direct_presenting(
        file: &Path,
        read_only: bool,
        queue: &QueueSpec,
    ) -> Result<LoopDevice> {
        let dev = Self::attach_presenting_with(file, read_only, queue, true)?;
        let dio = PathBuf::from(format!("/sys/block/loop{}/loop/dio", dev.number));
        if read_attr(&dio)? != "1" {
            return Err(RigError::Unsupported(format!(
                "{}: the loop driver did not turn direct I/O on over {}",
                dev.path.display(),
                dev.backing_file.display()
            )));
        }
        Ok(dev)
    }

    fn attach_presenting_with(
        file: &Path,
        read_only: bool,
        queue: &QueueSpec,
        direct_io: bool,
    ) -> Result<LoopDevice> {
        if let Some(bytes) = queue.logical_block_bytes {
            if !(512..=4096).contains(&bytes) || !bytes.is_power_of_two() {
                return Err(RigError::InvalidArgument(format!(
                    "logical block size {bytes} bytes: a loop device takes a power of two from 512 to 4096"
                )));
            }
        }
        let dev = Self::attach_inner(file, read_only, queue.logical_block_bytes, direct_io)?;
        dev.present(queue)?;
        Ok(dev)
    }

    /// Sets `queue`'s writable attributes (all but the logical block size, fixed at attach)
    /// and the `none` scheduler, and checks each took.
    fn present(&self, queue: &QueueSpec) -> Result<()> {
        // Order matters: on this kernel (6.18) writing `rotational` or `max_sectors_kb`
        // commits the queue's limits again, which recomputes the read-ahead (128 KiB became
        // 1024 after `rotational` was written), so read-ahead goes last, and everything is
        // checked once all is written.
        self.set_scheduler_none()?;
        if let Some(rotational) = queue.rotational {
            self.set_rotational(rotational)?;
        }
        if let Some(kb) = queue.max_sectors_kb {
            self.set_max_sectors_kb(kb)?;
        }
        if let Some(kb) = queue.read_ahead_kb {
            self.set_read_ahead_kb(kb)?;
        }
        let now = self.queue()?;
        let differs = |what: &str, asked: String, got: String| {
            RigError::Unsupported(format!(
                "{}: {what} is {got} after setting {asked}",
                self.path.display()
            ))
        };
        if let Some(asked) = queue.rotational {
            if asked != now.rotational {
                return Err(differs(
                    "rotational",
                    u8::from(asked).to_string(),
                    u8::from(now.rotational).to_string(),
                ));
            }
        }
        for (what, asked, got) in [
            ("read_ahead_kb", queue.read_ahead_kb, now.read_ahead_kb),
            ("max_sectors_kb", queue.max_sectors_kb, now.max_sectors_kb),
            (
                "logical_block_size",
                queue.logical_block_bytes,
                now.logical_block_bytes,
            ),
        ] {
            if let Some(asked) = asked {
                if asked != got {
                    return Err(differs(what, asked.to_string(), got.to_string()));
                }
            }
        }
        Ok(())
    }

    fn attach_inner(
        file: &Path,
        read_only: bool,
        logical_block_bytes: Option<u32>,
        direct_io: bool,
    ) -> Result<LoopDevice> {
        require_root("attaching a loop device")?;
        let backing_file = std::fs::canonicalize(file)
            .map_err(|e| RigError::io(format!("resolve {}", file.display()), e))?;
        let mode = if read_only {
            libc::O_RDONLY
        } else {
            libc::O_RDWR
        };
        let file_fd = open_raw(&backing_file, mode)?;
        // Attached and registered as one step (see `cleanup::creating`).
        let result = cleanup::creating(|| {
            Self::attach_fd(
                file_fd,
                &backing_file,
                read_only,
                logical_block_bytes,
                direct_io,
            )
        });
        unsafe { libc::close(file_fd) };
        result
    }

    fn attach_fd(
        file_fd: libc::c_int,
        backing_file: &Path,
        read_only: bool,
        logical_block_bytes: Option<u32>,
        direct_io: bool,
    ) -> Result<LoopDevice> {
        let control = open_raw(Path::new("/dev/loop-control"), libc::O_RDWR)?;
        // Another process may take the free device between GET_FREE and CONFIGURE: retry.
        let mut last_err = None;
        for _ in 0..32 {
            let number = unsafe { libc::ioctl(control, LOOP_CTL_GET_FREE as _) };
            if number < 0 {
                let err = RigError::last_os("LOOP_CTL_GET_FREE on /dev/loop-control");
                unsafe { libc::close(control) };
                return Err(err);
            }
            let path = PathBuf::from(format!("/dev/loop{number}"));
            let mode = if read_only {
                libc::O_RDONLY
            } else {
                libc::O_RDWR
            };
            let dev_fd = match open_raw(&path, mode) {
                Ok(fd) => fd,
                Err(e) => {
                    last_err = Some(e);
                    continue;
                }
            };
            let mut config: LoopConfig = unsafe { std::mem::zeroed() };
            config.fd = file_fd as u32;
            // 0 lets the driver choose (512 over a file, the backing device's for direct I/O).
            config.block_size = logical_block_bytes.unwrap_or(0);
            config.info.lo_flags = LO_FLAGS_AUTOCLEAR
                | if read_only { LO_FLAGS_READ_ONLY } else { 0 }
                | if direct_io { LO_FLAGS_DIRECT_IO } else { 0 };
            let name = backing_file.as_os_str().as_bytes();
            let n = name.len().min(LO_NAME_SIZE - 1);
            config.info.lo_file_name[..n].copy_from_slice(&name[..n]);
            let rc =
                unsafe { libc::ioctl(dev_fd, LOOP_CONFIGURE as _, &config as *const LoopConfig) };
            if rc != 0 {
                let os = std::io::Error::last_os_error();
                unsafe { libc::close(dev_fd) };
                if os.raw_os_error() == Some(libc::EBUSY) {
                    last_err = Some(RigError::io(
                        format!("LOOP_CONFIGURE {}", path.display()),
                        os,
                    ));
                    continue;
                }
                unsafe { libc::close(control) };
                return Err(RigError::io(
                    format!("LOOP_CONFIGURE {}", path.display()),
                    os,
                ));
            }
            unsafe { libc::close(control) };
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            if unsafe { libc::fstat(dev_fd, &mut st) } != 0 {
                let err = RigError::last_os(format!("fstat {}", path.display()));
                unsafe {
                    libc::ioctl(dev_fd, LOOP_CLR_FD as _, 0);
                    libc::close(dev_fd);
                }
                return Err(err);
            }
            let (major, minor) = (libc::major(st.st_rdev), libc::minor(st.st_rdev));
            let label = format!(
                "loop device {} over {}",
                path.display(),
                backing_file.display()
            );
            let shown = path.clone();
            // Loop devices outlive their attachment and keep queue settings: put back what
            // this one had, so the next user of loopN finds it as we found it.
            let queue = PathBuf::from(format!("/sys/block/loop{number}/queue"));
            let saved: Vec<(PathBuf, String)> = TUNED_ATTRS
                .iter()
                .filter_map(|name| {
                    let attr = queue.join(name);
                    let value = read_attr(&attr).ok()?;
                    Some((attr, selected_value(&value)))
                })
                .collect();
            let cleanup = cleanup::register(label, move || {
                for (attr, value) in &saved {
                    let _ = std::fs::write(attr, value);
                }
                detach(dev_fd, &shown)
            });
            return Ok(LoopDevice {
                path,
                number: number as u32,
                major,
                minor,
                backing_file: backing_file.to_path_buf(),
                fd: dev_fd,
                cleanup: Some(cleanup),
            });
        }
        unsafe { libc::close(control) };
        Err(last_err.unwrap_or_else(|| RigError::Unsupported("no free loop device".into())))
    }

    /// The device node, e.g. `/dev/loop3`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The loop number (3 for `/dev/loop3`).
    pub fn number(&self) -> u32 {
        self.number
    }

    /// (major, minor) of the device, as tracefs filters and reports it.
    pub fn dev(&self) -> (u32, u32) {
        (self.major, self.minor)
    }

    /// The file it is attached over (canonical path).
    pub fn backing_file(&self) -> &Path {
        &self.backing_file
    }

    fn queue_attr(&self, name: &str) -> PathBuf {
        PathBuf::from(format!("/sys/block/loop{}/queue/{name}", self.number))
    }

    /// Marks the queue rotational or not (`queue/rotational`), as the modelled drive's would
    /// be: the loop driver copies the backing file's device's flag, which says nothing about
    /// the drive the capture models.
    pub fn set_rotational(&self, rotational: bool) -> Result<()> {
        self.set_queue_attr("rotational", if rotational { "1" } else { "0" })
    }

    /// Writes `want` to `queue/NAME` and reads it back: a kernel that keeps another value
    /// (a limit it clamps to, a flag it does not let go) is refused, since the capture would
    /// then model a queue other than the one asked for.
    fn set_queue_attr(&self, name: &str, want: &str) -> Result<()> {
        let path = self.queue_attr(name);
        write_attr(&path, want)?;
        let now = read_attr(&path)?;
        if now != want {
            return Err(RigError::Unsupported(format!(
                "{}: {name} is {now} after writing {want}",
                self.path.display()
            )));
        }
        Ok(())
    }

    /// The queue the device presents now, read from sysfs ([`queue_of`]).
    pub fn queue(&self) -> Result<DeviceQueue> {
        queue_of(self.dev())
    }

    /// Sets the block layer's readahead for this device (`queue/read_ahead_kb`) to the modelled
    /// disk's; a loop device's default is large and would hide the disk's behaviour.
    pub fn set_read_ahead_kb(&self, kb: u32) -> Result<()> {
        self.set_queue_attr("read_ahead_kb", &kb.to_string())
    }

    /// The current readahead in KiB.
    pub fn read_ahead_kb(&self) -> Result<u32> {
        let path = self.queue_attr("read_ahead_kb");
        let text = read_attr(&path)?;
        text.parse().map_err(|_| RigError::Parse {
            source_name: path.display().to_string(),
            line: 1,
            reason: format!("not a number: {text:?}"),
        })
    }

    /// Caps the size of one request (`queue/max_sectors_kb`) at the modelled disk's; a loop
    /// device accepts 1280 KiB, so e2fsck's inode-table reads reach it as 1.25 MiB requests
    /// where a 2007 SATA disk's queue (512 KiB by default) split them.
    pub fn set_max_sectors_kb(&self, kb: u32) -> Result<()> {
        self.set_queue_attr("max_sectors_kb", &kb.to_string())
    }

    /// Selects the `none` I/O scheduler when offered, so requests reach the loop driver in the
    /// order the file system issued them. Returns whether `none` is now active.
    pub fn set_scheduler_none(&self) -> Result<bool> {
        let path = self.queue_attr("scheduler");
        let offered = read_attr(&path)?;
        if !offered
            .split_whitespace()
            .any(|s| s.trim_matches(|c| c == '[' || c == ']') == "none")
        {
            return Ok(false);
        }
        write_attr(&path, "none")?;
        Ok(read_attr(&path)?.contains("[none]"))
    }

    /// Drops this device's page cache (`BLKFLSBUF`), so buffered reads reach the device again,
    /// without touching any other device's cache.
    pub fn flush_buffers(&self) -> Result<()> {
        if unsafe { libc::ioctl(self.fd, BLKFLSBUF as _, 0) } != 0 {
            return Err(RigError::last_os(format!(
                "BLKFLSBUF {}",
                self.path.display()
            )));
        }
        Ok(())
    }
}

/// The queue attributes of block device (major, minor), from `/sys/dev/block/MAJ:MIN/queue`:
/// what a trace of it records as the queue it came through.
pub fn queue_of(dev: (u32, u32)) -> Result<DeviceQueue> {
    let dir = PathBuf::from(format!("/sys/dev/block/{}:{}/queue", dev.0, dev.1));
    let number = |name: &str| -> Result<u32> {
        let path = dir.join(name);
        let text = read_attr(&path)?;
        text.parse().map_err(|_| RigError::Parse {
            source_name: path.display().to_string(),
            line: 1,
            reason: format!("not a number: {text:?}"),
        })
    };
    Ok(DeviceQueue {
        rotational: number("rotational")? != 0,
        read_ahead_kb: number("read_ahead_kb")?,
        max_sectors_kb: number("max_sectors_kb")?,
        scheduler: selected_value(&read_attr(&dir.join("scheduler"))?),
        logical_block_bytes: number("logical_block_size")?,
        physical_block_bytes: number("physical_block_size")?,
    })
}

/// Detaches loop device `path` (for the stale sweep; the caller has checked it is ours).
pub(crate) fn detach_path(path: &Path) -> Result<()> {
    require_root("detaching a loop device")?;
    let fd = open_raw(path, libc::O_RDONLY)?;
    detach(fd, path);
    Ok(())
}

fn detach(fd: libc::c_int, path: &Path) {
    // LOOP_CLR_FD with other openers only marks autoclear; the close below (our last
    // reference) then triggers the detach.
    unsafe {
        libc::ioctl(fd, LOOP_CLR_FD as _, 0);
        libc::close(fd);
    }
    // The kernel releases the backing file as the last opener closes; wait for it so that a
    // caller that checks right after the drop (or removes the file) sees it gone.
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let backing = PathBuf::from(format!("/sys/block/{name}/loop/backing_file"));
    let deadline = Instant::now() + Duration::from_secs(2);
    while backing.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        if let Some(id) = self.cleanup.take() {
            cleanup::run(&id);
        }
    }
}
