//! Capture of one block device's requests through tracefs, in a tracing instance of its own.
//!
//! The session works in a new tracefs *instance* (`instances/layoutlab-PID-N`), which has its
//! own ring buffer, event enables, filters, clock and `tracing_on`. The global tracing state is
//! therefore never changed, so other users of tracefs (another engineer's capture, a running
//! `perf`) are neither disturbed nor able to disturb this one, and restoring the state means
//! removing the instance. If tracefs is not mounted anywhere, the session mounts it on a
//! private directory (not `/sys/kernel/tracing`, which a concurrent session might be relying
//! on) and unmounts it at the end.
//!
//! Events: `block/block_rq_issue` and `block/block_rq_complete` (and optionally the bio level:
//! `block_bio_queue`, `block_split`, `block_bio_remap`, `block_bio_backmerge`,
//! `block_bio_frontmerge`), filtered in the kernel by `dev == (major << 20) | minor`. The clock
//! is `mono`, so times compare with `CLOCK_MONOTONIC`. A thread streams `trace_pipe` into a
//! text file while the run goes on, so a long run is limited by disk space, not by the ring
//! buffer; events the ring still overwrote are counted from `per_cpu/cpu*/stats`.

use crate::cleanup::{self, CleanupId};
use crate::error::{Result, RigError};
use crate::mount::Mount;
use crate::system::{read_attr, require_root, write_attr, TempFile};
use crate::tracefs_text::{self, ProgressStyle, MARK_PREFIX};
use layoutlab_trace::format::{DevId, ReadOptions};
use layoutlab_trace::{DeviceQueue, Trace};
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Ring buffer per CPU of the default capture, KiB.
pub const DEFAULT_BUFFER_SIZE_KB: u32 = 16 * 1024;

/// Ring-buffer bytes one `trace_marker` line of e2fsck's progress (`PASS CUR MAX DEVICE`)
/// takes, an upper bound. Measured on kernel 6.18: 40,000 lines of 26 characters written on one
/// CPU into a 1 MiB buffer left 20,110 entries in 1,051,888 bytes, 52.3 bytes each (the 16 bytes
/// of header and address plus the text, rounded up to 4); 64 leaves room for a line of 38
/// characters (a device path such as `/dev/mapper/...` or `/dev/loop123` and 10-digit counts).
pub const MARKER_EVENT_BYTES: u64 = 64;

/// Ring-buffer bytes of one request's `block_rq_issue` and `block_rq_complete`, an upper
/// bound. Measured on kernel 6.18 (`dd iflag=direct bs=4k` on a loop device, no reader): the
/// CPU holding both kinds kept 16,254 events in 1,052,584 bytes (64.8 each), the CPU holding
/// only completions 4,059 in 229,992 (56.7 each), so an issue takes about 73 and a request
/// about 130; 144 leaves room for a longer command name.
pub const REQUEST_EVENT_BYTES: u64 = 144;

/// The most ring-buffer memory a sized capture may take, summed over the CPUs: 1 GiB (each
/// CPU gets its own buffer of [`TraceOptions::buffer_size_kb`]). The kernel allocates it
/// unswappable for the whole capture, beside images in memory and the other engineers' runs.
pub const RING_BUFFER_CAP_BYTES: u64 = 1 << 30;

/// What a capture will put in the ring buffer at most: the basis of
/// [`TraceOptions::sized_for`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExpectedEvents {
    /// Lines written to the trace marker (e2fsck's progress lines, the rig's tags).
    pub markers: u64,
    /// Block requests of the device (each an issue and a completion).
    pub requests: u64,
}

impl ExpectedEvents {
    /// Bytes a ring buffer needs to hold all of them with nothing read out: every event may
    /// land on one CPU (e2fsck is one thread), so this is the size of *each* CPU's buffer. Two
    /// pages more: the ring keeps one page for the reader and fills a page only until the next
    /// event does not fit.
    pub fn ring_bytes(&self) -> u64 {
        self.markers * MARKER_EVENT_BYTES + self.requests * REQUEST_EVENT_BYTES + 2 * 4096
    }
}

/// CPUs the kernel keeps a ring buffer for (configured CPUs; at least 1).
fn ring_cpus() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    n.max(1) as u64
}

/// How to capture.
#[derive(Clone, Debug)]
pub struct TraceOptions {
    /// Ring buffer per CPU, KiB, of the block requests' instance (the scheduler's instance
    /// keeps [`DEFAULT_BUFFER_SIZE_KB`]). The streaming thread empties it every few
    /// milliseconds, but on a loaded machine it may wait for a CPU for a long time while the
    /// traced program writes: [`TraceOptions::sized_for`] makes it hold the whole capture.
    pub buffer_size_kb: u32,
    /// Whether a thread empties the ring buffer into the text file while the capture runs.
    /// `false` reads it only at [`TracefsSession::stop`], so what a buffer holds is the
    /// kernel's business alone (tests of the sizing rule use this).
    pub drain: bool,
    /// Also record the bio level: `block_bio_queue` (bios as submitted, before merging and
    /// splitting), `block_split`, `block_bio_remap` and the bio merges; the queued bios come
    /// back as [`Capture::bios`] and the other events are counted in [`Capture::bio_events`].
    pub bio_queue: bool,
    /// Where the captured text goes; `None` = a temp file removed after parsing.
    pub text_path: Option<PathBuf>,
    /// Record the scheduler's accounting of the processes the session is told to follow
    /// ([`TracefsSession::follow`], [`CpuFollower`]) and stamp every request with their CPU
    /// time used (see `layoutlab_trace::cpu`). Costs nothing until a process is followed.
    pub cpu_accounting: bool,
}

impl TraceOptions {
    /// These options with a ring buffer per CPU that holds every event of `expected` even if
    /// the streaming thread got no CPU during the whole capture (at least the present size).
    /// An error, before anything is traced, when the buffers of all CPUs would exceed
    /// [`RING_BUFFER_CAP_BYTES`]: the capture would then depend on the reader keeping up.
    pub fn sized_for(&self, expected: ExpectedEvents) -> Result<TraceOptions> {
        self.sized_for_cpus(expected, ring_cpus())
    }

    fn sized_for_cpus(&self, expected: ExpectedEvents, cpus: u64) -> Result<TraceOptions> {
        let per_cpu = expected.ring_bytes();
        let total = per_cpu.saturating_mul(cpus);
        if total > RING_BUFFER_CAP_BYTES {
            return Err(RigError::InvalidArgument(format!(
                "the capture may produce {} marker lines and {} requests: its ring buffer would \
                 need {} MiB per CPU, {} MiB over {cpus} CPUs, more than the cap of {} MiB \
                 (RING_BUFFER_CAP_BYTES); trace a smaller file system",
                expected.markers,
                expected.requests,
                per_cpu.div_ceil(1 << 20),
                total.div_ceil(1 << 20),
                RING_BUFFER_CAP_BYTES >> 20
            )));
        }
        // Below the cap, so it fits in u32 KiB.
        let kb = per_cpu.div_ceil(1024) as u32;
        Ok(TraceOptions {
            buffer_size_kb: self.buffer_size_kb.max(kb),
            ..self.clone()
        })
    }
}

impl Default for TraceOptions {
    fn default() -> Self {
        TraceOptions {
            buffer_size_kb: DEFAULT_BUFFER_SIZE_KB,
            drain: true,
            bio_queue: false,
            text_path: None,
            cpu_accounting: true,
        }
    }
}

/// The followed processes' CPU time over a capture (see [`TraceOptions::cpu_accounting`]).
#[derive(Clone, Debug, PartialEq)]
pub struct CpuAccounting {
    /// The processes followed (their children and threads were followed too).
    pub roots: Vec<u32>,
    /// Their on-CPU time over the whole capture, ns (from the moment each was followed).
    pub total_ns: u64,
    /// Of that, before the trace's first request (start-up: exec, opening the device), ns.
    pub before_trace_ns: u64,
    /// Of that, after its last issue or completion (the program's last work, exit), ns.
    pub after_trace_ns: u64,
    /// Scheduler events the kernel lost (non-zero: the stamps are wrong; the capture fails).
    pub lost_events: u64,
}

impl CpuAccounting {
    /// Their CPU time between the trace's first request and its last issue or completion, ns.
    pub fn during_trace_ns(&self) -> u64 {
        self.total_ns - self.before_trace_ns - self.after_trace_ns
    }
}

/// What a capture produced.
#[derive(Debug)]
pub struct Capture {
    /// The requests of the device, tagged by the markers written during the capture, as the
    /// trace crate's tracefs reader reads them; times are ns since
    /// [`Capture::origin_mono_ns`] (the first request's issue, the reader's origin). With CPU
    /// accounting of a followed process, every request carries CPU stamps.
    pub trace: Trace,
    /// `CLOCK_MONOTONIC` (ns) of time 0 of the trace: the first request's issue (tracefs
    /// prints µs, so this is a whole number of µs), or the start of tracing without requests.
    pub origin_mono_ns: u64,
    /// Markers in the order written: (ns since the origin, negative before the first
    /// request, tag). e2fsck progress lines appear as `passN` at each new pass.
    pub marks: Vec<(i64, String)>,
    /// Events the kernel lost (ring overruns plus dropped events, summed over CPUs). Non-zero
    /// means the trace is incomplete: raise [`TraceOptions::buffer_size_kb`].
    pub lost_events: u64,
    /// Events written to the trace marker during the capture (the rig's tags and every
    /// progress or output line of the program): what [`ExpectedEvents::markers`] bounds.
    pub marker_events: u64,
    /// Requests issued but not completed inside the capture.
    pub incomplete_requests: usize,
    /// The captured text, if [`TraceOptions::text_path`] asked to keep it.
    pub text_path: Option<PathBuf>,
    /// The followed processes' CPU time, when a process was followed.
    pub cpu: Option<CpuAccounting>,
    /// What a checker wrote to the trace marker as its output (empty for e2fsck's progress
    /// lines, which become tags only): see [`TracefsSession::set_progress_style`].
    pub output: String,
    /// With [`TraceOptions::bio_queue`]: the bios queued on the device (`block_bio_queue`),
    /// one "request" each, tagged by the same markers, times ns since the first bio (no
    /// completions: bios are not paired with what completes them). A bio the block layer
    /// split appears once, whole; a split's remainder is not queued again (kernel 6.18,
    /// `bio_submit_split`).
    pub bios: Option<Trace>,
    /// With [`TraceOptions::bio_queue`]: how many of each bio-level event the device saw.
    pub bio_events: Option<BioEvents>,
}

/// Counts of the bio-level events of a capture (see [`TraceOptions::bio_queue`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BioEvents {
    /// `block_bio_queue`: bios submitted to the device.
    pub queued: u64,
    /// `block_split`: bios split because they exceeded the queue's limits.
    pub split: u64,
    /// `block_bio_remap`: bios remapped onto this device from a stacked one (or a partition).
    pub remapped: u64,
    /// `block_bio_backmerge` + `block_bio_frontmerge`: bios merged into a pending request.
    pub merged: u64,
}

impl BioEvents {
    /// Counts the bio-level events of device `dev` in tracefs text.
    pub fn count(text: &str, dev: (u32, u32)) -> BioEvents {
        let key = |e: &str| format!(": {e}: {},{} ", dev.0, dev.1);
        let (q, s, r, b, f) = (
            key("block_bio_queue"),
            key("block_split"),
            key("block_bio_remap"),
            key("block_bio_backmerge"),
            key("block_bio_frontmerge"),
        );
        let mut n = BioEvents::default();
        for line in text.lines() {
            if line.contains(&q) {
                n.queued += 1;
            } else if line.contains(&s) {
                n.split += 1;
            } else if line.contains(&r) {
                n.remapped += 1;
            } else if line.contains(&b) || line.contains(&f) {
                n.merged += 1;
            }
        }
        n
    }
}

/// The bios of device `dev` queued in tracefs text (`block_bio_queue`), tagged by the
/// markers, as a trace (see [`Capture::bios`]).
pub fn read_bios(text: &str, dev: (u32, u32), name: &str) -> Result<Trace> {
    let queue = format!(": block_bio_queue: {},{} ", dev.0, dev.1);
    let mut only = String::new();
    for line in text.lines() {
        if line.contains(&queue) || line.contains(": tracing_mark_write: ") {
            only.push_str(line);
            only.push('\n');
        }
    }
    let opts = ReadOptions {
        dev: Some(DevId {
            major: dev.0,
            minor: dev.1,
        }),
        devno: None,
    };
    Ok(layoutlab_trace::tracefs::read(&only, name, &opts)?)
}

/// Writes tag markers into a session's trace; cheap to clone and usable from any thread.
#[derive(Clone, Debug)]
pub struct Marker {
    file: Arc<Mutex<Option<File>>>,
}

impl Marker {
    /// Writes `layoutlab tag=TAG` into the trace: requests issued after it carry `tag`.
    /// Tags are one word of at most 64 bytes.
    pub fn mark(&self, tag: &str) -> Result<()> {
        if tag.is_empty() || tag.len() > 64 || tag.chars().any(|c| c.is_whitespace()) {
            return Err(RigError::InvalidArgument(format!(
                "trace tag {tag:?} must be one word of 1 to 64 bytes"
            )));
        }
        let mut guard = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let file = guard
            .as_mut()
            .ok_or_else(|| RigError::Unsupported("the tracefs session has ended".into()))?;
        // One write(2) = one marker event.
        file.write_all(format!("{MARK_PREFIX}{tag}").as_bytes())
            .map_err(|e| RigError::io("write trace_marker", e))
    }
}

/// Makes a child process follow itself in a session's scheduler accounting, from between fork
/// and exec ([`CpuFollower::follow_self`] in `CommandExt::pre_exec`), so that not one
/// instruction of the program (nor a child it forks at once) escapes the accounting.
#[derive(Clone, Debug)]
pub struct CpuFollower {
    pid_file: std::ffi::CString,
    tracing_on: std::ffi::CString,
    marker: std::ffi::CString,
}

impl CpuFollower {
    /// Adds the calling process to the followed set and starts the scheduler instance. Only
    /// raw system calls on memory prepared before the fork (no allocation), so it is safe
    /// between fork and exec.
    ///
    /// # Safety
    /// Call it only in a freshly forked child (e.g. inside `pre_exec`).
    pub unsafe fn follow_self(&self) -> std::io::Result<()> {
        let mut digits = [0u8; 12];
        let mut n = libc::getpid() as u32;
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        write_raw(&self.pid_file, &digits[at..])?;
        write_raw(&self.tracing_on, b"1")?;
        // The instant it is followed from: what it runs before its first switch away counts.
        write_raw(
            &self.marker,
            layoutlab_trace::tracefs::FOLLOW_MARK.as_bytes(),
        )
    }
}

/// open(O_WRONLY) + one write(2) + close, with no allocation.
unsafe fn write_raw(path: &std::ffi::CStr, bytes: &[u8]) -> std::io::Result<()> {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
    let err = std::io::Error::last_os_error();
    libc::close(fd);
    if n != bytes.len() as isize {
        return Err(err);
    }
    Ok(())
}

/// One tracing instance whose `trace_pipe` a thread streams into a text file.
#[derive(Debug)]
struct Streamed {
    dir: PathBuf,
    stop_flag: Arc<AtomicBool>,
    reader_done: Arc<AtomicBool>,
    reader: Option<JoinHandle<std::io::Result<()>>>,
    text_path: PathBuf,
    cleanup: Option<CleanupId>,
    _text_file: Option<TempFile>,
}

impl Streamed {
    /// Creates instance `name` under `root` (tracing off) and its text file `text_path`
    /// (removed at the end unless `keep_text`), and registers their removal; `marker` is
    /// closed before removal (an open file keeps an instance busy).
    fn create(
        root: &Path,
        name: &str,
        text_path: PathBuf,
        keep_text: bool,
        buffer_size_kb: u32,
        marker: Option<Marker>,
    ) -> Result<Streamed> {
        // Each resource is made and registered as one step (`cleanup::creating`): a signal in
        // between would leave it behind.
        let text_file = cleanup::creating(|| {
            File::create(&text_path)
                .map_err(|e| RigError::io(format!("create {}", text_path.display()), e))?;
            Ok::<_, RigError>((!keep_text).then(|| TempFile::adopt(&text_path)))
        })?;
        let dir = root.join("instances").join(name);
        let stop_flag = Arc::new(AtomicBool::new(false));
        let reader_done = Arc::new(AtomicBool::new(true));
        let cleanup = cleanup::creating(|| {
            std::fs::create_dir(&dir).map_err(|e| {
                RigError::io(format!("create tracefs instance {}", dir.display()), e)
            })?;
            let (dir, stop_flag, reader_done) =
                (dir.clone(), stop_flag.clone(), reader_done.clone());
            Ok::<_, RigError>(cleanup::register(
                format!("tracefs instance {}", dir.display()),
                move || remove_instance(&dir, &stop_flag, &reader_done, marker.as_ref()),
            ))
        })?;
        let streamed = Streamed {
            dir,
            stop_flag,
            reader_done,
            reader: None,
            text_path,
            cleanup: Some(cleanup),
            _text_file: text_file,
        };
        // From here on an error drops `streamed`, which removes the instance.
        write_attr(&streamed.dir.join("tracing_on"), "0")?;
        write_attr(
            &streamed.dir.join("buffer_size_kb"),
            &buffer_size_kb.to_string(),
        )?;
        write_attr(&streamed.dir.join("trace_clock"), "mono")?;
        let clock = read_attr(&streamed.dir.join("trace_clock"))?;
        if !clock.contains("[mono]") {
            return Err(RigError::Unsupported(format!(
                "trace_clock mono not accepted: {clock}"
            )));
        }
        Ok(streamed)
    }

    /// Starts the thread that streams `trace_pipe` into the text file (the registered
    /// cleanup waits for it through `reader_done`).
    fn start_reader(&mut self) -> Result<()> {
        self.reader_done.store(false, Ordering::SeqCst);
        let (pipe, out, stop, done) = (
            self.dir.join("trace_pipe"),
            self.text_path.clone(),
            self.stop_flag.clone(),
            self.reader_done.clone(),
        );
        match std::thread::Builder::new()
            .name("rig-trace-pipe".into())
            .spawn(move || stream(pipe, out, stop, done))
        {
            Ok(handle) => {
                self.reader = Some(handle);
                Ok(())
            }
            Err(e) => {
                self.reader_done.store(true, Ordering::SeqCst);
                Err(RigError::io("start the trace_pipe reader thread", e))
            }
        }
    }

    /// Events lost so far (ring overruns plus dropped events over all CPUs).
    fn lost_events(&self) -> Result<u64> {
        let per_cpu = self.dir.join("per_cpu");
        let entries = std::fs::read_dir(&per_cpu)
            .map_err(|e| RigError::io(format!("list {}", per_cpu.display()), e))?;
        let mut lost = 0;
        for entry in entries.flatten() {
            let stats_path = entry.path().join("stats");
            let Ok(stats) = std::fs::read_to_string(&stats_path) else {
                continue;
            };
            for line in stats.lines() {
                let (key, value) = line.split_once(':').unwrap_or((line, ""));
                if key == "overrun" || key == "dropped events" {
                    lost += value.trim().parse::<u64>().unwrap_or(0);
                }
            }
        }
        Ok(lost)
    }

    /// Stops tracing and the reader, counts lost events, removes the instance and returns the
    /// text and the lost-event count.
    fn finish(&mut self) -> Result<(String, u64)> {
        write_attr(&self.dir.join("tracing_on"), "0")?;
        // Lost events are counted before the ring is read: reading frees room, not events.
        let lost = self.lost_events()?;
        if self.reader.is_none() {
            // Not drained during the capture: read the ring out now (the stop flag below
            // ends the reader once the ring is empty).
            self.start_reader()?;
        }
        self.stop_flag.store(true, Ordering::SeqCst);
        let streamed = match self.reader.take() {
            Some(handle) => handle
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("trace_pipe reader panicked"))),
            None => Ok(()),
        };
        if let Some(id) = self.cleanup.take() {
            cleanup::run(&id);
        }
        if self.dir.exists() {
            return Err(RigError::Unsupported(format!(
                "tracefs instance {} could not be removed",
                self.dir.display()
            )));
        }
        streamed.map_err(|e| RigError::io("stream trace_pipe", e))?;
        let text = std::fs::read_to_string(&self.text_path)
            .map_err(|e| RigError::io(format!("read {}", self.text_path.display()), e))?;
        Ok((text, lost))
    }
}

impl Drop for Streamed {
    fn drop(&mut self) {
        if let Some(id) = self.cleanup.take() {
            cleanup::run(&id);
        }
        if let Some(handle) = self.reader.take() {
            let _ = handle.join();
        }
    }
}

/// A running capture of one device's block requests (and, when asked, of the scheduler's
/// accounting of the processes it follows). [`TracefsSession::stop`] returns the trace;
/// dropping the session without stopping removes everything it set up.
#[derive(Debug)]
pub struct TracefsSession {
    dev: (u32, u32),
    /// The device's queue when tracing started: the trace's [`Trace::queue`].
    queue: DeviceQueue,
    marker: Marker,
    keep_text: bool,
    bio_queue: bool,
    origin_mono_ns: u64,
    // Field order is drop order: the instances go before the private tracefs mount.
    block: Streamed,
    sched: Option<Streamed>,
    followed: Mutex<Vec<u32>>,
    progress: ProgressStyle,
    _tracefs_mount: Option<Mount>,
}

/// `CLOCK_MONOTONIC` now, ns.
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Mount points of tracefs, from `/proc/self/mountinfo`.
pub(crate) fn tracefs_mounts() -> Result<Vec<PathBuf>> {
    Ok(crate::mount::mounts()?
        .into_iter()
        .filter_map(|(point, fstype)| (fstype == "tracefs").then_some(point))
        .collect())
}

/// The tracefs root to use and, if the rig had to mount it, the guard of that mount.
fn tracefs_root() -> Result<(PathBuf, Option<Mount>)> {
    // Only the standard places: a tracefs mounted elsewhere may be someone's transient mount.
    let mounts = tracefs_mounts()?;
    for standard in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
        if mounts.iter().any(|m| m == Path::new(standard)) {
            return Ok((PathBuf::from(standard), None));
        }
    }
    let mount = Mount::new(Path::new("nodev"), None, "tracefs", false, "")?;
    Ok((mount.target().to_path_buf(), Some(mount)))
}

fn remove_instance(
    instance: &Path,
    stop_flag: &AtomicBool,
    reader_done: &AtomicBool,
    marker: Option<&Marker>,
) {
    let _ = std::fs::write(instance.join("tracing_on"), "0");
    stop_flag.store(true, Ordering::SeqCst);
    // An open file of the instance keeps it busy: close the marker, let the reader finish.
    if let Some(marker) = marker {
        marker.file.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    while !reader_done.load(Ordering::SeqCst) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    for _ in 0..100 {
        match std::fs::remove_dir(instance) {
            Ok(()) => return,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    // Not eprintln!: this runs in a signal's cleanup, which must not panic on a closed stderr.
    let _ = writeln!(
        std::io::stderr(),
        "layoutlab-rig: could not remove tracefs instance {}; remove it with rmdir",
        instance.display()
    );
}

fn stream(
    pipe_path: PathBuf,
    out_path: PathBuf,
    stop_flag: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
) -> std::io::Result<()> {
    let result = (|| {
        let mut pipe = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&pipe_path)?;
        let mut out =
            std::io::BufWriter::new(std::fs::OpenOptions::new().append(true).open(&out_path)?);
        let mut buf = vec![0u8; 1 << 16];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) => std::thread::sleep(Duration::from_millis(5)),
                Ok(n) => out.write_all(&buf[..n])?,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    // Empty: finished once tracing has been stopped, else wait for more.
                    if stop_flag.load(Ordering::SeqCst) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        out.flush()
    })();
    done.store(true, Ordering::SeqCst);
    result
}

impl TracefsSession {
    /// Starts capturing the block requests of device `dev` = (major, minor). Root only.
    pub fn start(dev: (u32, u32), options: &TraceOptions) -> Result<TracefsSession> {
        require_root("tracing block requests with tracefs")?;
        if dev.0 >= 1 << 12 || dev.1 >= 1 << 20 {
            return Err(RigError::InvalidArgument(format!(
                "device {}:{} out of range",
                dev.0, dev.1
            )));
        }
        // The queue the requests come through shapes them (docs/rig.md): recorded with them.
        let queue = crate::loopdev::queue_of(dev)?;
        let (root, tracefs_mount) = tracefs_root()?;
        if !root.join("instances").is_dir() || !root.join("events/block/block_rq_issue").is_dir() {
            return Err(RigError::Unsupported(format!(
                "{} has no instances/ or no block events: the kernel lacks CONFIG_BLK_DEV_IO_TRACE/tracing",
                root.display()
            )));
        }
        static INSTANCE_N: AtomicU64 = AtomicU64::new(0);
        let n = INSTANCE_N.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let marker = Marker {
            file: Arc::new(Mutex::new(None)),
        };
        let temp_text =
            |what: &str| std::env::temp_dir().join(format!("layoutlab-{what}-{pid}-{n}.txt"));
        let mut block = Streamed::create(
            &root,
            &format!("layoutlab-{pid}-{n}"),
            options
                .text_path
                .clone()
                .unwrap_or_else(|| temp_text("trace")),
            options.text_path.is_some(),
            options.buffer_size_kb,
            Some(marker.clone()),
        )?;
        let filter = format!("dev == {}", (dev.0 << 20) | dev.1);
        let mut events = vec!["block_rq_issue", "block_rq_complete"];
        if options.bio_queue {
            events.extend([
                "block_bio_queue",
                "block_split",
                "block_bio_remap",
                "block_bio_backmerge",
                "block_bio_frontmerge",
            ]);
        }
        for event in events {
            let dir = block.dir.join("events/block").join(event);
            write_attr(&dir.join("filter"), &filter)?;
            write_attr(&dir.join("enable"), "1")?;
        }
        let marker_file = std::fs::OpenOptions::new()
            .write(true)
            .open(block.dir.join("trace_marker"))
            .map_err(|e| RigError::io("open trace_marker", e))?;
        *marker.file.lock().unwrap_or_else(|p| p.into_inner()) = Some(marker_file);

        // The scheduler's accounting lives in an instance of its own: `set_event_pid` filters
        // every event of an instance by the task that runs it, and block completions run in
        // interrupt or worker context, not in the followed process.
        let sched = if options.cpu_accounting {
            let mut sched = Streamed::create(
                &root,
                &format!("layoutlab-sched-{pid}-{n}"),
                temp_text("sched"),
                false,
                DEFAULT_BUFFER_SIZE_KB,
                None,
            )?;
            // Children and threads of a followed task are followed from their fork.
            write_attr(&sched.dir.join("options/event-fork"), "1")?;
            // The time on a CPU comes from `sched_stat_runtime` (each event: how long the task
            // ran up to it): this kernel does not record every switch to a followed task from
            // the idle task, so switches alone lose time (read_cpu says how much).
            for event in ["sched_switch", "sched_process_fork", "sched_stat_runtime"] {
                write_attr(
                    &sched.dir.join("events/sched").join(event).join("enable"),
                    "1",
                )?;
            }
            // Tracing stays off until the first process is followed: with an empty pid
            // list the instance would record every task of the machine.
            if options.drain {
                sched.start_reader()?;
            }
            Some(sched)
        } else {
            None
        };
        if options.drain {
            block.start_reader()?;
        }
        let session = TracefsSession {
            queue,
            dev,
            marker,
            keep_text: options.text_path.is_some(),
            bio_queue: options.bio_queue,
            origin_mono_ns: monotonic_ns(),
            block,
            sched,
            followed: Mutex::new(Vec::new()),
            progress: ProgressStyle::default(),
            _tracefs_mount: tracefs_mount,
        };
        write_attr(&session.block.dir.join("tracing_on"), "1")?;
        Ok(session)
    }

    /// The device traced.
    pub fn dev(&self) -> (u32, u32) {
        self.dev
    }

    /// The tracefs instance directory of the block events.
    pub fn instance(&self) -> &Path {
        &self.block.dir
    }

    /// How the program writing to the marker descriptor ([`TracefsSession::marker_fd`])
    /// announces its phases (default: e2fsck's progress lines). With another style the
    /// program's whole output is expected in the marker; it comes back in
    /// [`Capture::output`].
    pub fn set_progress_style(&mut self, style: ProgressStyle) {
        self.progress = style;
    }

    /// Writes a tag marker; requests issued after it carry `tag`.
    pub fn mark(&self, tag: &str) -> Result<()> {
        self.marker.mark(tag)
    }

    /// A handle to write markers from another thread.
    pub fn marker(&self) -> Marker {
        self.marker.clone()
    }

    /// A new write-only descriptor of the instance's `trace_marker` (close-on-exec), to hand to
    /// a child process: whatever the child writes to it lands in the trace at the moment of
    /// the write, in order with the requests it issues next (no reader thread in between).
    /// The child must have exited before the session ends (the open file keeps the instance).
    pub fn marker_fd(&self) -> Result<std::os::fd::OwnedFd> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(self.block.dir.join("trace_marker"))
            .map_err(|e| RigError::io("open trace_marker", e))?;
        Ok(file.into())
    }

    /// What a child needs to follow itself from between fork and exec; `None` without CPU
    /// accounting. After spawning, tell the session the child's pid with
    /// [`TracefsSession::followed`].
    pub fn cpu_follower(&self) -> Option<CpuFollower> {
        let sched = self.sched.as_ref()?;
        let c = |p: PathBuf| std::ffi::CString::new(p.into_os_string().into_encoded_bytes()).ok();
        Some(CpuFollower {
            pid_file: c(sched.dir.join("set_event_pid"))?,
            tracing_on: c(sched.dir.join("tracing_on"))?,
            marker: c(sched.dir.join("trace_marker"))?,
        })
    }

    /// Records that process `pid` follows itself (through [`CpuFollower::follow_self`]).
    pub fn followed(&self, pid: u32) {
        self.followed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(pid);
    }

    /// Follows running process `pid` (and what it forks from now on) in the CPU accounting.
    /// A no-op without [`TraceOptions::cpu_accounting`].
    pub fn follow(&self, pid: u32) -> Result<()> {
        let Some(sched) = &self.sched else {
            return Ok(());
        };
        // Appends to the list (no O_TRUNC), so earlier followed processes stay.
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(sched.dir.join("set_event_pid"))
            .map_err(|e| RigError::io("open set_event_pid", e))?;
        f.write_all(pid.to_string().as_bytes())
            .map_err(|e| RigError::io(format!("follow process {pid}"), e))?;
        write_attr(&sched.dir.join("tracing_on"), "1")?;
        write_attr(
            &sched.dir.join("trace_marker"),
            layoutlab_trace::tracefs::FOLLOW_MARK,
        )?;
        self.followed(pid);
        Ok(())
    }

    /// Events lost so far (ring overruns plus dropped events over all CPUs) of the block
    /// instance.
    pub fn lost_events(&self) -> Result<u64> {
        self.block.lost_events()
    }

    /// Stops tracing, removes the instances (and the tracefs mount if the rig made it) and
    /// returns the captured requests, stamped with the followed processes' CPU time.
    pub fn stop(mut self) -> Result<Capture> {
        let sched = match self.sched.as_mut() {
            Some(s) => Some(s.finish()?),
            None => None,
        };
        let (raw, lost_events) = self.block.finish()?;
        let rewritten = tracefs_text::rewrite(&raw, self.dev, self.progress);
        drop(raw);
        let name = self.block.text_path.display().to_string();
        let opts = ReadOptions {
            dev: Some(DevId {
                major: self.dev.0,
                minor: self.dev.1,
            }),
            devno: None,
        };
        let mut trace = layoutlab_trace::tracefs::read(&rewritten.text, &name, &opts)?;
        // A queue changed while tracing would leave requests of two queues under one record.
        let queue_now = crate::loopdev::queue_of(self.dev)?;
        if queue_now != self.queue {
            return Err(RigError::Unsupported(format!(
                "the queue of device {}:{} changed during the capture: {} at the start, {} at the end",
                self.dev.0,
                self.dev.1,
                self.queue.to_words(),
                queue_now.to_words()
            )));
        }
        trace.queue = Some(queue_now);
        let (bios, bio_events) = if self.bio_queue {
            (
                Some(read_bios(&rewritten.text, self.dev, &name)?),
                Some(BioEvents::count(&rewritten.text, self.dev)),
            )
        } else {
            (None, None)
        };
        if self.keep_text {
            // Keep what was read, so that reading the kept file again gives the same tags.
            std::fs::write(&self.block.text_path, &rewritten.text).map_err(|e| {
                RigError::io(format!("write {}", self.block.text_path.display()), e)
            })?;
        }
        // The trace crate puts time 0 at the first request; without requests, at the start.
        let origin_mono_ns = rewritten.first_issue_abs_ns.unwrap_or(self.origin_mono_ns);
        let roots = std::mem::take(&mut *self.followed.lock().unwrap_or_else(|p| p.into_inner()));
        let cpu = match sched {
            Some((text, lost)) if !roots.is_empty() => {
                let timeline =
                    layoutlab_trace::tracefs::read_cpu(&text, "scheduler events", &roots)?;
                let before_trace_ns = timeline.used_ns(origin_mono_ns);
                let until_end = timeline.used_ns(origin_mono_ns + trace.duration_ns());
                let after_trace_ns = timeline.total_ns() - until_end;
                if lost == 0 {
                    layoutlab_trace::cpu::stamp(&mut trace, &timeline, origin_mono_ns);
                }
                Some(CpuAccounting {
                    roots,
                    total_ns: timeline.total_ns(),
                    before_trace_ns,
                    after_trace_ns,
                    lost_events: lost,
                })
            }
            _ => None,
        };
        let marks = rewritten
            .marks_abs_ns
            .into_iter()
            .map(|(ns, tag)| (ns as i64 - origin_mono_ns as i64, tag))
            .collect();
        let incomplete_requests = trace
            .requests
            .iter()
            .filter(|r| r.complete_ns.is_none())
            .count();
        Ok(Capture {
            trace,
            origin_mono_ns,
            marks,
            lost_events: lost_events + cpu.as_ref().map_or(0, |c| c.lost_events),
            marker_events: rewritten.marker_events,
            incomplete_requests,
            text_path: self.keep_text.then(|| self.block.text_path.clone()),
            cpu,
            output: rewritten.output,
            bios,
            bio_events,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // As kernel 6.18 printed them on a loop device (7,0) with max_sectors_kb 1280: an
    // O_DIRECT 1 MiB write split into two requests, then buffered 4 KiB bios merged into one.
    const BIO_SAMPLE: &str = "\
              sh-10 [000] .....   652.980000: tracing_mark_write: layoutlab tag=direct
              dd-11 [000] .....   652.988733: block_bio_queue: 7,0 WS 0 + 2048 [dd]
              dd-11 [000] .....   652.988736: block_split: 7,0 WS 0 / 1160 [dd]
              dd-11 [000] .....   652.988793: block_getrq: 7,0 WS 0 + 1160 [dd]
              dd-11 [000] .....   652.988796: block_rq_issue: 7,0 WS 593920 () 0 + 1160 be,0,4 [dd]
              dd-11 [000] .....   652.989196: block_rq_issue: 7,0 WS 454656 () 1160 + 888 be,0,4 [dd]
              dd-11 [000] .....   652.989200: block_bio_queue: 7,1 WS 0 + 8 [dd]
              sh-10 [000] .....   653.020000: tracing_mark_write: layoutlab tag=buffered
              dd-11 [000] .....   653.025506: block_bio_queue: 7,0 WS 16384 + 8 [dd]
              dd-11 [000] .....   653.025599: block_bio_queue: 7,0 WS 16392 + 8 [dd]
              dd-11 [000] .....   653.025601: block_bio_backmerge: 7,0 WS 16392 + 8 [dd]
              dd-11 [000] .....   653.025602: block_bio_queue: 7,0 WS 16400 + 8 [dd]
              dd-11 [000] .....   653.025602: block_bio_frontmerge: 7,0 WS 16400 + 8 [dd]
              dd-11 [000] .....   653.025700: block_rq_issue: 7,0 WS 12288 () 16384 + 24 be,0,4 [dd]
";

    #[test]
    fn a_sized_buffer_holds_every_event_on_one_cpu_and_the_cap_is_refused() {
        let expected = ExpectedEvents {
            markers: 1_000_000,
            requests: 100_000,
        };
        // 64 MB of markers, 14.4 MB of requests, two pages: on each CPU.
        assert_eq!(expected.ring_bytes(), 78_408_192);
        let sized = TraceOptions::default().sized_for_cpus(expected, 2).unwrap();
        assert_eq!(sized.buffer_size_kb, 76_571);
        assert!(sized.drain && sized.cpu_accounting);
        // Never below what was asked for: a small check keeps the default buffer.
        let small = ExpectedEvents {
            markers: 100,
            requests: 100,
        };
        let kept = TraceOptions::default().sized_for_cpus(small, 2).unwrap();
        assert_eq!(kept.buffer_size_kb, DEFAULT_BUFFER_SIZE_KB);
        // Exactly at the cap is allowed; one event more on 2 CPUs is refused, clearly.
        let per_cpu_cap = RING_BUFFER_CAP_BYTES / 2;
        let at_cap = ExpectedEvents {
            markers: (per_cpu_cap - 2 * 4096) / MARKER_EVENT_BYTES,
            requests: 0,
        };
        assert!(TraceOptions::default().sized_for_cpus(at_cap, 2).is_ok());
        let over = ExpectedEvents {
            markers: at_cap.markers + 1,
            ..at_cap
        };
        let e = TraceOptions::default()
            .sized_for_cpus(over, 2)
            .unwrap_err()
            .to_string();
        assert!(e.contains("more than the cap of 1024 MiB"), "{e}");
        // The same events on one CPU fit.
        assert!(TraceOptions::default().sized_for_cpus(over, 1).is_ok());
    }

    #[test]
    fn bios_are_read_apart_from_requests_and_counted() {
        let bios = read_bios(BIO_SAMPLE, (7, 0), "sample").unwrap();
        let got: Vec<(u64, u32, &str)> = bios
            .requests
            .iter()
            .map(|r| (r.sector, r.sectors, bios.tags[r.tag as usize].as_str()))
            .collect();
        // The split bio once, whole; 7,1's bio left out; tags from the markers.
        assert_eq!(
            got,
            vec![
                (0, 2048, "direct"),
                (16384, 8, "buffered"),
                (16392, 8, "buffered"),
                (16400, 8, "buffered")
            ]
        );
        assert_eq!(
            BioEvents::count(BIO_SAMPLE, (7, 0)),
            BioEvents {
                queued: 4,
                split: 1,
                remapped: 0,
                merged: 2
            }
        );
        // The request reader still sees requests only.
        let opts = ReadOptions {
            dev: Some(DevId { major: 7, minor: 0 }),
            devno: None,
        };
        let rq = layoutlab_trace::tracefs::read(BIO_SAMPLE, "sample", &opts).unwrap();
        let sizes: Vec<u32> = rq.requests.iter().map(|r| r.sectors).collect();
        assert_eq!(sizes, vec![1160, 888, 24]);
    }
}
