//! A kernel file system under the rig: backing store → mkfs → mount → named traced phases →
//! unmount → teardown, every step undone by the cleanup registry on drop, error, panic and
//! signal.
//!
//! The backing store is a sparse file when only metadata is written, or zram when file data
//! must really be written (pages of zeros cost zram no memory); either way a loop device sits
//! on top, because zram is bio-based and shows no request events in tracefs. Memory and disk
//! space are checked before anything is created. Requests of each phase carry the phase's
//! name as their trace tag, and the bytes the trace saw per phase are checked against the
//! loop device's own counters (`/sys/block/loopN/stat`).

use crate::cleanup;
use crate::error::{Result, RigError};
use crate::system::{check_free_space, drop_caches, require_root, TempFile};
use crate::window::{self, Boundary, Counted};
use crate::{
    mkfs, Capture, EmulateOptions, EmulatedRequest, Emulator, FsKind, LoopDevice, Mount, QueueSpec,
    ServiceModel, TraceOptions, TracefsSession, Zram,
};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Where the file system's blocks live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Backing {
    /// A sparse file in this directory (metadata-only work: unwritten blocks cost nothing).
    SparseFile(PathBuf),
    /// A zram device (file data is really written; zero pages cost no memory).
    Zram,
}

/// What to make.
#[derive(Clone, Debug)]
pub struct KernelFsOptions {
    /// File system kind (mkfs program and `mount -t`).
    pub kind: FsKind,
    /// Extra mkfs arguments (a mkfs profile's).
    pub mkfs_args: Vec<String>,
    /// Mount options (the data string, e.g. `"data=ordered"`).
    pub mount_options: String,
    /// Size of the block device.
    pub bytes: u64,
    /// Where its blocks live.
    pub backing: Backing,
    /// At most how many bytes of the device will hold non-zero data: the memory a zram
    /// backing needs (checked against `MemAvailable` before anything is created), or the disk
    /// space a sparse file needs.
    pub resident_bytes: u64,
    /// The queue the loop device presents (the modelled drive's: rotational, read-ahead,
    /// request size, block size); what it leaves `None` stays as the kernel chose.
    pub queue: QueueSpec,
}

impl KernelFsOptions {
    /// A [`resident_bytes`](Self::resident_bytes) for an ext file system of `fs_bytes` that
    /// holds one file of zeros written by the kernel: at most how many of its bytes are not
    /// zeros (zero pages, and same-filled ones such as full bitmaps, cost zram nothing). A
    /// block pointer per data block (4 bytes a 4 KiB block: ext3's block maps; ext4's extents
    /// need far less), a bitmap bit per block, and the journal, which mke2fs makes at most
    /// 1 GiB and at most 1/32 of the file system (`ext2fs_default_journal_size`). Measured at
    /// random-read's scale 0.1 (ext4 written by `dd`, 196 GB): zram held 1.5 MB at the end of
    /// the write (`mm_stat`); this allows 1.3 GB. Until 2026-11-29 random-read allowed 2% of
    /// the file system, which refused its scale 1 (39 GB) on a 24 GB machine.
    pub fn ext_zero_file_resident_bytes(fs_bytes: u64) -> u64 {
        fs_bytes / 1024 + fs_bytes / 32768 + (fs_bytes / 32).min(1 << 30) + (64 << 20)
    }
}

/// Writes a file-system image at the path it is given ([`KernelFs::from_image`]).
pub type ImageWriter<'a> = &'a mut dyn FnMut(&Path) -> std::result::Result<(), String>;

/// A made and mounted kernel file system; dropping it unmounts and tears everything down.
#[derive(Debug)]
pub struct KernelFs {
    // Drop order is field order: mount, then the emulated device (if the file system is on
    // it), then loop device, then its backing, then the lock.
    mount: Option<Mount>,
    emulator: Option<Emulator>,
    loopdev: LoopDevice,
    _zram: Option<Zram>,
    _file: Option<TempFile>,
    _lock: RigLock,
    options: KernelFsOptions,
}

/// Memory the kernel says it can give without swapping (`MemAvailable` of /proc/meminfo).
pub fn mem_available_bytes() -> Result<u64> {
    crate::system::read_proc_value("/proc/meminfo", parse_mem_available, "no MemAvailable line")
}

fn parse_mem_available(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Memory kept free for everything else on the machine when sizing a zram backing.
const MEM_MARGIN_BYTES: u64 = 1 << 30;

/// Checks that `opts` fits here, before anything is created.
pub fn check_fits(opts: &KernelFsOptions) -> Result<()> {
    check_fits_together(std::slice::from_ref(opts))
}

/// Checks that all of `opts`, alive at once, fit here before anything is created: each sparse
/// file in its directory, and the zram backings' memory summed (a run that writes several
/// file systems at once holds all of them).
pub fn check_fits_together(opts: &[KernelFsOptions]) -> Result<()> {
    let (mut devices, mut bytes, mut resident, mut need) = (0, 0u64, 0u64, 0u64);
    for o in opts {
        match &o.backing {
            Backing::SparseFile(dir) => check_free_space(dir, o.resident_bytes)?,
            Backing::Zram => {
                devices += 1;
                bytes += o.bytes;
                resident += o.resident_bytes;
                // zram keeps compressed pages plus its table, allocated whole when the size
                // is set (16 bytes a page; until 2026-11-29 this said 8, which a 2 TB device
                // showed wrong by 3.8 GB).
                need += o.resident_bytes + Zram::table_bytes(o.bytes);
            }
        }
    }
    if devices == 0 {
        return Ok(());
    }
    let need = need + MEM_MARGIN_BYTES;
    let available = mem_available_bytes()?;
    if available < need {
        let what = if devices == 1 {
            "a zram device".to_string()
        } else {
            format!("{devices} zram devices at once,")
        };
        return Err(RigError::InvalidArgument(format!(
            "{what} of {:.1} GB holding up to {:.1} GB of data needs {:.1} GB of \
             memory (with a 1 GiB margin), but only {:.1} GB is available: use a smaller \
             --scale",
            bytes as f64 / 1e9,
            resident as f64 / 1e9,
            need as f64 / 1e9,
            available as f64 / 1e9
        )));
    }
    Ok(())
}

impl KernelFs {
    /// Checks the size fits, takes the rig lock, creates the backing store and its loop
    /// device, runs mkfs and mounts. Root only; on error nothing is left.
    pub fn create(opts: &KernelFsOptions) -> Result<KernelFs> {
        KernelFs::make(opts, None, None)
    }

    /// [`KernelFs::create`] under a rig lock the caller already holds (e.g. a test that makes
    /// file systems one after another and must not queue behind other runs between them).
    pub fn create_holding(opts: &KernelFsOptions, lock: &RigLock) -> Result<KernelFs> {
        KernelFs::make(opts, None, Some(lock))
    }

    /// Like [`KernelFs::create`], but the file system is an image `write` makes at the path it
    /// is given (e.g. a layout planned by a policy and written through libext2fs) instead of
    /// mkfs: for a layout today's kernel would not make. Sparse-file backing only; the file
    /// is removed with everything else.
    pub fn from_image(opts: &KernelFsOptions, write: ImageWriter<'_>) -> Result<KernelFs> {
        KernelFs::from_image_holding(opts, None, write)
    }

    /// [`KernelFs::from_image`] under a rig lock this run already holds (`Some`), so that it
    /// can hold several file systems at once; `None` takes the lock as `from_image` does.
    pub fn from_image_holding(
        opts: &KernelFsOptions,
        lock: Option<&RigLock>,
        write: ImageWriter<'_>,
    ) -> Result<KernelFs> {
        if !matches!(opts.backing, Backing::SparseFile(_)) {
            return Err(RigError::InvalidArgument(
                "an image is written into a sparse file: use Backing::SparseFile".into(),
            ));
        }
        KernelFs::make(opts, Some(write), lock)
    }

    fn make(
        opts: &KernelFsOptions,
        write: Option<ImageWriter<'_>>,
        lock: Option<&RigLock>,
    ) -> Result<KernelFs> {
        require_root("making and mounting a kernel file system")?;
        check_fits(opts)?;
        let lock = match lock {
            Some(l) => l.clone(),
            None => RigLock::acquire()?,
        };
        let (zram, file, source): (Option<Zram>, Option<TempFile>, PathBuf) = match &opts.backing {
            Backing::Zram => {
                let z = Zram::create(opts.bytes)?;
                let p = z.path().to_path_buf();
                (Some(z), None, p)
            }
            Backing::SparseFile(dir) => {
                // Numbered: one run may hold several file systems at once.
                static MADE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
                let path = dir.join(format!(
                    "layoutlab-kfs-{}-{}-{}.img",
                    std::process::id(),
                    MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                    opts.kind.name()
                ));
                let f = match write {
                    None => TempFile::create_sparse(&path, opts.bytes)?,
                    Some(_) => {
                        // Registered for removal before the writer creates it.
                        crate::cleanup::creating(|| Ok::<_, RigError>(TempFile::adopt(&path)))?
                    }
                };
                let p = f.path().to_path_buf();
                (None, Some(f), p)
            }
        };
        let has_image = write.is_some();
        if let Some(write) = write {
            write(&source).map_err(|e| {
                RigError::Unsupported(format!("writing the image {}: {e}", source.display()))
            })?;
        }
        // Presented before mkfs: mkfs.btrfs, mke2fs and mkfs.xfs read the queue too.
        let loopdev = LoopDevice::attach_presenting(&source, false, &opts.queue)?;
        if !has_image {
            let args: Vec<&str> = opts.mkfs_args.iter().map(String::as_str).collect();
            mkfs(opts.kind, loopdev.path(), &args)?;
        }
        let mount = Mount::new(
            loopdev.path(),
            None,
            opts.kind.name(),
            false,
            &opts.mount_options,
        )?;
        Ok(KernelFs {
            mount: Some(mount),
            emulator: None,
            loopdev,
            _zram: zram,
            _file: file,
            _lock: lock,
            options: opts.clone(),
        })
    }

    /// Where it is mounted.
    pub fn mount_point(&self) -> &Path {
        self.mount
            .as_ref()
            .map(Mount::target)
            .expect("a KernelFs is mounted between its methods")
    }

    /// The loop device the file system is on (the traced device): the emulated device's
    /// while [`KernelFs::emulate`] has moved it there.
    pub fn device(&self) -> &LoopDevice {
        match &self.emulator {
            Some(e) => e.device(),
            None => &self.loopdev,
        }
    }

    /// Moves the file system onto an emulated device (`device emulate`'s route: a loop device
    /// with direct I/O over a FUSE file whose requests complete when `make_model` says, at
    /// `time_scale`), read-write over the same backing store and presenting the same queue:
    /// writes back and unmounts, starts the emulator over the backing (zram or the sparse
    /// file), and mounts there. [`KernelFs::device`] and [`KernelFs::trace`] then see the
    /// emulated device, until [`KernelFs::stop_emulating`]. Its FUSE mount and loop device
    /// are registered with the cleanup registry as `device emulate`'s are.
    pub fn emulate(
        &mut self,
        time_scale: f64,
        make_model: impl FnOnce() -> ServiceModel + Send + 'static,
    ) -> Result<()> {
        if self.emulator.is_some() {
            return Err(RigError::InvalidArgument(
                "the file system is on the emulated device already".into(),
            ));
        }
        let source = self.loopdev.backing_file().to_path_buf();
        self.sync()?;
        drop(self.mount.take());
        self.loopdev.flush_buffers()?;
        // The buffered loop's writes sit in the backing's page cache, which the emulator
        // reads through too (the same file or block device); on zram this also puts them on
        // the device, as `on_direct_loop` does.
        if self.options.backing == Backing::Zram {
            sync_device(&source)?;
        }
        let opts = EmulateOptions {
            read_only: false,
            time_scale,
            queue: self.options.queue.clone(),
        };
        let started = Emulator::start(&source, &opts, make_model);
        match started {
            Ok(emulator) => self.emulator = Some(emulator),
            Err(e) => {
                self.mount_again()?;
                return Err(e);
            }
        }
        if let Err(e) = self.mount_again() {
            // Back where it was: the emulator stopped, mounted on the plain loop device.
            drop(self.emulator.take());
            self.loopdev.flush_buffers()?;
            self.mount_again()?;
            return Err(e);
        }
        Ok(())
    }

    /// The emulated device's [`crate::CpuPace`] while [`KernelFs::emulate`] has moved the file
    /// system there (`None` otherwise): a traced program that is a thread of this process
    /// names itself with [`crate::CpuPace::follow_this_thread`], so that its CPU, not the wall,
    /// places its requests on the model's clock.
    pub fn cpu_pace(&self) -> Option<crate::CpuPace> {
        self.emulator.as_ref().map(Emulator::cpu_pace)
    }

    /// Requests the emulated device has served so far (0 when not emulated): an index into
    /// what [`KernelFs::stop_emulating`] returns, to find one stretch of work's requests.
    pub fn served_so_far(&self) -> usize {
        self.emulator.as_ref().map_or(0, Emulator::served_count)
    }

    /// Moves the file system back from the emulated device (writes back, unmounts, stops the
    /// emulator, mounts on the plain loop device) and returns every request the emulator
    /// served, in arrival order (the unmount's writes last).
    pub fn stop_emulating(&mut self) -> Result<Vec<EmulatedRequest>> {
        if self.emulator.is_none() {
            return Err(RigError::InvalidArgument(
                "the file system is not on the emulated device".into(),
            ));
        }
        self.sync()?;
        drop(self.mount.take());
        let emulator = self.emulator.take().expect("checked above");
        let served = emulator.stop()?;
        // Its cache predates what the emulated device wrote.
        self.loopdev.flush_buffers()?;
        self.mount_again()?;
        Ok(served)
    }

    /// What it was made with.
    pub fn options(&self) -> &KernelFsOptions {
        &self.options
    }

    /// Writes everything back (`syncfs` of this file system, then the device's buffers).
    pub fn sync(&self) -> Result<()> {
        let dir = std::fs::File::open(self.mount_point())
            .map_err(|e| RigError::io(format!("open {}", self.mount_point().display()), e))?;
        if unsafe { libc::syncfs(dir.as_raw_fd()) } != 0 {
            return Err(RigError::last_os(format!(
                "syncfs {}",
                self.mount_point().display()
            )));
        }
        Ok(())
    }

    /// `sync` and `drop_caches`: the next read of anything reaches the device.
    pub fn drop_caches(&self) -> Result<()> {
        self.sync()?;
        drop_caches()?;
        self.device().flush_buffers()
    }

    /// Unmounts and mounts again (a cold in-memory state: no cached inodes, extents or
    /// bitmaps), then drops the caches.
    pub fn remount(&mut self) -> Result<()> {
        self.sync()?;
        drop(self.mount.take());
        drop_caches()?;
        self.device().flush_buffers()?;
        self.mount_again()?;
        Ok(())
    }

    /// Mounts the file system on the current loop device (the emulated one while emulated)
    /// with the options it was made with.
    fn mount_again(&mut self) -> Result<()> {
        self.mount = Some(Mount::new(
            self.device().path(),
            None,
            self.options.kind.name(),
            false,
            &self.options.mount_options,
        )?);
        Ok(())
    }

    /// Runs `work` (given the mount point) with the file system mounted through a loop device
    /// whose direct I/O is on, then puts it back on a loop device presenting
    /// [`KernelFsOptions::queue`] and mounts it as before. zram backing only.
    ///
    /// Why: a buffered loop device copies every write into its backing device's page cache
    /// before zram sees it, so an untraced bulk write (large-delete's 100 GB of zeros) costs
    /// two page-cache copies; with direct I/O each request reaches zram once (2 GiB of zeros
    /// through ext4: 8.3 s buffered, 1.7 s direct, docs/experiments/large-delete.md). The
    /// direct-I/O loop presents zram's logical block size (4 KiB), which the loop driver needs
    /// for direct I/O; a file system whose sectors are smaller (XFS made on the 512-byte
    /// presentation) refuses to mount there, and that error is returned. The file system is
    /// made and traced on the usual presentation; only `work`'s writes take the other path.
    pub fn on_direct_loop<T>(&mut self, work: impl FnOnce(&Path) -> T) -> Result<T> {
        if self.options.backing != Backing::Zram {
            return Err(RigError::InvalidArgument(
                "writing through a direct-I/O loop device needs a zram backing".into(),
            ));
        }
        if self.emulator.is_some() {
            return Err(RigError::InvalidArgument(
                "the file system is on the emulated device: stop emulating first".into(),
            ));
        }
        let source = self.loopdev.backing_file().to_path_buf();
        self.sync()?;
        drop(self.mount.take());
        self.loopdev.flush_buffers()?;
        // zram's own page cache holds what the buffered loop wrote: on zram before the
        // direct-I/O loop reads past it (direct I/O writes it back too; this says so).
        sync_device(&source)?;
        let direct = QueueSpec {
            logical_block_bytes: None,
            ..self.options.queue.clone()
        };
        drop(std::mem::replace(
            &mut self.loopdev,
            LoopDevice::attach_direct_presenting(&source, false, &direct)?,
        ));
        self.mount_again()?;
        let out = work(self.mount_point());
        self.sync()?;
        drop(self.mount.take());
        self.loopdev.flush_buffers()?;
        drop(std::mem::replace(
            &mut self.loopdev,
            LoopDevice::attach_presenting(&source, false, &self.options.queue)?,
        ));
        self.mount_again()?;
        Ok(out)
    }

    /// Unmounts (so everything the kernel wrote, its journal checkpointed, is in place on
    /// the device), then hands the unmounted device to `read` (e.g. to read the kernel's
    /// layout back with libext2fs) and tears everything down, whatever `read` returned.
    pub fn unmount_then<T>(mut self, read: impl FnOnce(&Path) -> T) -> Result<T> {
        self.sync()?;
        drop(self.mount.take());
        self.device().flush_buffers()?;
        Ok(read(self.device().path()))
    }

    /// Starts tracing the loop device's requests; run phases on the returned [`TracedRun`].
    pub fn trace(&mut self, options: &TraceOptions) -> Result<TracedRun<'_>> {
        let session = TracefsSession::start(self.device().dev(), options)?;
        Ok(TracedRun {
            fs: self,
            session,
            phases: Vec::new(),
            followed: Vec::new(),
        })
    }
}

/// `fsync` of a block device: its page cache written to the driver.
fn sync_device(path: &Path) -> Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| f.sync_all())
        .map_err(|e| RigError::io(format!("fsync {}", path.display()), e))
}

/// How long [`settled_stat_sectors`] waits for a device's requests to complete: a chosen
/// bound, not a measured one (settling takes milliseconds here). A loop device's worker writes
/// into its backing store's page cache, which the kernel may throttle when the machine has
/// much dirty memory; a minute outlasts that and costs nothing on an idle device.
const SETTLE_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// How long a device's counters must stay unchanged, with nothing in flight, before
/// [`settled_stat_sectors`] trusts them. `inflight` alone is not proof of quiet: it counts
/// only started requests, so a request whose dispatch was deferred to kblockd (a plug flushed
/// as its task slept or exited) is not in it yet, and a request is marked complete before its
/// completion is accounted (in a softirq that may run on the other CPU). On a loaded machine
/// either gap is a scheduler slice (milliseconds); CI once read the counters inside one and
/// found a whole 1 MiB read-ahead request traced but not counted. A chosen bound, several
/// slices long; it costs two waits per traced phase.
const SETTLE_QUIET: std::time::Duration = std::time::Duration::from_millis(50);

/// [`device_stat_sectors`] once nothing is in flight on the device and its counters have not
/// moved for [`SETTLE_QUIET`], so that a request is seldom counted on one side of a phase's
/// boundary and traced on the other. Seldom, not never: a dispatch deferred longer than the
/// quiet time still lands between a settled read and the mark after it; a caller that reads
/// the counters settled on both sides of its mark sees it move them. A device still busy
/// after [`SETTLE_LIMIT`] is an error: counters read then would not describe the phase.
pub fn settled_stat_sectors(dev_name: &str) -> Result<(u64, u64)> {
    let inflight = format!("/sys/block/{dev_name}/inflight");
    let idle = || -> Result<bool> {
        let text = std::fs::read_to_string(&inflight)
            .map_err(|e| RigError::io(format!("read {inflight}"), e))?;
        Ok(text.split_whitespace().all(|n| n == "0"))
    };
    let start = std::time::Instant::now();
    let mut last: Option<(u64, u64)> = None;
    loop {
        if idle()? {
            let now = device_stat_sectors(dev_name)?;
            if last == Some(now) {
                return Ok(now);
            }
            last = Some(now);
        } else {
            last = None;
        }
        if start.elapsed() > SETTLE_LIMIT {
            let text = std::fs::read_to_string(&inflight).unwrap_or_default();
            return Err(RigError::Unsupported(format!(
                "{dev_name} still had requests in flight ({}) or moving counters after {} s; \
                 its counters cannot be read between phases",
                text.trim(),
                SETTLE_LIMIT.as_secs()
            )));
        }
        std::thread::sleep(if last.is_some() {
            SETTLE_QUIET
        } else {
            std::time::Duration::from_millis(5)
        });
    }
}

/// Sectors read and written as the device counts them (`/sys/block/DEV/stat` fields 3 and 7,
/// 512-byte units whatever the device's block size).
pub fn device_stat_sectors(dev_name: &str) -> Result<(u64, u64)> {
    let path = format!("/sys/block/{dev_name}/stat");
    let text =
        std::fs::read_to_string(&path).map_err(|e| RigError::io(format!("read {path}"), e))?;
    parse_stat_sectors(&text).ok_or_else(|| RigError::Parse {
        source_name: path,
        line: 1,
        reason: format!("expected at least 7 fields, got {text:?}"),
    })
}

fn parse_stat_sectors(text: &str) -> Option<(u64, u64)> {
    let f: Vec<u64> = text
        .split_whitespace()
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    Some((*f.get(2)?, *f.get(6)?))
}

/// One phase of a traced run: what the trace and the device's counters saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhaseBytes {
    /// The phase's name (its requests' trace tag).
    pub name: String,
    /// Sectors read by the phase's requests in the trace.
    pub sectors_read: u64,
    /// Sectors written by them.
    pub sectors_written: u64,
    /// What `/sys/block/DEV/stat` counted over the phase, read settled on both sides of
    /// each of its marks ([`Counted::reads`], [`Counted::writes`]).
    pub counted: Counted,
}

/// What a traced run produced.
#[derive(Debug)]
pub struct KernelTrace {
    /// The capture (requests tagged by phase).
    pub capture: Capture,
    /// Per phase, in order.
    pub phases: Vec<PhaseBytes>,
}

/// A running trace of a [`KernelFs`]'s device, one named phase after another.
#[derive(Debug)]
pub struct TracedRun<'a> {
    fs: &'a mut KernelFs,
    session: TracefsSession,
    /// Each phase's name and the device's counters at its mark; the next phase's mark (or
    /// the run's end) closes it. A request issued while a mark is written (a file system's
    /// background work) may be traced on either side of it: the check allows a phase what
    /// moved across its two marks, measured, not assumed ([`crate::window`]).
    phases: Vec<(String, Boundary)>,
    /// Threads already followed in the session's CPU accounting.
    followed: Vec<u32>,
}

impl TracedRun<'_> {
    /// Runs `work` as phase `name`: requests issued from now until it returns and its writes
    /// are synced carry the tag `name`. A phase's name is one word.
    pub fn phase<T>(
        &mut self,
        name: &str,
        work: impl FnOnce(&mut KernelFs) -> Result<T>,
    ) -> Result<T> {
        // The phase's work (unlink, reads, sync) runs in this thread: its CPU time is the
        // think time between the requests it issues (docs/replay.md). Kernel threads that
        // work for it (journal commits, writeback) are not followed.
        let tid = unsafe { libc::gettid() } as u32;
        if !self.followed.contains(&tid) {
            self.session.follow(tid)?;
            self.followed.push(tid);
        }
        // The device's counters over a phase are read where its tag changes: everything the
        // trace tags with this phase, including writes the file system issues in the
        // background after `work` returned, falls between this mark and the next one.
        let start = self.mark(name)?;
        self.phases.push((name.to_string(), start));
        let out = work(self.fs)?;
        // The phase's writes belong to it: write them back before the next mark. (A remount
        // phase has already synced and flushed.)
        if self.fs.mount.is_some() {
            self.fs.sync()?;
        }
        Ok(out)
    }

    /// Marks `tag` with the device's counters read settled on both sides ([`window::mark`]).
    fn mark(&self, tag: &str) -> Result<Boundary> {
        window::mark(
            &self.session,
            &format!("loop{}", self.fs.device().number()),
            tag,
        )
    }

    /// Stops tracing, and checks every phase's bytes in the trace against the device's own
    /// counters: a mismatch (lost or mis-tagged requests) is an error.
    pub fn finish(self) -> Result<KernelTrace> {
        // Close the last phase's window: anything later is tagged "after-last-phase" (not
        // checked).
        let end = self.mark("after-last-phase")?;
        let capture = self.session.stop()?;
        window::check_complete(&capture)?;
        let ends: Vec<Boundary> = self
            .phases
            .iter()
            .skip(1)
            .map(|(_, b)| *b)
            .chain(std::iter::once(end))
            .collect();
        // One pass over the requests for every phase (a phase is a tag; a phase without
        // requests has no entry).
        let by_tag = layoutlab_trace::stats::per_tag(&capture.trace);
        let mut phases = Vec::new();
        for ((name, start), end) in self.phases.into_iter().zip(ends) {
            let counted = Counted { start, end };
            let (r, w) = by_tag
                .iter()
                .find(|s| s.tag == name)
                .map_or((0, 0), |s| (s.read_bytes / 512, s.write_bytes / 512));
            let p = PhaseBytes {
                name,
                sectors_read: r,
                sectors_written: w,
                counted,
            };
            if !counted.reads().contains(&r) || !counted.writes().contains(&w) {
                return Err(RigError::Unsupported(format!(
                    "phase '{}': the trace saw {} sectors read and {} written, the device counted \
                     {} and {}; the trace is incomplete or mis-tagged",
                    p.name,
                    r,
                    w,
                    window::show(&counted.reads()),
                    window::show(&counted.writes()),
                )));
            }
            phases.push(p);
        }
        Ok(KernelTrace { capture, phases })
    }
}

/// The rig lock: one layoutlab run at a time creates and traces kernel file systems, so two
/// runs do not fight over devices (and one's `drop_caches` does not land in the other's
/// traced phase). An exclusive `flock` on /run/lock/layoutlab-rig.lock, held while the
/// [`KernelFs`] lives; the kernel releases it when the process dies, so a killed run never
/// leaves it held.
/// Held by [`KernelFs`]; take it directly for work on the rig's devices without a file
/// system (e.g. a raw loop device).
///
/// A clone shares the one lock (released when the last clone drops): a run that holds several
/// file systems at once ([`KernelFs::from_image_holding`]: inode-readahead walks its policies'
/// images at once, coordinating its own cache drops) takes it once; a second `acquire` in the
/// same process would wait for the first forever (a new open file, a new `flock`).
#[derive(Clone, Debug)]
pub struct RigLock {
    _file: std::sync::Arc<std::fs::File>,
}

const LOCK_PATH: &str = "/run/lock/layoutlab-rig.lock";

impl RigLock {
    /// Waits for and takes the lock (released when it and its clones are dropped, or when
    /// the process dies).
    pub fn acquire() -> Result<RigLock> {
        Self::take(libc::LOCK_EX, "another layoutlab run to release")
    }

    /// Waits for and takes the lock *shared*: for a capture that needs no device of another
    /// run's, only that no layoutlab run drops the page cache while it reads (every drop the
    /// rig makes is made holding the lock exclusively, through [`KernelFs`] or directly).
    /// Shared holders run at once; an exclusive taker waits for all of them. In a thread that
    /// already holds the lock exclusively it waits forever, as a second [`RigLock::acquire`]
    /// does.
    pub fn acquire_shared() -> Result<RigLock> {
        Self::take(
            libc::LOCK_SH,
            "a layoutlab run that creates kernel file systems or drops the page cache to release",
        )
    }

    fn take(mode: libc::c_int, waiting_for: &str) -> Result<RigLock> {
        let dir = Path::new(LOCK_PATH).parent().expect("has a parent");
        std::fs::create_dir_all(dir)
            .map_err(|e| RigError::io(format!("create {}", dir.display()), e))?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(LOCK_PATH)
            .map_err(|e| RigError::io(format!("open {LOCK_PATH}"), e))?;
        if unsafe { libc::flock(file.as_raw_fd(), mode | libc::LOCK_NB) } != 0 {
            eprintln!("  waiting for {waiting_for} {LOCK_PATH}");
            loop {
                if unsafe { libc::flock(file.as_raw_fd(), mode) } == 0 {
                    break;
                }
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted || cleanup::signal_caught() {
                    return Err(RigError::io(format!("lock {LOCK_PATH}"), e));
                }
            }
        }
        Ok(RigLock {
            _file: std::sync::Arc::new(file),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// random-read's scale 1 (a 1,957 GB file system written by the kernel) must fit a
    /// machine of 16 GB: its zram table alone is 7.7 GB, and a 2% allowance asked 44 GB in all.
    #[test]
    fn a_1957_gb_zero_file_fits_in_16_gb_of_memory() {
        let fs_bytes = 1_957_270_000_000u64;
        let resident = KernelFsOptions::ext_zero_file_resident_bytes(fs_bytes);
        let need = resident + Zram::table_bytes(fs_bytes) + (1 << 30);
        assert!(need < 16_000_000_000, "{need}");
        // Still the journal's full 1 GiB and a pointer for each block, as ext3's maps need.
        assert!(resident > (1 << 30) + fs_bytes / 1024, "{resident}");
    }

    #[test]
    fn stat_fields_are_sectors_read_and_written() {
        let text = "     120        3     9600      40       55        1     4400      20        0       60       60        0        0        0        0        0        0\n";
        assert_eq!(parse_stat_sectors(text), Some((9600, 4400)));
        assert_eq!(parse_stat_sectors("1 2"), None);
    }

    #[test]
    fn mem_available_is_read_in_bytes() {
        let text = "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   2048 kB\n";
        assert_eq!(parse_mem_available(text), Some(2048 * 1024));
        assert_eq!(parse_mem_available("MemTotal: 1 kB\n"), None);
    }

    /// Two zram devices that each fit alone are refused together when their memory summed
    /// does not fit (a run writing file systems at once holds all of them).
    #[test]
    fn zram_devices_at_once_are_checked_summed() {
        let available = mem_available_bytes().unwrap();
        let opts = KernelFsOptions {
            kind: FsKind::Ext4,
            mkfs_args: vec![],
            mount_options: String::new(),
            bytes: 1 << 30,
            backing: Backing::Zram,
            // 60% of what is available: one fits beside the 1 GiB margin on any machine with
            // over 2.5 GiB available, two never do.
            resident_bytes: available / 10 * 6,
            queue: crate::QueueSpec::default(),
        };
        check_fits_together(std::slice::from_ref(&opts)).unwrap();
        let err = check_fits_together(&[opts.clone(), opts])
            .unwrap_err()
            .to_string();
        assert!(err.contains("2 zram devices at once"), "{err}");
    }

    #[test]
    fn zram_larger_than_memory_is_refused_before_anything_is_made() {
        let opts = KernelFsOptions {
            kind: FsKind::Ext4,
            mkfs_args: vec![],
            mount_options: String::new(),
            bytes: 1 << 40,
            backing: Backing::Zram,
            resident_bytes: 1 << 50,
            queue: crate::QueueSpec::default(),
        };
        let err = check_fits(&opts).unwrap_err().to_string();
        assert!(err.contains("memory") && err.contains("--scale"), "{err}");
    }
}
