//! Timing-accurate emulation: a block device whose requests complete when a device model says
//! they do, with an image file's data (the Memulator of Griffin et al., FAST '02, on this kernel).
//!
//! The route (docs/emulate.md): this kernel has no ublk, nbd, null_blk or device-mapper, so the
//! device is a loop device with direct I/O ([`LoopDevice::attach_direct_presenting`]) over the
//! one file of a FUSE mount this process serves. Every request the loop driver sends reaches
//! the daemon as one FUSE read or write (FUSE's request size, `max_pages`, is raised to the
//! loop queue's `max_sectors_kb`, so nothing is split between the two). The daemon stamps the
//! request's arrival, does the I/O on the image at once, asks the [`ServiceModel`] when the
//! modelled device completes it, and holds the reply until then: the kernel sees the request
//! complete at the model's time (plus the route's own latency, which `bench emulate` measures).
//!
//! The model is called in arrival order with the model's own clock: `arrival_ns` is the wall
//! time since the emulator started, multiplied by the time scale K, and a completion at model
//! time `c` is answered at wall time `c / K` — the device answers K times faster and the model's
//! time is what is charged ([`EmulatedRequest`]). Calling the model in arrival order is the
//! replay's FCFS queue (`layoutlab_device::replay`), so the same model code prices an emulated
//! stream and an open-loop replay of it alike (one model, two drivers).
//!
//! What it does not own: the device models (the device crate; the caller hands in a factory
//! that builds one on the scheduler thread, so a model need not be `Send`), tracing (a
//! [`crate::TracefsSession`] traces the loop device as any other) and the command line.
//!
//! Careful as the rest of the rig: the mount point is a `layoutlab-mnt-PID-N` temp directory,
//! the mount and the loop device are each created and registered with [`crate::cleanup`] in one
//! step, so drop, error, panic, SIGINT and SIGTERM undo them (loop device first, then the mount,
//! then the directory), and after a SIGKILL the daemon's death aborts the FUSE connection, the
//! loop device's autoclear detaches it, and `layoutlab clean` ([`crate::stale`]) finds the mount
//! under the dead process's mount point.

use crate::cleanup::{self, CleanupId};
use crate::error::{Result, RigError};
use crate::system::{read_attr, require_root, TempDir};
use crate::{LoopDevice, QueueSpec};
use fuser::{
    Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, INodeNo, InitFlags,
    KernelConfig, LockOwner, MountOption, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory,
    ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request, WriteFlags,
};
use layoutlab_trace::Op;
use std::collections::BinaryHeap;
use std::ffi::OsStr;
use std::io::Seek;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, UNIX_EPOCH};

/// The name of the one file in the emulator's FUSE mount.
pub const DISK_FILE: &str = "disk";
const DISK_INO: u64 = 2;
/// Attributes never change behind the kernel's back (the daemon is the only writer).
const ATTR_TTL: Duration = Duration::from_secs(3600);
/// FUSE's page-count limit when `/proc/sys/fs/fuse/max_pages_limit` is absent (the kernel's
/// `FUSE_DEFAULT_MAX_PAGES_LIMIT`, 256 pages = 1 MiB).
const DEFAULT_FUSE_MAX_PAGES: u32 = 256;
/// The scheduler wakes this long before a reply is due and spins the rest: a timed wait on
/// this (shared, virtual) machine woke 40-80 µs late, and the Memulator's bar is 2% or 100 µs.
/// 150 µs of spinning per request costs a few percent of one CPU at a disk's request rate.
const SPIN_NS: u64 = 150_000;

/// Requests the emulator times on itself at start, to measure its route (see [`Route`]).
const CALIBRATION_READS: usize = 64;

/// The route's own latency, measured when the emulator starts, and the switch that has the
/// scheduler answer the measuring requests at once.
///
/// Why: the kernel sees a request complete the route's latency after the daemon's reply was
/// due (the loop driver's worker hands the request to FUSE, the daemon reads it, the reply
/// completes it: `bench emulate` measured a median 62-104 µs before this), and the
/// Memulator's allowance for a short request is 100 µs. The daemon cannot see the kernel's
/// clock per request, so [`Emulator::start`] measures the route on the device it just made:
/// [`CALIBRATION_READS`] 4 KiB direct reads, answered at once, traced with tracefs; the
/// median `block_rq_complete − block_rq_issue` is the route. Every reply is then sent that
/// much before the model's completion (never before the request arrived), which centres the
/// kernel's error on zero. It is measured on this machine at each start, not a constant.
#[derive(Default)]
struct Route {
    calibrating: AtomicBool,
    ns: AtomicU64,
}

/// The traced program whose CPU time paces the model's clock between requests
/// ([`Emulator::cpu_pace`], [`CpuPace::follow_self`]).
///
/// Why (issue 25, load independence): without it a request's model arrival is the wall time
/// of its receipt times K, so everything between two requests on the wall — the program's CPU,
/// but also its wait for a CPU, the loop driver's worker waiting for one, and the wake-ups — is
/// the model's idle time, multiplied by K. With two CPU-bound loops beside it the way in alone
/// had a p99 of 3-6 ms; at K = 8 that moves an arrival by several revolutions of the modelled
/// disk, so every rotational latency is drawn anew and a closed-loop e2fsck at scale 0.005
/// measured 4.07-5.03 s between runs of the same capture. Followed, the model's clock advances
/// between requests by the program's own CPU time, which its waits do not move: the same
/// think time the open-loop replay takes from the scheduler's accounting
/// (`layoutlab_trace::cpu`).
///
/// That CPU time is the kernel's task-clock counter of the program (`perf_event_open`,
/// `PERF_COUNT_SW_TASK_CLOCK`), which runs from each switch to the program to the next switch
/// away, as the scheduler trace counts. Not its process CPU clock (`clock_getcpuclockid`, what
/// `getrusage` and e2fsck's `-tt` report), which was read here first: for a real-time e2fsck
/// on the emulated device that clock came to 0.07-0.50 s where the scheduler trace, `perf
/// sched` and the task-clock counted 0.04-0.07 s, by more the busier the machine (a plain
/// capture's agree), and the measured time grew with it (docs/emulate.md, "Where a capture's
/// spread came from").
#[derive(Clone)]
pub struct CpuPace {
    /// The followed process's pid (0: none yet), in memory shared with the children forked
    /// after it was made, so that a child can name itself before it execs.
    pid: Arc<SharedPid>,
    /// The followed process's task-clock counter, opened at the first reading after it named
    /// itself, and again for each new process followed.
    counter: Arc<Mutex<Option<TaskClock>>>,
    /// The CPU factor F (`f64` bits; 1.0 unless [`CpuPace::set_cpu_scale`]): each ns of the
    /// program's CPU here advances the model's clock F ns, as on a CPU F times slower.
    cpu_scale: Arc<AtomicU64>,
}

impl std::fmt::Debug for CpuPace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuPace")
            .field("pid", &self.pid.get().load(Ordering::Relaxed))
            .finish()
    }
}

/// One `i32` in a shared anonymous page: a store a forked child makes before it execs is seen
/// by this process.
struct SharedPid(*mut libc::c_void);

// SAFETY: the page holds one `AtomicI32`, only ever accessed atomically.
unsafe impl Send for SharedPid {}
unsafe impl Sync for SharedPid {}

impl SharedPid {
    fn new() -> Result<SharedPid> {
        let page = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                crate::system::page_bytes(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if page == libc::MAP_FAILED {
            return Err(RigError::io(
                "map a shared page for the followed pid",
                std::io::Error::last_os_error(),
            ));
        }
        // A fresh anonymous page is zeroed: pid 0, none followed.
        Ok(SharedPid(page))
    }

    fn get(&self) -> &AtomicI32 {
        // SAFETY: the page is mapped, aligned and lives as long as `self`.
        unsafe { &*(self.0 as *const AtomicI32) }
    }
}

impl Drop for SharedPid {
    fn drop(&mut self) {
        unsafe { libc::munmap(self.0, crate::system::page_bytes()) };
    }
}

impl CpuPace {
    fn new() -> Result<CpuPace> {
        Ok(CpuPace {
            pid: Arc::new(SharedPid::new()?),
            counter: Arc::new(Mutex::new(None)),
            cpu_scale: Arc::new(AtomicU64::new(1.0f64.to_bits())),
        })
    }

    /// Makes each ns of the program's CPU advance the model's clock `factor` ns: a period CPU
    /// `factor` times slower than this one (`--cpu-scale`; 0 charges the device alone). Set it
    /// before the program starts; every clone (the emulator's scheduler holds one) sees it.
    pub fn set_cpu_scale(&self, factor: f64) -> Result<()> {
        if !(factor.is_finite() && factor >= 0.0) {
            return Err(RigError::InvalidArgument(format!(
                "a CPU factor of {factor} is not a number >= 0"
            )));
        }
        self.cpu_scale.store(factor.to_bits(), Ordering::SeqCst);
        Ok(())
    }

    /// The CPU factor set ([`CpuPace::set_cpu_scale`]).
    pub fn cpu_scale(&self) -> f64 {
        f64::from_bits(self.cpu_scale.load(Ordering::Relaxed))
    }

    /// Makes the calling process the followed one: for a child between fork and exec (one
    /// atomic store into the shared page, async-signal-safe).
    ///
    /// Why there: the traced program runs real-time and the parent does not, so on a busy
    /// machine e2fsck issued its first requests before the parent, back from `spawn`, could
    /// name it (up to 12 of 475 requests of one check were timed by the wall).
    ///
    /// # Safety
    /// Call it only in the child of a fork made while this `CpuPace` was alive (a
    /// `pre_exec` closure holding a clone).
    pub unsafe fn follow_self(&self) {
        self.pid.get().store(libc::getpid(), Ordering::SeqCst);
    }

    /// Makes the calling thread the followed program, until [`CpuPace::stop_following`]: for
    /// work this process does itself on one thread (random-read's reads). Its own CPU clock,
    /// not the process's: the process's would count the emulator's threads, which spin before
    /// each reply. The kernel lets a thread's CPU clock be read only from its own process,
    /// which the emulator's threads are.
    pub fn follow_this_thread(&self) {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as libc::pid_t;
        // Negative: a thread of this process, not a process (pids and tids are positive).
        self.pid.get().store(-tid, Ordering::SeqCst);
    }

    /// Follows nothing: later requests are placed by the wall.
    pub fn stop_following(&self) {
        self.pid.get().store(0, Ordering::SeqCst);
    }

    /// The followed program and its on-CPU time now, times the CPU factor
    /// ([`CpuPace::set_cpu_scale`]), ns; `None` when none is followed, it has exited, or the
    /// kernel refused the counter. Only differences between two readings of the same program
    /// are used ([`CpuStamp`]).
    ///
    /// A process: its task-clock counter ([`open_task_clock`]), opened at the first reading
    /// after it named itself and again for each new process. A thread of this process
    /// ([`CpuPace::follow_this_thread`]): its own CPU clock.
    fn now_ns(&self) -> Option<CpuStamp> {
        let pid = self.pid.get().load(Ordering::Relaxed);
        let raw = match pid {
            0 => return None,
            tid if tid < 0 => thread_cpu_ns(-tid)?,
            pid => {
                let mut counter = self.counter.lock().unwrap_or_else(|e| e.into_inner());
                if counter.as_ref().map(|(of, _)| *of) != Some(pid) {
                    *counter = Some((pid, open_task_clock(pid)));
                }
                let (_, fd) = counter.as_ref().expect("set above");
                read_counter(fd.as_ref()?)?
            }
        };
        Some(CpuStamp {
            pid,
            ns: (raw as f64 * self.cpu_scale()).round() as u64,
        })
    }
}

/// A process's task-clock counter ([`open_task_clock`]): the pid it counts, and the counter
/// (`None`: `perf_event_open` refused, and the wall places the process's requests).
type TaskClock = (libc::pid_t, Option<std::os::fd::OwnedFd>);

/// Thread `tid` of this process's CPU time, ns: the kernel's per-thread scheduler clock,
/// `MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)` of include/linux/posix-timers_types.h (glibc's
/// `pthread_getcpuclockid` makes the same id, but from a pthread_t).
fn thread_cpu_ns(tid: libc::pid_t) -> Option<u64> {
    let id = ((!tid) << 3) | CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let rc = unsafe { libc::clock_gettime(id, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// A task-clock counter's count, ns.
fn read_counter(fd: &std::os::fd::OwnedFd) -> Option<u64> {
    use std::os::fd::AsRawFd;
    let mut raw = 0u64;
    let n = unsafe {
        libc::read(
            fd.as_raw_fd(),
            (&mut raw as *mut u64).cast(),
            std::mem::size_of::<u64>(),
        )
    };
    (n == std::mem::size_of::<u64>() as isize).then_some(raw)
}

/// Opens process `pid`'s task-clock counter ([`CpuPace`]), counting from now, its later
/// threads and children included (`inherit`). `None` (with a warning, once: the requests are
/// then placed by the wall, and `closed_loop.requests_paced` says so) when the kernel refuses.
fn open_task_clock(pid: i32) -> Option<std::os::fd::OwnedFd> {
    use perf_event_open_sys as perf;
    use std::os::fd::FromRawFd;
    let mut attr = perf::bindings::perf_event_attr {
        type_: perf::bindings::PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<perf::bindings::perf_event_attr>() as u32,
        config: u64::from(perf::bindings::PERF_COUNT_SW_TASK_CLOCK),
        ..Default::default()
    };
    attr.set_inherit(1);
    let fd = unsafe {
        perf::perf_event_open(
            &mut attr,
            pid,
            -1,
            -1,
            perf::bindings::PERF_FLAG_FD_CLOEXEC as libc::c_ulong,
        )
    };
    if fd < 0 {
        eprintln!(
            "warning: the emulator cannot count process {pid}'s CPU time (perf_event_open: {}); \
             its requests are placed by the wall",
            std::io::Error::last_os_error()
        );
        return None;
    }
    Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// A thread CPU clock's id bits (include/linux/posix-timers_types.h).
const CPUCLOCK_PERTHREAD_MASK: libc::clockid_t = 4;
/// The scheduler's runtime clock (`CPUCLOCK_SCHED`): what `clock_getcpuclockid` gives too.
const CPUCLOCK_SCHED: libc::clockid_t = 2;

/// The followed program's CPU time at one instant, with which process it is.
///
/// Why the pid: one emulator may serve several programs followed one after another
/// (request-merging's `dd`s, one per traced phase), each naming itself with
/// [`CpuPace::follow_self`]. A new process's CPU clock starts at zero, so an anchor taken on
/// the previous one would place the new program's first request at that program's last
/// arrival, erasing the time between the two on the model's clock; the [`ModelClock`] keeps
/// only anchors of the same process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CpuStamp {
    pid: libc::pid_t,
    ns: u64,
}

/// Runs the calling thread under `SCHED_FIFO` at the lowest real-time priority, so that the
/// daemon's threads (asleep but for microseconds per request) are not queued behind CPU-bound
/// work when a request arrives or a reply is due: on the shared 2-CPU machine, an ordinary
/// thread's reply was 4 ms late once in twenty. Best effort: returns whether it took.
/// `SCHED_RESET_ON_FORK`: a process forked from these threads (none is) would not inherit it.
fn run_real_time(priority: i32) -> bool {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &param) == 0
    }
}

thread_local! {
    /// Whether this thread asked for real-time scheduling already.
    static REAL_TIME_ASKED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// [`run_real_time`], once per thread.
fn run_real_time_once() {
    REAL_TIME_ASKED.with(|asked| {
        if !asked.replace(true) {
            run_real_time(READER_PRIORITY);
        }
    });
}

/// The FUSE reader's real-time priority: above every ordinary thread, and above a traced
/// program run real-time at 1 (`FsckOptions::real_time`), so that a CPU-bound program does
/// not hold up the requests it issued.
const READER_PRIORITY: i32 = 2;
/// The scheduler's, above the reader's: a reply that is due preempts the reader copying the
/// next request's data (at equal `SCHED_FIFO` priority it would wait for the copy, up to a
/// 512 KiB `memcpy` and a page-cache miss on the image).
const SCHEDULER_PRIORITY: i32 = 3;

/// One request as the emulator hands it to the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmuRequest {
    /// Read, write or flush (a cache flush: the loop driver's `REQ_OP_FLUSH` reaches the
    /// daemon as the FUSE file's `fsync`; no sectors). Discards are not served (the FUSE file
    /// has no `fallocate`).
    pub op: Op,
    /// First 512-byte sector.
    pub sector: u64,
    /// Length in sectors.
    pub sectors: u32,
}

/// The device model the emulator asks: `(arrival_ns, request) -> completion_ns`, both on the
/// model's clock (ns since the emulator started, times the time scale). Called in arrival order
/// on one thread, as `layoutlab_device::Device::submit` is by an FCFS replay.
pub type ServiceModel = Box<dyn FnMut(f64, &EmuRequest) -> f64>;

/// What one emulated request did, on the model's clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EmulatedRequest {
    /// The request.
    pub request: EmuRequest,
    /// When it reached the model, model ns since the start: the wall time the daemon received
    /// it (`received_ns`) times the time scale, raised to the model's last completion when no
    /// reply was pending at its receipt ([`ModelClock`]). Whole ns.
    pub arrival_ns: f64,
    /// When the daemon received it, wall ns since the start.
    pub received_ns: u64,
    /// The followed program's CPU time at receipt, ns ([`CpuPace`]): `Some` when the model's
    /// clock reached this arrival by that CPU time rather than by the wall.
    pub cpu_ns: Option<u64>,
    /// When the model completes it, model ns since the start (the reply is due at this time
    /// divided by the time scale).
    pub complete_ns: f64,
    /// Wall ns by which the reply left the daemon after it was due (its timer's lateness;
    /// the kernel's view adds the FUSE round trip, which `bench emulate` measures).
    pub reply_late_ns: f64,
}

/// Options of [`Emulator::start`].
#[derive(Clone, Debug, PartialEq)]
pub struct EmulateOptions {
    /// Open the image read-only: the FUSE mount and the loop device are read-only too, and a
    /// write is refused (`EROFS`); the image is never modified.
    pub read_only: bool,
    /// K: the device answers K times faster than the model (the model's time is charged).
    pub time_scale: f64,
    /// The queue the loop device presents (the preset's: rotational, read-ahead, request
    /// size). With `max_sectors_kb` unset the loop device's is capped at FUSE's largest
    /// request; one above it is refused, since FUSE would split the request.
    pub queue: QueueSpec,
}

impl Default for EmulateOptions {
    fn default() -> Self {
        EmulateOptions {
            read_only: true,
            time_scale: 1.0,
            queue: QueueSpec::default(),
        }
    }
}

/// A running emulator: the loop device ([`Emulator::device`]) answers at the model's time.
/// Stopped (loop device detached, FUSE unmounted, daemon joined) by [`Emulator::stop`] or drop.
pub struct Emulator {
    // Field order is drop order: loop device, then the mount and its session, then the
    // directory.
    device: Option<LoopDevice>,
    session: Option<fuser::BackgroundSession>,
    mount_cleanup: Option<CleanupId>,
    scheduler: Option<std::thread::JoinHandle<()>>,
    log: Arc<Mutex<Vec<EmulatedRequest>>>,
    route: Arc<Route>,
    pace: CpuPace,
    mount_point: PathBuf,
    _dir: TempDir,
    /// The machine's CPUs kept out of idle while the device serves (`crate::awake`: the
    /// pace's CPU time must not depend on how busy the machine is); stopped on shut-down.
    awake: Option<crate::awake::CpusAwake>,
}

impl std::fmt::Debug for Emulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emulator")
            .field("device", &self.device)
            .field("mount_point", &self.mount_point)
            .finish()
    }
}

/// The largest request FUSE passes whole on this kernel, in KiB
/// (`/proc/sys/fs/fuse/max_pages_limit` pages).
pub fn fuse_max_request_kb() -> u32 {
    let pages = read_attr(Path::new("/proc/sys/fs/fuse/max_pages_limit"))
        .ok()
        .and_then(|t| t.parse::<u32>().ok())
        .unwrap_or(DEFAULT_FUSE_MAX_PAGES);
    pages * crate::system::page_bytes() as u32 / 1024
}

impl Emulator {
    /// Serves `image` through a FUSE file whose requests complete when the model `make_model`
    /// builds says, and attaches a loop device with direct I/O over it presenting
    /// `opts.queue`. `make_model` runs on the scheduler thread. Root only.
    pub fn start(
        image: &Path,
        opts: &EmulateOptions,
        make_model: impl FnOnce() -> ServiceModel + Send + 'static,
    ) -> Result<Emulator> {
        require_root("emulating a device (FUSE mount, loop device)")?;
        if !(opts.time_scale.is_finite() && opts.time_scale > 0.0) {
            return Err(RigError::InvalidArgument(format!(
                "time scale {}: it must be a positive number (K = 1 answers at the model's time)",
                opts.time_scale
            )));
        }
        let fuse_kb = fuse_max_request_kb();
        let mut queue = opts.queue.clone();
        match queue.max_sectors_kb {
            Some(kb) if kb > fuse_kb => {
                return Err(RigError::InvalidArgument(format!(
                    "requests of {kb} KiB: FUSE passes at most {fuse_kb} KiB whole \
                     (/proc/sys/fs/fuse/max_pages_limit); raise that limit or ask for smaller requests"
                )))
            }
            Some(_) => {}
            None => queue.max_sectors_kb = Some(fuse_kb),
        }
        let max_request_bytes = queue.max_sectors_kb.unwrap_or(fuse_kb) * 1024;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(!opts.read_only)
            .open(image)
            .map_err(|e| RigError::io(format!("open {}", image.display()), e))?;
        // Seeking to the end sizes a block device too (its metadata says 0 bytes): a kernel
        // file system's zram backing is emulated in place.
        let size = (&file)
            .seek(std::io::SeekFrom::End(0))
            .map_err(|e| RigError::io(format!("size {}", image.display()), e))?;
        if size == 0 || size % 512 != 0 {
            return Err(RigError::InvalidArgument(format!(
                "{}: {size} bytes is not a whole number of 512-byte sectors",
                image.display()
            )));
        }
        let dir = TempDir::new(&std::env::temp_dir(), "layoutlab-mnt")?;
        let mount_point = dir.path().to_path_buf();
        let t0 = Instant::now();
        let (jobs, rx) = mpsc::channel();
        let log = Arc::new(Mutex::new(Vec::new()));
        let route = Arc::new(Route::default());
        route.calibrating.store(true, Ordering::SeqCst);
        let pace = CpuPace::new()?;
        let scheduler = {
            let log = log.clone();
            let route = route.clone();
            let pace = pace.clone();
            let scale = opts.time_scale;
            std::thread::Builder::new()
                .name("emulate-scheduler".into())
                .spawn(move || schedule(rx, t0, scale, make_model, log, route, pace))
                .map_err(|e| RigError::io("start the emulator's scheduler thread", e))?
        };
        let fs = DiskFs {
            image: file,
            size,
            read_only: opts.read_only,
            max_request_bytes,
            jobs,
            pace: pace.clone(),
        };
        let mut mount_options = vec![
            MountOption::FSName("layoutlab-emulate".into()),
            MountOption::Subtype("layoutlab".into()),
            MountOption::NoExec,
            MountOption::NoSuid,
            MountOption::NoDev,
        ];
        if opts.read_only {
            mount_options.push(MountOption::RO);
        }
        let mut config = Config::default();
        config.mount_options = mount_options;
        // Mounted and registered as one step (see `cleanup::creating`).
        let mounted = cleanup::creating(|| {
            fuser::Session::new(fs, &mount_point, &config).map(|session| {
                let owned = mount_point.clone();
                let id = cleanup::register(
                    format!("FUSE mount {} (device emulator)", mount_point.display()),
                    move || crate::mount::unmount(&owned),
                );
                (session, id)
            })
        });
        let (session, mount_cleanup) = match mounted {
            Ok(m) => m,
            Err(e) => {
                let _ = scheduler.join();
                return Err(RigError::io(
                    format!(
                        "mount the emulator's FUSE file on {}",
                        mount_point.display()
                    ),
                    e,
                ));
            }
        };
        let mut emulator = Emulator {
            device: None,
            session: None,
            mount_cleanup: Some(mount_cleanup),
            scheduler: Some(scheduler),
            log,
            route,
            pace,
            mount_point,
            _dir: dir,
            // Before the calibration, so the route is measured as the capture will see it.
            awake: Some(crate::awake::CpusAwake::start()),
        };
        emulator.session = Some(
            session
                .spawn()
                .map_err(|e| RigError::io("start the emulator's FUSE session", e))?,
        );
        let disk = emulator.mount_point.join(DISK_FILE);
        emulator.device = Some(LoopDevice::attach_direct_presenting(
            &disk,
            opts.read_only,
            &queue,
        )?);
        emulator.calibrate(size)?;
        Ok(emulator)
    }

    /// Measures the route's latency on the device just made (see [`Route`]).
    fn calibrate(&mut self, size: u64) -> Result<()> {
        use std::os::unix::fs::OpenOptionsExt;
        let device = self.device();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(device.path())
            .map_err(|e| RigError::io(format!("open {} (O_DIRECT)", device.path().display()), e))?;
        let layout = std::alloc::Layout::from_size_align(4096, 4096).expect("valid layout");
        // An O_DIRECT buffer must be aligned to the logical block: one page, freed below.
        let buf = unsafe { std::alloc::alloc(layout) };
        if buf.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        let options = crate::TraceOptions {
            buffer_size_kb: 1024,
            cpu_accounting: false,
            ..crate::TraceOptions::default()
        };
        let measured = (|| {
            let session = crate::TracefsSession::start(device.dev(), &options)?;
            let blocks = size / 4096;
            for i in 0..CALIBRATION_READS as u64 {
                let offset = blocks * i / CALIBRATION_READS as u64 * 4096;
                let slice = unsafe { std::slice::from_raw_parts_mut(buf, 4096) };
                file.read_exact_at(slice, offset)
                    .map_err(|e| RigError::io("a calibration read of the emulated device", e))?;
            }
            session.stop()
        })();
        unsafe { std::alloc::dealloc(buf, layout) };
        let capture = measured?;
        let mut times: Vec<u64> = capture
            .trace
            .requests
            .iter()
            .filter_map(|r| r.complete_ns.map(|c| c.saturating_sub(r.issue_ns)))
            .collect();
        if times.len() < CALIBRATION_READS / 2 {
            return Err(RigError::InvalidArgument(format!(
                "the emulator's calibration traced {} of its {CALIBRATION_READS} reads",
                times.len()
            )));
        }
        times.sort_unstable();
        self.route
            .ns
            .store(times[times.len() / 2], Ordering::SeqCst);
        self.route.calibrating.store(false, Ordering::SeqCst);
        Ok(())
    }

    /// The route's latency measured at start (ns): replies leave this much before the
    /// model's completion.
    pub fn route_ns(&self) -> u64 {
        self.route.ns.load(Ordering::SeqCst)
    }

    /// Sends every later reply `ns` before the model's completion, in place of the route
    /// measured at start: a test (or a diagnosis) can make the replies leave early by a known
    /// amount, as a route faster than measured would.
    pub fn pin_route_ns(&self, ns: u64) {
        self.route.ns.store(ns, Ordering::SeqCst);
    }

    /// The handle that makes a program's CPU time pace the model's clock ([`CpuPace`]): the
    /// program names itself with it between fork and exec ([`CpuPace::follow_self`]).
    pub fn cpu_pace(&self) -> CpuPace {
        self.pace.clone()
    }

    /// The emulated block device.
    pub fn device(&self) -> &LoopDevice {
        self.device.as_ref().expect("present until stop")
    }

    /// The FUSE file the loop device reads (`MOUNT/disk`).
    pub fn disk_file(&self) -> PathBuf {
        self.mount_point.join(DISK_FILE)
    }

    /// How many requests have been served so far.
    pub fn served_count(&self) -> usize {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// The requests served so far, in arrival order.
    pub fn log(&self) -> Vec<EmulatedRequest> {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Detaches the loop device, unmounts the FUSE file, joins the daemon and returns every
    /// request served, in arrival order.
    pub fn stop(mut self) -> Result<Vec<EmulatedRequest>> {
        self.shut_down();
        Ok(self.log())
    }

    fn shut_down(&mut self) {
        // The loop device's release of the FUSE file is served by the daemon: detach while the
        // daemon runs, then unmount, which ends the session loop, then the scheduler.
        drop(self.device.take());
        if let Some(id) = self.mount_cleanup.take() {
            cleanup::run(&id);
        }
        if let Some(session) = self.session.take() {
            let _ = session.join();
        }
        if let Some(thread) = self.scheduler.take() {
            let _ = thread.join();
        }
        drop(self.awake.take());
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// The reply a request is waiting to get, with what it carries.
enum Pending {
    Read(ReplyData, Vec<u8>),
    Write(ReplyWrite, u32),
    Flush(ReplyEmpty),
}

struct Job {
    arrived: Instant,
    /// The followed program's CPU time at receipt ([`CpuPace`]).
    cpu: Option<CpuStamp>,
    request: EmuRequest,
    pending: Pending,
}

/// A reply due at wall time `due_ns` (since the start); ordered so that the heap's top is the
/// earliest, ties in arrival order.
struct Due {
    due_ns: u64,
    complete_ns: f64,
    seq: u64,
    log_index: usize,
    pending: Pending,
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        (self.due_ns, self.seq) == (other.due_ns, other.seq)
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Due {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (other.due_ns, other.seq).cmp(&(self.due_ns, self.seq))
    }
}

fn since_ns(t0: Instant, t: Instant) -> u64 {
    t.saturating_duration_since(t0).as_nanos() as u64
}

/// When the reply to a request the model completes at `complete_ns` (model clock) is sent,
/// wall ns since the start: the route's latency `route_ns` before the model's completion
/// divided by the time scale, so that the kernel sees the model's time ([`Route`]), and never
/// before the request arrived (`arrived_ns`, wall).
fn reply_due_ns(complete_ns: f64, scale: f64, route_ns: u64, arrived_ns: u64) -> u64 {
    ((complete_ns / scale).round() as u64)
        .saturating_sub(route_ns)
        .max(arrived_ns)
}

/// [`reply_due_ns`] for a request whose arrival the program's CPU placed ([`CpuPace`]):
/// the model's clock no longer runs K times the wall, so the reply is due the model's
/// service (completion − arrival, divided by K) after the request was received, less the
/// route, and never before it arrived.
fn paced_reply_due_ns(
    complete_ns: f64,
    arrival_ns: f64,
    scale: f64,
    route_ns: u64,
    received_ns: u64,
) -> u64 {
    (received_ns + ((complete_ns - arrival_ns).max(0.0) / scale).round() as u64)
        .saturating_sub(route_ns)
        .max(received_ns)
}

/// The model's clock at each arrival: when a request reaches the model.
///
/// Why: replies leave the route's latency measured at start early ([`Route`]), so the kernel
/// sees each completion at the model's time only on average. On a request where the way out
/// and the next way in are faster than that (jitter, load), a program that waits for each
/// completion (fio at iodepth 1, dd) has its next request received before the model's
/// completion, and the model would count a wait the kernel never saw: fio's 4 KiB requests
/// on sata-500g-2008 at K = 16, with two CPU-bound loops, reached the model before the
/// previous completion in 80% of cases and were charged 0.154 ms of such wait on average
/// (docs/emulate.md). A request received while no reply is pending (every earlier reply
/// had started to leave) was issued after the kernel saw one of those completions, or else
/// was in flight on the route while that reply left; by design the kernel sees the last
/// completion at the model's time, so the request's model arrival is at least that
/// completion. The raise is at most K times the route: the reply left no more than the route
/// before the model's completion, and the request was received after it left. For a request
/// the kernel issued before it saw that completion (asynchronously, e.g. read-ahead) the
/// raise is an error of that size on its arrival; on the HDD model it changes no completion
/// (a request starts at the later of its arrival and the end of the drive's work).
/// Arrivals never go backwards (the replay's FCFS queue takes them in order), so a request
/// received while replies are pending is raised to the last arrival at most.
///
/// **Paced by the program's CPU** ([`CpuPace`]): once a request carries the followed
/// program's CPU time, the wall no longer places it. The clock keeps two anchors, the last
/// arrival and the last reply sent, each with the program's CPU time then; a request arrives
/// the program's CPU time since the last arrival after it, and, if it was received after a
/// reply started to leave, no sooner than that reply's completion plus the program's CPU since
/// it left (the program may have waited for it). A program blocked on the device uses no CPU,
/// so a synchronous request arrives at the completion it waited for plus its think time, as
/// the open-loop replay places it; the program's waits for a CPU, the loop worker's and the
/// route's delays move no arrival. The first paced request (no anchor yet) arrives at model
/// time 0 when nothing was modelled before it, as a replay's first request does (the wall
/// there is the emulator's start-up, which would set the platter's phase by chance); a
/// program's first request after the device served other work (the rig's own, or another
/// program followed before: anchors are per process, [`CpuStamp`]) is placed by the wall. A
/// request issued before the program saw a completion but received after its reply
/// left is raised to it, as the wall rule above raises it. And at K > 1 a completion the
/// kernel sees K times early can make the program compute through it; its CPU is then counted
/// once, from the reply, not from the arrival (arrivals land later than on the period's disk,
/// by at most the program's CPU during the service on the wall).
#[derive(Debug, Default)]
struct ModelClock {
    /// The latest arrival handed to the model, model ns.
    last_arrival_ns: f64,
    /// The latest completion the model gave, model ns.
    last_complete_ns: f64,
    /// When the latest reply started to leave, wall ns since the start.
    last_sent_ns: u64,
    /// Paced: the latest arrival (model ns) and the program's CPU then.
    arrived: Option<(f64, CpuStamp)>,
    /// Paced: the latest completion replied to (model ns), the program's CPU and the wall time
    /// (ns since the start) when its reply started to leave.
    delivered: Option<(f64, CpuStamp, u64)>,
    /// Whether any request has reached the model yet.
    started: bool,
}

impl ModelClock {
    /// The model's arrival of a request the daemon received at wall `received_ns`, with
    /// `replies_pending` (unsent replies when the scheduler took it). Whole ns, as a trace
    /// keeps them: an open-loop replay of the served stream hands the model the same times.
    /// `cpu` is the followed program's CPU time at receipt ([`CpuPace`]; `None`: the wall
    /// places it).
    fn arrival_ns(
        &mut self,
        received_ns: u64,
        scale: f64,
        replies_pending: bool,
        cpu: Option<CpuStamp>,
    ) -> f64 {
        // Anchors of another process (an earlier program followed by the same emulator) do
        // not place this one's requests: its first request is placed by the wall.
        let by_cpu = match (cpu, self.arrived) {
            // The first request of a paced program, with nothing modelled before it: model
            // time 0, where the open-loop replay puts the first request of its trace. On the
            // wall it would be the emulator's own start-up (mount, calibration) and the
            // program's exec times K, which set the platter's angle under the first request
            // by chance: ext3-metacluster's first read took 2.3-8.3 ms over ten captures of
            // one image (docs/emulate.md, "Where a capture's spread came from").
            (Some(_), None) if !self.started => Some(0.0),
            (Some(cpu), Some((at, at_cpu))) if at_cpu.pid == cpu.pid => {
                let mut t = at + cpu.ns.saturating_sub(at_cpu.ns) as f64;
                if let Some((done, done_cpu, sent)) = self.delivered {
                    if received_ns >= sent && done_cpu.pid == cpu.pid {
                        t = t.max(done + cpu.ns.saturating_sub(done_cpu.ns) as f64);
                    }
                }
                Some(t.round().max(self.last_arrival_ns))
            }
            _ => None,
        };
        if cpu.is_none() {
            // A request the wall places (nothing followed: the rig's own work between two
            // followed programs, or after one) ends the paced stretch: the next followed
            // request is placed by the wall as a first one is, not by anchors older than it.
            self.arrived = None;
            self.delivered = None;
        }
        let arrival = by_cpu.unwrap_or_else(|| {
            let idle = !replies_pending && received_ns >= self.last_sent_ns;
            let floor = if idle {
                self.last_complete_ns.ceil()
            } else {
                self.last_arrival_ns
            };
            (received_ns as f64 * scale).round().max(floor)
        });
        if let Some(cpu) = cpu {
            self.arrived = Some((arrival, cpu));
        }
        self.started = true;
        self.last_arrival_ns = arrival;
        arrival
    }

    /// The model completes a request at `complete_ns`.
    fn completed(&mut self, complete_ns: f64) {
        self.last_complete_ns = self.last_complete_ns.max(complete_ns);
    }

    /// A reply starts to leave at wall `at_ns`, for a request the model completed at
    /// `complete_ns`; `cpu` is the followed program's CPU time then.
    fn sent(&mut self, at_ns: u64, complete_ns: f64, cpu: Option<CpuStamp>) {
        self.last_sent_ns = self.last_sent_ns.max(at_ns);
        if let Some(cpu) = cpu {
            let done = self
                .delivered
                .filter(|(_, c, _)| c.pid == cpu.pid)
                .map_or(complete_ns, |(d, _, _)| d.max(complete_ns));
            self.delivered = Some((done, cpu, at_ns));
        }
    }
}

/// The scheduler thread: prices each request on the model as it arrives and sends each reply
/// when it is due.
fn schedule(
    rx: Receiver<Job>,
    t0: Instant,
    scale: f64,
    make_model: impl FnOnce() -> ServiceModel,
    log: Arc<Mutex<Vec<EmulatedRequest>>>,
    route: Arc<Route>,
    pace: CpuPace,
) {
    // The default timer slack (50 µs) would make every timed wait up to 50 µs late; the
    // Memulator's bar is 2% or 100 µs.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    run_real_time(SCHEDULER_PRIORITY);
    let softirqs = SoftirqRunner::new();
    let mut model = make_model();
    let mut heap: BinaryHeap<Due> = BinaryHeap::new();
    let mut clock = ModelClock::default();
    let mut seq = 0u64;
    let mut open = true;
    loop {
        let mut now = since_ns(t0, Instant::now());
        let mut replied = false;
        while heap.peek().is_some_and(|d| d.due_ns <= now) {
            replied = true;
            let due = heap.pop().expect("peeked");
            // Stamped before the reply leaves: the kernel cannot see this completion, nor a
            // program issue a request after it, before this instant.
            clock.sent(since_ns(t0, Instant::now()), due.complete_ns, pace.now_ns());
            match due.pending {
                Pending::Read(reply, data) => reply.data(&data),
                Pending::Write(reply, n) => reply.written(n),
                Pending::Flush(reply) => reply.ok(),
            }
            now = since_ns(t0, Instant::now());
            if let Some(entry) = log
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_mut(due.log_index)
            {
                entry.reply_late_ns = now.saturating_sub(due.due_ns) as f64;
            }
        }
        if replied {
            softirqs.run_pending();
        }
        let next = match (heap.peek(), open) {
            (None, false) => return,
            (None, true) => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            (Some(d), _) if d.due_ns - now <= SPIN_NS => {
                // Close to due: spin, taking any arrival in between without blocking.
                match rx.try_recv() {
                    Ok(job) => Ok(job),
                    Err(mpsc::TryRecvError::Empty) => {
                        std::hint::spin_loop();
                        continue;
                    }
                    Err(mpsc::TryRecvError::Disconnected) => {
                        open = false;
                        continue;
                    }
                }
            }
            (Some(d), true) => rx.recv_timeout(Duration::from_nanos(d.due_ns - now - SPIN_NS)),
            (Some(d), false) => {
                std::thread::sleep(Duration::from_nanos(d.due_ns - now - SPIN_NS));
                continue;
            }
        };
        match next {
            Ok(job) if route.calibrating.load(Ordering::SeqCst) => {
                // Measuring the route: answer at once, unmodelled and unlogged.
                match job.pending {
                    Pending::Read(reply, data) => reply.data(&data),
                    Pending::Write(reply, n) => reply.written(n),
                    Pending::Flush(reply) => reply.ok(),
                }
                softirqs.run_pending();
            }
            Ok(job) => {
                // A reply still in the heap was pending when this request was received (the
                // channel keeps the reader's order).
                let received_ns = since_ns(t0, job.arrived);
                let arrival_ns = clock.arrival_ns(received_ns, scale, !heap.is_empty(), job.cpu);
                let complete_ns = model(arrival_ns, &job.request).max(arrival_ns);
                clock.completed(complete_ns);
                let route_ns = route.ns.load(Ordering::Relaxed);
                let due_ns = if job.cpu.is_some() {
                    paced_reply_due_ns(complete_ns, arrival_ns, scale, route_ns, received_ns)
                } else {
                    reply_due_ns(complete_ns, scale, route_ns, received_ns)
                };
                let log_index = {
                    let mut log = log.lock().unwrap_or_else(|p| p.into_inner());
                    log.push(EmulatedRequest {
                        request: job.request,
                        arrival_ns,
                        received_ns,
                        cpu_ns: job.cpu.map(|c| c.ns),
                        complete_ns,
                        reply_late_ns: 0.0,
                    });
                    log.len() - 1
                };
                heap.push(Due {
                    due_ns,
                    complete_ns,
                    seq,
                    log_index,
                    pending: job.pending,
                });
                seq += 1;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => open = false,
        }
    }
}

/// Runs this CPU's pending softirqs in the calling thread, now.
///
/// Why: a reply completes the loop device's request inside the daemon's `write` to
/// `/dev/fuse` (FUSE's async direct I/O calls the loop driver's completion), and the block
/// layer finishes a loop request (`block_rq_complete`, what the program waits for) in
/// `BLOCK_SOFTIRQ` — loop has one hardware queue, so `blk_mq_complete_request_remote` raises
/// the softirq on this CPU. Raised from a system call, a softirq waits for the next interrupt
/// on this CPU or for `ksoftirqd`, an ordinary thread that queues behind every runnable task:
/// `bench emulate` measured the way out (reply → complete) p99 0.6-3.6 ms. The kernel runs
/// pending softirqs whenever a thread re-enables bottom halves (`local_bh_enable`), which a
/// socket option's `lock_sock`/`release_sock` does; so after its replies the daemon sets a
/// UDP socket's receive buffer to the size it already has, and the completions run in this
/// real-time thread.
struct SoftirqRunner {
    socket: Option<std::os::fd::OwnedFd>,
    rcvbuf: libc::c_int,
}

impl SoftirqRunner {
    fn new() -> SoftirqRunner {
        use std::os::fd::FromRawFd;
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            // Best effort: without it the completions wait for ksoftirqd, as before.
            return SoftirqRunner {
                socket: None,
                rcvbuf: 0,
            };
        }
        let socket = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };

        SoftirqRunner {
            socket: Some(socket),
            rcvbuf: 64 * 1024,
        }
    }

    fn run_pending(&self) {
        use std::os::fd::AsRawFd;
        if let Some(socket) = &self.socket {
            unsafe {
                libc::setsockopt(
                    socket.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_RCVBUF,
                    (&self.rcvbuf as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                );
            }
        }
    }
}

/// The FUSE file system: a root directory holding the one file `disk`, IMAGE's bytes.
struct DiskFs {
    image: std::fs::File,
    size: u64,
    read_only: bool,
    max_request_bytes: u32,
    jobs: Sender<Job>,
    pace: CpuPace,
}

impl DiskFs {
    fn attr(&self, ino: u64) -> Option<FileAttr> {
        let (kind, size, perm, nlink) = match ino {
            1 => (FileType::Directory, 0, 0o555, 2),
            DISK_INO => (
                FileType::RegularFile,
                self.size,
                if self.read_only { 0o444 } else { 0o644 },
                1,
            ),
            _ => return None,
        };
        Some(FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: UNIX_EPOCH,
            mtime: UNIX_EPOCH,
            ctime: UNIX_EPOCH,
            crtime: UNIX_EPOCH,
            kind,
            perm,
            nlink,
            uid: 0,
            gid: 0,
            rdev: 0,
            flags: 0,
            blksize: 512,
        })
    }

    fn submit(&self, job: Job) {
        if let Err(mpsc::SendError(job)) = self.jobs.send(job) {
            match job.pending {
                Pending::Read(reply, _) => reply.error(Errno::EIO),
                Pending::Write(reply, _) => reply.error(Errno::EIO),
                Pending::Flush(reply) => reply.error(Errno::EIO),
            }
        }
    }
}

fn request_of(write: bool, offset: u64, bytes: usize) -> EmuRequest {
    EmuRequest {
        op: if write { Op::Write } else { Op::Read },
        sector: offset / 512,
        sectors: (bytes as u64).div_ceil(512) as u32,
    }
}

impl Filesystem for DiskFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // FUSE's largest request (`max_pages`) follows the larger of max_write and
        // max_readahead: raise it to the loop queue's request size, so a request reaches the
        // daemon whole.
        let _ = config.set_max_write(self.max_request_bytes);
        let _ = config.set_max_readahead(self.max_request_bytes);
        // Asynchronous direct I/O: the loop driver's worker hands a request to FUSE and goes
        // on to the next one. Without it the worker waits for each reply, so a request issued
        // while another is in service reaches the daemon only when that one completes, and
        // the model would see it arrive late (kernel time exceeded the model's by a whole
        // service time for 1% of e2fsck's requests).
        config
            .add_capabilities(InitFlags::FUSE_ASYNC_DIO)
            .map_err(|missing| {
                std::io::Error::other(format!(
                    "the kernel's FUSE lacks {missing:?}, which the emulator needs"
                ))
            })?;
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match (u64::from(parent), self.attr(DISK_INO)) {
            (1, Some(attr)) if name == DISK_FILE => {
                reply.entry(&ATTR_TTL, &attr, fuser::Generation(0))
            }
            _ => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.attr(u64::from(ino)) {
            Some(attr) => reply.attr(&ATTR_TTL, &attr),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if u64::from(ino) != DISK_INO {
            return reply.error(Errno::EISDIR);
        }
        let access = flags.0 & libc::O_ACCMODE;
        if self.read_only && access != libc::O_RDONLY {
            return reply.error(Errno::EROFS);
        }
        // No page cache for the disk file: every read and write reaches the daemon and is
        // timed, whoever opens it.
        reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO);
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let arrived = Instant::now();
        let cpu = self.pace.now_ns();
        // The thread that reads requests stamps their arrival: real time for it. (Not in
        // `init`, which fuser runs on the thread that mounts: the main thread, whose children
        // — the traced program — must keep the ordinary scheduler.)
        run_real_time_once();
        if u64::from(ino) != DISK_INO {
            return reply.error(Errno::EISDIR);
        }
        let len = u64::from(size).min(self.size.saturating_sub(offset)) as usize;
        let mut data = vec![0u8; len];
        if let Err(e) = self.image.read_exact_at(&mut data, offset) {
            return reply.error(Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO)));
        }
        let request = request_of(false, offset, size as usize);
        self.submit(Job {
            arrived,
            cpu,
            request,
            pending: Pending::Read(reply, data),
        });
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let arrived = Instant::now();
        let cpu = self.pace.now_ns();
        run_real_time_once();
        if u64::from(ino) != DISK_INO {
            return reply.error(Errno::EISDIR);
        }
        if self.read_only {
            return reply.error(Errno::EROFS);
        }
        if offset.saturating_add(data.len() as u64) > self.size {
            // A disk does not grow.
            return reply.error(Errno::ENOSPC);
        }
        if let Err(e) = self.image.write_all_at(data, offset) {
            return reply.error(Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO)));
        }
        self.submit(Job {
            arrived,
            cpu,
            request: request_of(true, offset, data.len()),
            pending: Pending::Write(reply, data.len() as u32),
        });
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        let arrived = Instant::now();
        let cpu = self.pace.now_ns();
        run_real_time_once();
        let synced = if datasync {
            self.image.sync_data()
        } else {
            self.image.sync_all()
        };
        if let Err(e) = synced {
            return reply.error(Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO)));
        }
        // The loop driver turns a cache flush (a journal commit's barrier, `syncfs`) into
        // this fsync: a disk answers it when its cache is on the media, so the model times it
        // as the open-loop replay times the traced flush.
        self.submit(Job {
            arrived,
            cpu,
            request: EmuRequest {
                op: Op::Flush,
                sector: 0,
                sectors: 0,
            },
            pending: Pending::Flush(reply),
        });
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        if u64::from(ino) != 1 {
            return reply.error(Errno::ENOTDIR);
        }
        let entries = [
            (1, FileType::Directory, "."),
            (1, FileType::Directory, ".."),
            (DISK_INO, FileType::RegularFile, DISK_FILE),
        ];
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(*ino), (i + 1) as u64, *kind, name) {
                break;
            }
        }
        reply.ok();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_leaves_the_route_early_but_not_before_its_request_arrived() {
        // 5 ms on the model's clock at K = 2 is due 2.5 ms after the start, less a 60 µs route.
        assert_eq!(reply_due_ns(5e6, 2.0, 60_000, 1_000_000), 2_440_000);
        // A completion closer to the arrival than the route: answered at the arrival.
        assert_eq!(reply_due_ns(1_030_000.0, 1.0, 60_000, 1_000_000), 1_000_000);
        // Before calibration the route is 0: the model's time exactly.
        assert_eq!(reply_due_ns(5e6, 1.0, 0, 0), 5_000_000);
    }

    #[test]
    fn a_request_received_with_no_reply_pending_arrives_no_sooner_than_the_last_completion() {
        let mut clock = ModelClock::default();
        // K = 16: received at 1 ms of wall time is 16 ms of model time.
        assert_eq!(clock.arrival_ns(1_000_000, 16.0, false, None), 16e6);
        clock.completed(23_500_000.4);
        clock.sent(1_400_000, 23_500_000.4, None);
        // The next one, received after that reply left but 30 µs of wall time before the
        // model's completion (the route was faster than measured): it arrives at the
        // completion (whole ns), not 0.48 ms earlier.
        assert_eq!(clock.arrival_ns(1_438_750, 16.0, false, None), 23_500_001.0);
        clock.completed(30e6);
        // Received before the last reply started to leave (it was pending at receipt): the
        // model's wall-clock arrival stands, but never before the previous arrival.
        assert_eq!(clock.arrival_ns(1_399_000, 16.0, false, None), 23_500_001.0);
        clock.sent(1_900_000, 30e6, None);
        assert_eq!(clock.arrival_ns(1_800_000, 16.0, false, None), 28_800_000.0);
        // A reply still unsent when the scheduler took it: not raised to the completion.
        assert_eq!(clock.arrival_ns(1_850_000, 16.0, true, None), 29_600_000.0);
        // Received late: the wall clock's arrival, after the last completion, stands.
        assert_eq!(clock.arrival_ns(2_000_000, 16.0, false, None), 32e6);
    }

    /// The followed program's CPU stamp in these tests: one process, pid 100.
    fn cpu(ns: u64) -> Option<CpuStamp> {
        Some(CpuStamp { pid: 100, ns })
    }

    #[test]
    fn paced_by_the_program_s_cpu_an_arrival_ignores_the_wall_between_requests() {
        let mut clock = ModelClock::default();
        // The first paced request, with nothing modelled before it, arrives at model time 0
        // (where a replay puts its first request), not at the wall's 8 ms (K = 8).
        assert_eq!(clock.arrival_ns(1_000_000, 8.0, false, cpu(500_000)), 0.0);
        clock.completed(20e6);
        // Its reply leaves at 2.4 ms of wall time; the program has used no CPU since (blocked).
        clock.sent(2_400_000, 20e6, cpu(500_000));
        // The next request comes 30 µs of CPU later, received 5 ms of wall time after the reply
        // (waits for a CPU, a slow loop worker): the completion plus the CPU, not 8 × the wall.
        assert_eq!(
            clock.arrival_ns(7_400_000, 8.0, false, cpu(530_000)),
            20_030_000.0
        );
        // One more while that one is pending (read-ahead issued by the running program): its
        // CPU since the last arrival, whatever the wall says.
        assert_eq!(
            clock.arrival_ns(9_000_000, 8.0, true, cpu(545_000)),
            20_045_000.0
        );
        clock.completed(31e6);
        // A reply that left after this request's receipt does not hold it back.
        clock.sent(9_500_000, 31e6, cpu(546_000));
        assert_eq!(
            clock.arrival_ns(9_400_000, 8.0, true, cpu(546_000)),
            20_046_000.0
        );
        // Received after it left: no sooner than its completion plus the CPU since it left.
        assert_eq!(
            clock.arrival_ns(9_600_000, 8.0, false, cpu(556_000)),
            31_010_000.0
        );
        // A request without the CPU (the program exited, or not followed yet) falls back to the
        // wall rule, never before the last arrival.
        assert_eq!(clock.arrival_ns(3_000_000, 8.0, true, None), 31_010_000.0);
    }

    /// Two programs followed one after the other (two `dd`s): the second's CPU clock starts
    /// at zero, and its first request is placed by the wall, not at the first program's last
    /// arrival or completion plus the second's little CPU.
    #[test]
    fn a_new_program_s_first_request_is_placed_by_the_wall() {
        let mut clock = ModelClock::default();
        let first = |ns| Some(CpuStamp { pid: 100, ns });
        let second = |ns| Some(CpuStamp { pid: 200, ns });
        // (the first request of all: model time 0, as a replay's first)
        assert_eq!(clock.arrival_ns(1_000_000, 1.0, false, first(800_000)), 0.0);
        clock.completed(9e6);
        clock.sent(9_000_000, 9e6, first(900_000));
        // 200 ms of wall later (the rig dropped caches), the second program's first request,
        // 2 ms into its own CPU: the wall's 209 ms, not 9 ms + 2 ms.
        assert_eq!(
            clock.arrival_ns(209_000_000, 1.0, false, second(2_000_000)),
            209e6
        );
        clock.completed(215e6);
        clock.sent(215_000_000, 215e6, second(2_100_000));
        // From then on its own CPU paces it.
        assert_eq!(
            clock.arrival_ns(300_000_000, 1.0, false, second(2_150_000)),
            215_050_000.0
        );
    }

    /// Computes until the calling thread has used `ns` of CPU by its own clock (the wall would
    /// give less CPU on a loaded machine).
    fn spin_own_cpu(ns: u64) {
        let own = || {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
        };
        let start = own();
        let mut x = 0u64;
        while own() - start < ns {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    }

    /// A followed thread's CPU clock is the thread's own: read from another thread of the
    /// process (as the emulator's are), it grows with that thread's work and not with the
    /// reader's.
    #[test]
    fn a_followed_thread_s_clock_counts_that_thread_alone() {
        let pace = CpuPace::new().unwrap();
        assert_eq!(pace.now_ns(), None);
        let (tx, rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let worker = {
            let pace = pace.clone();
            std::thread::spawn(move || {
                pace.follow_this_thread();
                tx.send(()).unwrap();
                go_rx.recv().unwrap();
                // 50 ms of CPU in this thread, by its own clock (the wall would give less CPU
                // on a loaded machine).
                spin_own_cpu(50_000_000);
                tx.send(()).unwrap();
                go_rx.recv().unwrap();
            })
        };
        rx.recv().unwrap();
        let before = pace.now_ns().expect("the worker is followed");
        // This thread computes 50 ms too: not counted (the process's clock would).
        spin_own_cpu(50_000_000);
        let idle = pace.now_ns().unwrap();
        go_tx.send(()).unwrap();
        rx.recv().unwrap();
        let busy = pace.now_ns().unwrap();
        assert!(idle.ns - before.ns < 10_000_000, "{before:?} {idle:?}");
        assert!(busy.ns - idle.ns >= 50_000_000, "{idle:?} {busy:?}");
        assert!(busy.pid < 0, "a thread is followed, not a process");
        go_tx.send(()).unwrap();
        worker.join().unwrap();
        pace.stop_following();
        assert_eq!(pace.now_ns(), None);
    }

    /// A request the wall places between two paced stretches (the rig dropping caches between
    /// two reads of the same followed thread) ends the first stretch: the next paced request
    /// is placed by the wall, not by the old anchors plus the CPU the thread spent between.
    #[test]
    fn a_request_placed_by_the_wall_ends_the_paced_stretch() {
        let mut clock = ModelClock::default();
        assert_eq!(clock.arrival_ns(1_000_000, 1.0, false, cpu(100_000)), 0.0);
        clock.completed(5e6);
        clock.sent(5_000_000, 5e6, cpu(100_000));
        // The rig's own request, nothing followed, 100 ms of wall later.
        assert_eq!(clock.arrival_ns(105_000_000, 1.0, false, None), 105e6);
        clock.completed(112e6);
        clock.sent(112_000_000, 112e6, None);
        // The thread is followed again, 3 ms of its CPU later: the wall's 300 ms, not the old
        // anchor's 1 ms + 3 ms nor the last arrival.
        assert_eq!(
            clock.arrival_ns(300_000_000, 1.0, false, cpu(3_100_000)),
            300e6
        );
    }

    /// The pace counts the followed program's time on a CPU, not the wall: a child that
    /// computes, then blocks, advances it while it computes and (within the counter's grain)
    /// not while it waits. Root only, as the emulator is (CI runs as root).
    #[test]
    fn the_pace_counts_the_program_s_time_on_a_cpu_not_the_wall() {
        use std::io::{BufRead, Write};
        if !crate::system::is_root() {
            eprintln!("skipped: the emulator's pace is opened by root");
            return;
        }
        let pace = CpuPace::new().unwrap();
        // About 50-200 ms of CPU in the shell's loop, then a line out, then blocked reading.
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; echo computed; read x",
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        pace.pid.get().store(child.id() as i32, Ordering::SeqCst);
        let start = pace
            .now_ns()
            .expect("the task-clock counter opens for a child");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "computed");
        let computed = pace.now_ns().unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let waited = pace.now_ns().unwrap();
        child.stdin.take().unwrap().write_all(b"\n").unwrap();
        child.wait().unwrap();
        // Its loop ran on a CPU after the counter opened: well above the counter's grain.
        assert!(
            computed.ns - start.ns >= 10_000_000,
            "{} ns counted while it computed",
            computed.ns - start.ns
        );
        // Blocked for 300 ms of wall: nothing more. (This holds what the pace must count; the
        // process CPU clock it replaced passes it too. Its excess appeared only for a
        // real-time e2fsck on the emulated device under load, and is held by
        // load_independence_closed_loop.rs, docs/emulate.md.)
        assert!(
            waited.ns - computed.ns < 2_000_000,
            "{} ns counted while it was blocked for 300 ms",
            waited.ns - computed.ns
        );
    }

    #[test]
    fn a_paced_reply_is_due_the_model_s_service_after_its_receipt() {
        // 16 ms of model service at K = 8 is 2 ms of wall after receipt, less a 50 µs route.
        assert_eq!(
            paced_reply_due_ns(36e6, 20e6, 8.0, 50_000, 7_000_000),
            8_950_000
        );
        // Never before the request was received.
        assert_eq!(
            paced_reply_due_ns(20.01e6, 20e6, 1.0, 50_000, 7_000_000),
            7_000_000
        );
    }

    #[test]
    fn a_request_covers_its_bytes_in_sectors() {
        assert_eq!(
            request_of(false, 4096, 524_288),
            EmuRequest {
                op: Op::Read,
                sector: 8,
                sectors: 1024
            }
        );
        assert_eq!(request_of(true, 512, 100).sectors, 1);
    }
}
