//! The real `e2fsck -fnv -tt -C 3` run under tracing, each request tagged with its pass.
//!
//! e2fsck writes progress lines `PASS CUR MAX DEVICE` to the file descriptor given to `-C` with
//! one write(2) each (e2fsck/unix.c `e2fsck_update_progress`), starting every pass with
//! `CUR = 0` before the pass reads anything. That descriptor is the tracing instance's own
//! `trace_marker`, so each line becomes a marker event at the instant e2fsck writes it, in
//! order with the requests it issues next: the first line of a new pass tags what follows
//! `passN`. A first version read the lines from a pipe in a thread and wrote the marker
//! itself; on this shared 2-core machine the thread woke 4–5 ms late and the first megabytes
//! of pass 1 (and all of pass 2's directory reads) were tagged with the previous pass.
//! Requests before pass 1 (superblock, group descriptors, journal) carry `setup`.

use crate::child::{spawn_traced, TracedChild};
use crate::cleanup;
use crate::cpucg::CpuThrottle;
use crate::error::{Result, RigError};
use crate::fsck_times::{parse_fsck_times, FsckTimes};
use crate::system::require_root;
use crate::tracefs::{Capture, TraceOptions, TracefsSession};
use layoutlab_image::{parse_fsck_vitals, FsckVitals};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// How to run e2fsck.
#[derive(Clone, Debug)]
pub struct FsckOptions {
    /// The e2fsck program (default `e2fsck` on `PATH`).
    pub e2fsck: PathBuf,
    /// Extra arguments, after `-fnv -tt -C 3` and before the device.
    pub extra_args: Vec<String>,
    /// The capture.
    pub trace: TraceOptions,
    /// Make e2fsck see a single CPU. Since 1.46, libext2fs reads the bitmaps with one thread
    /// per CPU it counts (`sysconf(_SC_NPROCESSORS_CONF)`, lib/ext2fs/rw_bitmaps.c), so on a
    /// two-CPU machine two threads read two halves of the disk at once and the requests
    /// interleave across the disk. e2fsck of 2007 read them in one sweep. With this set,
    /// e2fsck runs in a private mount namespace whose /sys/devices/system/cpu lists one CPU.
    pub single_cpu: bool,
    /// Run e2fsck under `SCHED_FIFO` at the lowest real-time priority (1), for a closed-loop
    /// capture on an emulated device: a period machine ran the check alone, and here e2fsck
    /// with the ordinary scheduler waits for a CPU between its requests behind the other work
    /// on the machine, which the emulated device then sees as think time (`device emulate`'s
    /// daemon runs above it, at 2 and 3). The kernel's real-time throttling
    /// (`sched_rt_runtime_us`, 95%) still leaves the other work a share of its CPU.
    pub real_time: bool,
    /// Hold e2fsck (and what it forks) to this share of one CPU (0 < share < 1), as a slower
    /// period CPU would run it ([`CpuThrottle`]): a closed-loop capture with a CPU factor F
    /// above its time scale K throttles by K/F. `None`: this machine's speed.
    pub cpu_share: Option<f64>,
    /// On an emulated device: the emulator's [`crate::CpuPace`], which e2fsck names itself in
    /// between fork and exec ([`crate::CpuPace::follow_self`]), so that the model's clock
    /// advances between its requests, from the first, by its CPU time, not the wall's (which
    /// carries the machine's load).
    pub pace: Option<crate::CpuPace>,
}

impl Default for FsckOptions {
    fn default() -> Self {
        FsckOptions {
            e2fsck: PathBuf::from("e2fsck"),
            extra_args: Vec::new(),
            trace: TraceOptions::default(),
            single_cpu: false,
            real_time: false,
            cpu_share: None,
            pace: None,
        }
    }
}

impl FsckOptions {
    /// Options that make today's e2fsck read like e2fsck of 2007 (1.40): no metadata prefetch
    /// (`-E readahead_kb=0`). Since 1.43 e2fsck prefetches inode tables with
    /// `posix_fadvise(WILLNEED)` before it announces pass 1, and the bitmaps before pass 4,
    /// so with prefetch those reads are tagged `setup` and `pass3`, and they overlap the CPU
    /// work the 2007 program did between its own reads.
    pub fn without_prefetch() -> FsckOptions {
        FsckOptions {
            extra_args: vec!["-E".into(), "readahead_kb=0".into()],
            ..FsckOptions::default()
        }
    }
}

/// The moment e2fsck reported a new pass.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgressChange {
    /// The pass number e2fsck reported.
    pub pass: u32,
    /// When e2fsck wrote it, ns since the trace's origin (its first request).
    pub at_ns: i64,
}

/// One traced e2fsck run.
#[derive(Debug)]
pub struct FsckRun {
    /// e2fsck's exit status: with `-n`, 0 = clean, 4 = errors left uncorrected (1 = fixed
    /// should not happen with `-n`).
    pub exit_code: i32,
    /// The `-tt` resource tracking, per pass and in total.
    pub times: FsckTimes,
    /// The requests, tagged `setup`, `pass1` … `pass5`.
    pub capture: Capture,
    /// The pass changes in order.
    pub progress: Vec<ProgressChange>,
    /// The `-v` summary: non-contiguous files and directories, extent depth histogram,
    /// counts by file type (`None` if e2fsck printed none).
    pub vitals: Option<FsckVitals>,
    /// e2fsck's standard output (the `-tt` text and its summary).
    pub stdout: String,
    /// e2fsck's standard error.
    pub stderr: String,
    /// How many times the page cache was dropped while e2fsck ran (by a process that does not
    /// take the rig lock: every layoutlab drop waits for the capture). Not 0: e2fsck may have
    /// read blocks again that it had read before, and the stream is a disturbed sample.
    pub cache_drops: u64,
    /// Seconds spent waiting for the rig lock before e2fsck started (another run creating
    /// kernel file systems or dropping the page cache): part of the caller's wall time, not
    /// of the check.
    pub lock_wait_seconds: f64,
}

impl FsckRun {
    /// Whether e2fsck found the file system clean (exit 0).
    pub fn clean(&self) -> bool {
        self.exit_code == 0
    }
}

/// In the child, between fork and exec: a private mount namespace in which
/// /sys/devices/system/cpu is a tmpfs that lists CPU 0 only. Only raw system calls on static
/// strings (no allocation: the parent may have other threads). The namespace ends with the child.
fn one_cpu_view() -> std::io::Result<()> {
    fn check(rc: libc::c_int) -> std::io::Result<()> {
        if rc < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
    unsafe {
        check(libc::unshare(libc::CLONE_NEWNS))?;
        // Keep our mounts out of the parent's namespace.
        check(libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ))?;
        check(libc::mount(
            c"layoutlab-cpu".as_ptr(),
            c"/sys/devices/system/cpu".as_ptr(),
            c"tmpfs".as_ptr(),
            0,
            c"size=64k".as_ptr().cast(),
        ))?;
        check(libc::mkdir(c"/sys/devices/system/cpu/cpu0".as_ptr(), 0o755))?;
        for file in [
            c"/sys/devices/system/cpu/possible",
            c"/sys/devices/system/cpu/present",
            c"/sys/devices/system/cpu/online",
        ] {
            let fd = libc::open(
                file.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
                0o444,
            );
            check(fd)?;
            let n = libc::write(fd, c"0\n".as_ptr().cast(), 2);
            libc::close(fd);
            if n != 2 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// Runs the real `e2fsck -fnv -tt -C 3 [extra] DEVICE` on `device_path` while capturing the
/// block requests of `dev` = (major, minor), the same device. Root only. An exit status of 8 or
/// more (operational error, usage, cancelled, library error) is an error with e2fsck's output.
pub fn run_e2fsck_traced(
    device_path: &Path,
    dev: (u32, u32),
    opts: &FsckOptions,
) -> Result<FsckRun> {
    require_root("tracing e2fsck's block requests")?;
    // Held until e2fsck has exited: no layoutlab run drops the page cache under it (a drop in
    // pass 2 made e2fsck read its directory blocks again, in new read-ahead windows: 17,702
    // requests instead of 15,061 for ext4-fsck-allocator's ext4-2008; docs/fidelity.md).
    let waited = std::time::Instant::now();
    let _no_cache_drops = crate::RigLock::acquire_shared()?;
    let lock_wait_seconds = waited.elapsed().as_secs_f64();
    let drops_before = crate::page_cache_drops()?;
    let session = TracefsSession::start(dev, &opts.trace)?;
    session.mark("setup")?;

    let single_cpu = opts.single_cpu;
    let real_time = opts.real_time;
    // Made before the child, so the child joins it before its first instruction of e2fsck and
    // before it becomes real-time; removed when this function returns.
    let throttle = opts.cpu_share.map(CpuThrottle::create).transpose()?;
    let joiner = throttle.as_ref().map(CpuThrottle::joiner);
    let pace = opts.pace.clone();
    let mut command = Command::new(&opts.e2fsck);
    command
        .args(["-fnv", "-tt", "-C", "3"])
        .args(&opts.extra_args)
        .arg(device_path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let shown = format!(
        "{} -fnv -tt -C 3 {}",
        opts.e2fsck.display(),
        device_path.display()
    );
    // SAFETY: the set-up makes only raw libc calls (fcntl, dup2, sched_setscheduler, the
    // cgroup join's open/write/close, sched_getcpu/setaffinity), `one_cpu_view` and
    // `CpuPace::follow_self`, which are async-signal-safe.
    let TracedChild {
        child,
        kill: kill_child,
    } = unsafe {
        spawn_traced(
            &session,
            command,
            session.marker_fd()?,
            "e2fsck",
            &shown,
            " (e2fsck comes with the Debian package e2fsprogs)",
            move |marker| {
                // dup2 gives fd 3 without close-on-exec; if the marker already is fd 3, clear it.
                if marker == 3 {
                    let flags = libc::fcntl(3, libc::F_GETFD);
                    if flags < 0 || libc::fcntl(3, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                } else if libc::dup2(marker, 3) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if let Some(joiner) = &joiner {
                    joiner.join_self()?;
                }
                if single_cpu {
                    one_cpu_view()?;
                }
                if real_time {
                    let param = libc::sched_param { sched_priority: 1 };
                    if libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                // Named before exec: e2fsck's first request is paced too.
                if let Some(pace) = &pace {
                    pace.follow_self();
                }
                Ok(())
            },
        )?
    };
    let output = child.wait_with_output();
    cleanup::forget(&kill_child);
    // e2fsck has exited: its cgroup can go.
    drop(throttle);
    let output = output.map_err(|e| RigError::io(format!("wait for {shown}"), e))?;
    let capture = session.stop()?;
    let cache_drops = crate::page_cache_drops()? - drops_before;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let exit_code = output.status.code().ok_or_else(|| RigError::Command {
        program: shown.clone(),
        status: output.status.to_string(),
        stderr: stderr.trim().to_string(),
    })?;
    if exit_code >= 8 {
        return Err(RigError::Command {
            program: shown,
            status: format!("exit status {exit_code}"),
            stderr: format!("{}\n{}", stdout.trim(), stderr.trim())
                .trim()
                .to_string(),
        });
    }
    let times = parse_fsck_times(&stdout, "e2fsck -tt output")?;
    let vitals = parse_fsck_vitals(&stdout);
    let progress = capture
        .marks
        .iter()
        .filter_map(|(at_ns, tag)| {
            let pass = tag.strip_prefix("pass")?.parse().ok()?;
            Some(ProgressChange {
                pass,
                at_ns: *at_ns,
            })
        })
        .collect();
    Ok(FsckRun {
        exit_code,
        times,
        capture,
        progress,
        vitals,
        stdout,
        stderr,
        cache_drops,
        lock_wait_seconds,
    })
}

/// Waits (up to 5 s) until process `pid` has exited — gone, or a zombie, whose open files
/// (the loop device) are already closed — without reaping it: its parent's `wait` may be
/// under way on another thread.
pub(crate) fn wait_until_exited(pid: libc::pid_t) {
    let stat = format!("/proc/{pid}/stat");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while std::time::Instant::now() < deadline {
        match std::fs::read_to_string(&stat) {
            // The state follows the parenthesised command name: "pid (comm) S ...".
            Ok(text) => {
                let state = text.rsplit_once(')').map(|(_, rest)| rest.trim_start());
                if state.is_some_and(|r| r.starts_with('Z') || r.starts_with('X')) {
                    return;
                }
            }
            Err(_) => return,
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}
