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
//! Events: `block/block_rq_issue` and `block/block_rq_complete` (and optionally
//! `block/block_bio_queue`), filtered in the kernel by `dev == (major << 20) | minor`. The clock
//! is `mono`, so times compare with `CLOCK_MONOTONIC`. A thread streams `trace_pipe` into a
//! text file while the run goes on, so a long run is limited by disk space, not by the ring
//! buffer; events the ring still overwrote are counted from `per_cpu/cpu*/stats`.

use crate::cleanup::{self, CleanupId};
use crate::error::{Result, RigError};
use crate::mount::Mount;
use crate::system::{read_attr, require_root, write_attr, TempFile};
use crate::tracefs_text::{self, MARK_PREFIX};
use layoutlab_trace::format::{DevId, ReadOptions};
use layoutlab_trace::Trace;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How to capture.
#[derive(Clone, Debug)]
pub struct TraceOptions {
    /// Ring buffer per CPU, KiB. The streaming thread empties it every few milliseconds, so
    /// it only needs to absorb bursts.
    pub buffer_size_kb: u32,
    /// Also record `block_bio_queue` (bios before merging) in the text.
    pub bio_queue: bool,
    /// Where the captured text goes; `None` = a temp file removed after parsing.
    pub text_path: Option<PathBuf>,
}

impl Default for TraceOptions {
    fn default() -> Self {
        TraceOptions {
            buffer_size_kb: 16 * 1024,
            bio_queue: false,
            text_path: None,
        }
    }
}

/// What a capture produced.
#[derive(Debug)]
pub struct Capture {
    /// The requests of the device, tagged by the markers written during the capture, as the
    /// trace crate's tracefs reader reads them; times are ns since
    /// [`Capture::origin_mono_ns`] (the first request's issue, the reader's origin).
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
    /// Requests issued but not completed inside the capture.
    pub incomplete_requests: usize,
    /// The captured text, if [`TraceOptions::text_path`] asked to keep it.
    pub text_path: Option<PathBuf>,
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

/// A running capture of one device's block requests. [`TracefsSession::stop`] returns the
/// trace; dropping the session without stopping removes everything it set up.
#[derive(Debug)]
pub struct TracefsSession {
    dev: (u32, u32),
    instance: PathBuf,
    marker: Marker,
    stop_flag: Arc<AtomicBool>,
    reader: Option<JoinHandle<std::io::Result<()>>>,
    text_path: PathBuf,
    keep_text: bool,
    origin_mono_ns: u64,
    instance_cleanup: Option<CleanupId>,
    // Field order is drop order: the text file goes before the private tracefs mount.
    _text_file: Option<TempFile>,
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
    marker: &Marker,
) {
    let _ = std::fs::write(instance.join("tracing_on"), "0");
    stop_flag.store(true, Ordering::SeqCst);
    // An open file of the instance keeps it busy: close the marker, let the reader finish.
    marker.file.lock().unwrap_or_else(|p| p.into_inner()).take();
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
    eprintln!(
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
        let (root, tracefs_mount) = tracefs_root()?;
        if !root.join("instances").is_dir() || !root.join("events/block/block_rq_issue").is_dir() {
            return Err(RigError::Unsupported(format!(
                "{} has no instances/ or no block events: the kernel lacks CONFIG_BLK_DEV_IO_TRACE/tracing",
                root.display()
            )));
        }
        let text_path = options.text_path.clone().unwrap_or_else(|| {
            static N: AtomicU64 = AtomicU64::new(0);
            std::env::temp_dir().join(format!(
                "layoutlab-trace-{}-{}.txt",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ))
        });
        let keep_text = options.text_path.is_some();
        let text_file = cleanup::creating(|| {
            File::create(&text_path)
                .map_err(|e| RigError::io(format!("create {}", text_path.display()), e))?;
            Ok::<_, RigError>((!keep_text).then(|| TempFile::adopt(&text_path)))
        })?;

        static INSTANCE_N: AtomicU64 = AtomicU64::new(0);
        let instance = root.join("instances").join(format!(
            "layoutlab-{}-{}",
            std::process::id(),
            INSTANCE_N.fetch_add(1, Ordering::Relaxed)
        ));
        let stop_flag = Arc::new(AtomicBool::new(false));
        let reader_done = Arc::new(AtomicBool::new(true));
        let marker = Marker {
            file: Arc::new(Mutex::new(None)),
        };
        // mkdir and register as one step: a signal between them would leave the instance.
        let instance_cleanup = cleanup::creating(|| {
            std::fs::create_dir(&instance).map_err(|e| {
                RigError::io(format!("create tracefs instance {}", instance.display()), e)
            })?;
            let (instance, stop_flag, reader_done, marker) = (
                instance.clone(),
                stop_flag.clone(),
                reader_done.clone(),
                marker.clone(),
            );
            Ok::<_, RigError>(cleanup::register(
                format!("tracefs instance {}", instance.display()),
                move || remove_instance(&instance, &stop_flag, &reader_done, &marker),
            ))
        })?;
        let mut session = TracefsSession {
            dev,
            instance: instance.clone(),
            marker: marker.clone(),
            stop_flag: stop_flag.clone(),
            reader: None,
            text_path: text_path.clone(),
            keep_text,
            origin_mono_ns: 0,
            instance_cleanup: Some(instance_cleanup),
            _text_file: text_file,
            _tracefs_mount: tracefs_mount,
        };
        // From here on an error drops `session`, which removes the instance.
        write_attr(&instance.join("tracing_on"), "0")?;
        write_attr(
            &instance.join("buffer_size_kb"),
            &options.buffer_size_kb.to_string(),
        )?;
        write_attr(&instance.join("trace_clock"), "mono")?;
        let clock = read_attr(&instance.join("trace_clock"))?;
        if !clock.contains("[mono]") {
            return Err(RigError::Unsupported(format!(
                "trace_clock mono not accepted: {clock}"
            )));
        }
        let filter = format!("dev == {}", (dev.0 << 20) | dev.1);
        let mut events = vec!["block_rq_issue", "block_rq_complete"];
        if options.bio_queue {
            events.push("block_bio_queue");
        }
        for event in events {
            let dir = instance.join("events/block").join(event);
            write_attr(&dir.join("filter"), &filter)?;
            write_attr(&dir.join("enable"), "1")?;
        }
        let marker_file = std::fs::OpenOptions::new()
            .write(true)
            .open(instance.join("trace_marker"))
            .map_err(|e| RigError::io("open trace_marker", e))?;
        *marker.file.lock().unwrap_or_else(|p| p.into_inner()) = Some(marker_file);
        reader_done.store(false, Ordering::SeqCst);
        let reader = {
            let (pipe, out, stop, done) = (
                instance.join("trace_pipe"),
                text_path,
                stop_flag,
                reader_done.clone(),
            );
            std::thread::Builder::new()
                .name("rig-trace-pipe".into())
                .spawn(move || stream(pipe, out, stop, done))
        };
        match reader {
            Ok(handle) => session.reader = Some(handle),
            Err(e) => {
                reader_done.store(true, Ordering::SeqCst);
                return Err(RigError::io("start the trace_pipe reader thread", e));
            }
        }
        session.origin_mono_ns = monotonic_ns();
        write_attr(&instance.join("tracing_on"), "1")?;
        Ok(session)
    }

    /// The device traced.
    pub fn dev(&self) -> (u32, u32) {
        self.dev
    }

    /// The tracefs instance directory in use.
    pub fn instance(&self) -> &Path {
        &self.instance
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
            .open(self.instance.join("trace_marker"))
            .map_err(|e| RigError::io("open trace_marker", e))?;
        Ok(file.into())
    }

    /// Events lost so far (ring overruns plus dropped events over all CPUs).
    pub fn lost_events(&self) -> Result<u64> {
        let per_cpu = self.instance.join("per_cpu");
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

    /// Stops tracing, removes the instance (and the tracefs mount if the rig made it) and
    /// returns the captured requests.
    pub fn stop(mut self) -> Result<Capture> {
        write_attr(&self.instance.join("tracing_on"), "0")?;
        self.stop_flag.store(true, Ordering::SeqCst);
        let streamed = match self.reader.take() {
            Some(handle) => handle
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("trace_pipe reader panicked"))),
            None => Ok(()),
        };
        let lost_events = self.lost_events()?;
        if let Some(id) = self.instance_cleanup.take() {
            cleanup::run(&id);
        }
        if self.instance.exists() {
            return Err(RigError::Unsupported(format!(
                "tracefs instance {} could not be removed",
                self.instance.display()
            )));
        }
        streamed.map_err(|e| RigError::io("stream trace_pipe", e))?;
        let raw = std::fs::read_to_string(&self.text_path)
            .map_err(|e| RigError::io(format!("read {}", self.text_path.display()), e))?;
        let rewritten = tracefs_text::rewrite(&raw, self.dev);
        drop(raw);
        let name = self.text_path.display().to_string();
        let opts = ReadOptions {
            dev: Some(DevId {
                major: self.dev.0,
                minor: self.dev.1,
            }),
            devno: None,
        };
        let trace = layoutlab_trace::tracefs::read(&rewritten.text, &name, &opts)?;
        if self.keep_text {
            // Keep what was read, so that reading the kept file again gives the same tags.
            std::fs::write(&self.text_path, &rewritten.text)
                .map_err(|e| RigError::io(format!("write {}", self.text_path.display()), e))?;
        }
        // The trace crate puts time 0 at the first request; without requests, at the start.
        let origin_mono_ns = rewritten.first_issue_abs_ns.unwrap_or(self.origin_mono_ns);
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
            lost_events,
            incomplete_requests,
            text_path: self.keep_text.then(|| self.text_path.clone()),
        })
    }
}

impl Drop for TracefsSession {
    fn drop(&mut self) {
        if let Some(id) = self.instance_cleanup.take() {
            cleanup::run(&id);
        }
        if let Some(handle) = self.reader.take() {
            let _ = handle.join();
        }
    }
}
