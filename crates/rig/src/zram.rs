//! zram devices the rig creates: RAM-backed block devices for runs that must write data (zero
//! pages cost zram no memory). zram is bio-based and shows no request events in tracefs: stack
//! a [`crate::LoopDevice`] on it to see requests as a disk would.

use crate::cleanup::{self, CleanupId};
use crate::error::{Result, RigError};
use crate::system::{read_attr, require_root, write_attr};
use std::path::{Path, PathBuf};

const HOT_ADD: &str = "/sys/class/zram-control/hot_add";
const HOT_REMOVE: &str = "/sys/class/zram-control/hot_remove";

/// A zram device created by the rig (`hot_add`), reset and removed (`hot_remove`) on drop.
#[derive(Debug)]
pub struct Zram {
    id: u32,
    path: PathBuf,
    major: u32,
    minor: u32,
    cleanup: Option<CleanupId>,
}

/// Resets and removes zram device `id`, then its record. A device still held (after SIGINT or
/// SIGTERM the main thread may be inside a write on the file system above it: the unmount is
/// lazy and the stacked loop device goes only when the process exits) is handed to a detached
/// `sh` that retries for a minute after we are gone; if that fails too, the record stays for
/// `layoutlab clean`.
fn remove(id: u32, record: &Path) {
    let reset = format!("/sys/block/zram{id}/reset");
    for _ in 0..20 {
        if std::fs::write(&reset, "1").is_ok() {
            // The reset announces a new size; udev's probe of it may hold the device open
            // for a moment, and hot_remove refuses an open device.
            let _ = hot_remove_waiting(id, std::time::Duration::from_secs(1));
            let _ = std::fs::remove_file(record);
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let size = read_attr(Path::new(&format!("/sys/block/zram{id}/disksize"))).unwrap_or_default();
    // Only while the device still has our size: if `layoutlab clean` removed it meanwhile,
    // id `id` may serve another process's new device, which a reset would wipe.
    let script = format!(
        "i=0; while [ $i -lt 600 ]; do \
         if [ \"$(cat /sys/block/zram{id}/disksize 2>/dev/null)\" != '{size}' ]; then rm -f '{rec}'; exit 0; fi; \
         if echo 1 > {reset} 2>/dev/null; then \
         j=0; while [ $j -lt 50 ] && ! echo {id} > {HOT_REMOVE} 2>/dev/null; do sleep 0.1; j=$((j+1)); done; \
         rm -f '{rec}'; exit 0; fi; sleep 0.1; i=$((i+1)); done; exit 1",
        rec = record.display()
    );
    let _ = std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

/// `hot_remove` of zram device `id`, retried while the kernel answers EBUSY (someone has the
/// device open: a loop device detached a moment ago lets go of its backing only when its last
/// opener closes, and udev probes a device whose size changed) until `wait` has passed. The
/// caller has reset the device or found it unused.
pub(crate) fn hot_remove_waiting(id: u32, wait: std::time::Duration) -> std::io::Result<()> {
    let until = std::time::Instant::now() + wait;
    loop {
        // Reset again each time: a device still open at the first reset kept its size.
        let _ = std::fs::write(format!("/sys/block/zram{id}/reset"), "1");
        match std::fs::write(HOT_REMOVE, id.to_string()) {
            Err(e)
                if e.raw_os_error() == Some(libc::EBUSY) && std::time::Instant::now() < until =>
            {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            r => return r,
        }
    }
}

/// The record of a zram device the rig made, in the temp directory: `layoutlab-zram-PID-ID`
/// holding its size in bytes. zram devices carry no name, so this is how `layoutlab clean`
/// finds the devices of a killed run, and only those (see [`crate::stale`]).
pub(crate) fn record_path(temp_dir: &Path, pid: u32, id: u32) -> PathBuf {
    temp_dir.join(format!("{RECORD_PREFIX}{pid}-{id}"))
}

/// How a zram record's name starts.
pub(crate) const RECORD_PREFIX: &str = "layoutlab-zram-";

/// Bytes of zram's table entry per 4 KiB page of the device: a handle and a flags word
/// (`struct zram_table_entry`, drivers/block/zram/zram_drv.h, without the debug-only access
/// time). Measured here on Linux 6.18: a 64 GiB device raised `VmallocUsed` by 262,680 kB, of
/// which this gives 262,144 kB (the rest is per-device state); a 1,957 GB one took 7.47 GB of
/// `MemAvailable` (`tests/zram_table.rs` holds it).
const TABLE_BYTES_PER_PAGE: u64 = 16;

impl Zram {
    /// Memory a zram device of `bytes` allocates for its table the moment its size is set,
    /// before any data is written (16 bytes a 4 KiB page: 7.7 GB for a 2 TB device).
    pub fn table_bytes(bytes: u64) -> u64 {
        bytes.div_ceil(4096) * TABLE_BYTES_PER_PAGE
    }

    /// Creates a zram device of `bytes` (root; needs `/sys/class/zram-control`).
    pub fn create(bytes: u64) -> Result<Zram> {
        require_root("creating a zram device")?;
        if !Path::new(HOT_ADD).exists() {
            return Err(RigError::Unsupported(format!(
                "{HOT_ADD} is missing: this kernel has no zram (CONFIG_ZRAM) or the module is not loaded"
            )));
        }
        let text = read_attr(Path::new(HOT_ADD))?;
        let id: u32 = text.parse().map_err(|_| RigError::Parse {
            source_name: HOT_ADD.into(),
            line: 1,
            reason: format!("expected a device number, got {text:?}"),
        })?;
        let record = record_path(&std::env::temp_dir(), std::process::id(), id);
        // The record is written before the undo is registered: after a signal, `register`
        // undoes a late resource at once, and a record written after that would outlive its
        // device (a CI run left `layoutlab-zram-PID-ID` behind this way, with no zram).
        if let Err(e) = std::fs::write(&record, format!("{bytes}\n")) {
            remove(id, &record);
            return Err(RigError::io(format!("write {}", record.display()), e));
        }
        let record_for_cleanup = record.clone();
        let cleanup = cleanup::register(format!("zram device /dev/zram{id}"), move || {
            remove(id, &record_for_cleanup)
        });
        let mut zram = Zram {
            id,
            path: PathBuf::from(format!("/dev/zram{id}")),
            major: 0,
            minor: 0,
            cleanup: Some(cleanup),
        };
        write_attr(
            Path::new(&format!("/sys/block/zram{id}/disksize")),
            &bytes.to_string(),
        )?;
        let dev_attr = PathBuf::from(format!("/sys/block/zram{id}/dev"));
        let dev = read_attr(&dev_attr)?;
        let (major, minor) = parse_major_minor(&dev).ok_or_else(|| RigError::Parse {
            source_name: dev_attr.display().to_string(),
            line: 1,
            reason: format!("expected MAJOR:MINOR, got {dev:?}"),
        })?;
        zram.major = major;
        zram.minor = minor;
        Ok(zram)
    }

    /// The device node, e.g. `/dev/zram1`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// (major, minor).
    pub fn dev(&self) -> (u32, u32) {
        (self.major, self.minor)
    }

    /// RAM the device uses now (`mm_stat` field `mem_used_total`), in bytes.
    pub fn mem_used_bytes(&self) -> Result<u64> {
        let path = PathBuf::from(format!("/sys/block/zram{}/mm_stat", self.id));
        let text = read_attr(&path)?;
        text.split_whitespace()
            .nth(2)
            .and_then(|f| f.parse().ok())
            .ok_or_else(|| RigError::Parse {
                source_name: path.display().to_string(),
                line: 1,
                reason: format!("no mem_used_total field in {text:?}"),
            })
    }
}

/// Parses `MAJOR:MINOR` as sysfs prints it.
pub(crate) fn parse_major_minor(text: &str) -> Option<(u32, u32)> {
    let (major, minor) = text.trim().split_once(':')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

impl Drop for Zram {
    fn drop(&mut self) {
        if let Some(id) = self.cleanup.take() {
            cleanup::run(&id);
        }
    }
}
