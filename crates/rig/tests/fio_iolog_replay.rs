//! The fio iolog v3 writer, proven against the kernel: a trace written by
//! `layoutlab_trace::fio::write_v3` (or `write_path(.., Format::FioV3)`) is replayed by the real
//! fio (Debian package) on a loop device the rig attached, the device's block requests are
//! captured with a tracefs session, and the captured stream (op, sector, length, order) must be
//! the trace's stream, request for request.
//!
//! Why the streams can be equal at all: fio replays with `psync`, `iodepth=1` and `direct=1`, so
//! each log line becomes one `pread`/`pwrite` that bypasses the page cache and completes before
//! the next is submitted; with the `none` scheduler and one request in flight the block layer
//! has nothing to merge or reorder. What could still differ, and how the tests rule it out:
//! - splitting: a request larger than `max_sectors_kb`, or built from more user pages than
//!   `max_segments` allows (128 here, with fio's buffer in 4 KiB pages: 512 KiB), reaches the
//!   device in pieces. The synthetic sizes stay at or below 256 KiB and the test checks the
//!   device's limits before it starts; the kernel-captured case caps `max_sectors_kb` at 256.
//! - flushes: a log `sync` is fio's `fsync(2)` on the device, which the kernel turns into one
//!   flush request (a loop device has a write-back cache); fio issues no flush of its own at
//!   close (`fsync_on_close` and `end_fsync` are off), so flushes are compared exactly too.
//! - other openers: nothing else opens the rig's loop device (no udev here to probe it).
//! - trims: fio up to 3.33 drops a log's `trim` lines (see [`fio_replays_trim`]); the
//!   expected stream follows the installed fio's version, and its stderr is asserted exactly.
//!
//! A fourth test replays with the log's timestamps honoured and checks that the gaps the
//! kernel sees are the log's, read as µs.
//!
//! Root only (loop devices, tracefs); skipped with a message when not root or fio is missing.
//! Everything the tests create (sparse image, loop device, tracefs instance, log and fio output
//! files, the fio process) sits behind a guard whose `Drop` undoes it, so a failed assertion
//! leaves nothing behind; `a_failed_assertion_mid_replay_leaves_nothing_behind` checks that.

mod common;

use common::{root_or_skip, scratch, tracefs_state};
use layoutlab_rig::{Capture, LoopDevice, TempFile, TraceOptions, TracefsSession};
use layoutlab_trace::{fio, write_path, Flags, Format, Op, Request, Trace};
use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The sparse backing file of the loop device.
const SPAN_BYTES: u64 = 256 << 20;
/// Largest synthetic request: below `max_sectors_kb` (1280 KiB on a loop device) and below
/// `max_segments` (128) pages of fio's buffer, so neither limit can split it.
const MAX_REQUEST_BYTES: u64 = 256 << 10;
/// fio must finish well within this; a hung fio is killed and the test fails.
const FIO_TIMEOUT: Duration = Duration::from_secs(120);

/// (op, first sector, sectors): what must come back unchanged.
type Key = (Op, u64, u32);

fn stream(trace: &Trace) -> Vec<Key> {
    trace
        .requests
        .iter()
        .map(|r| (r.op, r.sector, r.sectors))
        .collect()
}

/// fio's version, e.g. (3, 33) for `fio-3.33`; None when fio is missing.
fn fio_version() -> Option<(u32, u32)> {
    let out = Command::new("fio").arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let (major, rest) = text.trim().strip_prefix("fio-")?.split_once('.')?;
    let minor: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// Whether this fio replays a log's `trim` lines. Up to 3.33 (Debian 12's package) the
/// iolog reader parses `trim` into fio's trim direction (`DDIR_TRIM` = 2) but then drops the
/// line with `bad ddir: 2` on stderr; fio 3.34 fixed it (commit dd6500e9, "iolog: handle trim
/// commands when reading iologs", fio issue #769).
fn fio_replays_trim(version: (u32, u32)) -> bool {
    version >= (3, 34)
}

/// True when the test can run; otherwise says why it is skipped.
fn can_run(test: &str) -> bool {
    if !root_or_skip(test) {
        return false;
    }
    if fio_version().is_none() {
        eprintln!("SKIP {test}: fio is not installed (Debian package `fio`)");
        return false;
    }
    true
}

/// A child process that is killed and reaped if it is still running when the guard goes
/// (e.g. an assertion failed while fio held the loop device open).
struct ChildGuard {
    child: Option<Child>,
}

impl ChildGuard {
    fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or(0)
    }

    /// Waits for the exit; kills the child after `timeout`.
    fn wait(mut self, timeout: Duration) -> Result<std::process::ExitStatus, String> {
        let mut child = self.child.take().expect("waited once");
        let deadline = Instant::now() + timeout;
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return Ok(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("fio still running after {timeout:?}: killed"));
                }
                Err(e) => return Err(format!("waiting for fio: {e}")),
            }
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Where the replay sends its I/O.
#[derive(Clone, Copy, Debug)]
enum Target {
    /// `--filename=DEV`: the log must name DEV itself (fio opens the files the log names;
    /// `filename` does not redirect them).
    Filename,
    /// `--replay_redirect=DEV`: every line goes to DEV whatever file the log names.
    Redirect,
}

/// The fio command line that replays `log` on `dev` request for request.
fn fio_command(log: &Path, dev: &Path, target: Target, no_stall: bool) -> Command {
    let mut cmd = Command::new("fio");
    cmd.arg("--name=replay")
        .arg(format!("--read_iolog={}", log.display()))
        .args(["--ioengine=psync", "--iodepth=1", "--direct=1"])
        .arg(format!("--replay_no_stall={}", u8::from(no_stall)));
    match target {
        Target::Filename => cmd.arg(format!("--filename={}", dev.display())),
        Target::Redirect => cmd.arg(format!("--replay_redirect={}", dev.display())),
    };
    cmd
}

/// Starts `cmd` with its output in guarded files beside `stem`.
fn spawn_guarded(mut cmd: Command, stem: &Path) -> (ChildGuard, TempFile, TempFile) {
    let out_path = stem.with_extension("fio.out");
    let err_path = stem.with_extension("fio.err");
    let out_file = std::fs::File::create(&out_path).unwrap();
    let out_guard = TempFile::adopt(&out_path);
    let err_file = std::fs::File::create(&err_path).unwrap();
    let err_guard = TempFile::adopt(&err_path);
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::from(out_file))
        .stderr(Stdio::from(err_file))
        .spawn()
        .expect("fio starts");
    (ChildGuard { child: Some(child) }, out_guard, err_guard)
}

/// What one traced replay produced.
struct Replay {
    capture: Capture,
    /// fio's standard error (empty when all went well).
    stderr: String,
    /// The tracefs text of the capture (for the message of a failed comparison).
    text: String,
    fio_wall: Duration,
}

/// Runs fio on `log` while `dev` is traced; panics (after cleanup by the guards) if fio fails
/// or the capture lost events. The caller judges fio's standard error.
fn traced_replay(dev: &LoopDevice, log: &Path, target: Target, no_stall: bool) -> Replay {
    let text_path = log.with_extension("tracefs.txt");
    let _text_guard = TempFile::adopt(&text_path);
    let options = TraceOptions {
        text_path: Some(text_path.clone()),
        ..TraceOptions::default()
    };
    let session = TracefsSession::start(dev.dev(), &options).unwrap();
    let started = Instant::now();
    let (child, out, err) = spawn_guarded(fio_command(log, dev.path(), target, no_stall), log);
    let status = child.wait(FIO_TIMEOUT);
    let fio_wall = started.elapsed();
    let capture = session.stop().unwrap();
    let stderr = std::fs::read_to_string(err.path()).unwrap_or_default();
    let stdout = std::fs::read_to_string(out.path()).unwrap_or_default();
    let status = status.unwrap_or_else(|e| panic!("{e}\n{stderr}"));
    assert!(
        status.success(),
        "fio failed ({status}):\n{stderr}\n{stdout}"
    );
    assert!(
        stdout.contains("err= 0"),
        "fio's job reported an error:\n{stdout}"
    );
    assert_eq!(capture.lost_events, 0, "the ring buffer overran");
    assert_eq!(
        capture.incomplete_requests, 0,
        "requests without completion"
    );
    let text = std::fs::read_to_string(&text_path).unwrap_or_default();
    Replay {
        capture,
        stderr,
        text,
        fio_wall,
    }
}

/// What must come back of `trace` through this fio, and the standard error fio must print:
/// every request, except that a fio that cannot replay trims drops each with `bad ddir: 2`.
fn expected_replay(trace: &Trace, version: (u32, u32)) -> (Vec<Key>, String) {
    let all = stream(trace);
    if fio_replays_trim(version) {
        return (all, String::new());
    }
    let trims = all.iter().filter(|k| k.0 == Op::Discard).count();
    let kept = all.into_iter().filter(|k| k.0 != Op::Discard).collect();
    (kept, "bad ddir: 2\n".repeat(trims))
}

/// Panics, naming the first differing request and the tracefs lines around it, unless the
/// two streams are equal.
fn assert_same_stream(expected: &[Key], got: &[Key], tracefs_text: &str, what: &str) {
    let Some(i) = (0..expected.len().max(got.len())).find(|&i| expected.get(i) != got.get(i))
    else {
        return;
    };
    let window = |s: &[Key]| -> Vec<Key> {
        s[i.saturating_sub(2).min(s.len())..(i + 3).min(s.len())].to_vec()
    };
    let issues: Vec<&str> = tracefs_text
        .lines()
        .filter(|l| l.contains("block_rq_issue"))
        .skip(i.saturating_sub(2))
        .take(5)
        .collect();
    panic!(
        "{what}: request streams differ first at request {i} (expected {} requests, captured {}):\n\
         expected {:?}\ncaptured {:?}\nexpected[{}..] {:?}\ncaptured[{}..] {:?}\ntracefs:\n{}",
        expected.len(),
        got.len(),
        expected.get(i),
        got.get(i),
        i.saturating_sub(2),
        window(expected),
        i.saturating_sub(2),
        window(got),
        issues.join("\n")
    );
}

/// A seeded mix of sequential runs and random jumps, reads, writes and a few discards (a log
/// `trim`) of 4 KiB to 256 KiB (4 KiB-aligned, inside `span_bytes`), with an occasional flush
/// (a log `sync`).
fn synthetic_trace(seed: u64, requests: usize, span_bytes: u64) -> Trace {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut trace = Trace::default();
    let mut issue_ns = 0u64;
    let mut next_sector = 0u64;
    let mut op = Op::Read;
    let span_blocks = span_bytes / 4096;
    let max_blocks = MAX_REQUEST_BYTES / 4096;
    for _ in 0..requests {
        issue_ns += rng.gen_range(1_000..200_000);
        if rng.gen_bool(0.03) {
            trace.requests.push(Request {
                issue_ns,
                complete_ns: None,
                op: Op::Flush,
                sector: 0,
                sectors: 0,
                flags: Flags::NONE,
                tag: 0,
                cpu: None,
            });
            continue;
        }
        // Half the sizes are powers of two (what programs ask for), half any multiple of 4 KiB.
        let blocks = if rng.gen_bool(0.5) {
            1u64 << rng.gen_range(0..=max_blocks.trailing_zeros())
        } else {
            rng.gen_range(1..=max_blocks)
        };
        let sectors = blocks * 8;
        let sequential = rng.gen_bool(0.6) && next_sector + sectors <= span_bytes / 512;
        let sector = if sequential {
            next_sector
        } else {
            op = match rng.gen_range(0..100) {
                0..=5 => Op::Discard,
                6..=52 => Op::Read,
                _ => Op::Write,
            };
            8 * rng.gen_range(0..=span_blocks - blocks)
        };
        // A sequential run sometimes switches between reading and writing.
        if sequential && op != Op::Discard && rng.gen_bool(0.1) {
            op = if op == Op::Read { Op::Write } else { Op::Read };
        }
        next_sector = sector + sectors;
        trace.requests.push(Request {
            issue_ns,
            complete_ns: None,
            op,
            sector,
            sectors: sectors as u32,
            flags: Flags::NONE,
            tag: 0,
            cpu: None,
        });
    }
    trace
}

fn queue_limit(dev: &LoopDevice, name: &str) -> u64 {
    let path = format!("/sys/block/loop{}/queue/{name}", dev.number());
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("read {path}: {e}"))
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// What a test must find gone once its guards have dropped.
#[derive(Default)]
struct Leftovers {
    loop_number: Option<u32>,
    backing_file: Option<PathBuf>,
    files: Vec<PathBuf>,
    instance_name: Option<String>,
    fio_pid: Option<u32>,
}

impl Leftovers {
    fn assert_none_left(&self) {
        if let (Some(n), Some(backing)) = (self.loop_number, &self.backing_file) {
            // The number may be reused at once by someone else: only our file must be gone.
            let attr = format!("/sys/block/loop{n}/loop/backing_file");
            let now = std::fs::read_to_string(&attr).unwrap_or_default();
            assert_ne!(
                now.trim(),
                backing.display().to_string(),
                "loop{n} is still attached over our file"
            );
        }
        for file in &self.files {
            assert!(!file.exists(), "{} was not removed", file.display());
        }
        if let Some(name) = &self.instance_name {
            let state = tracefs_state(name);
            let instances = &state.iter().find(|(k, _)| k == "instances").unwrap().1;
            assert!(
                !instances.split(',').any(|i| i == name),
                "tracefs instance {name} is still there"
            );
        }
        if let Some(pid) = self.fio_pid {
            assert!(
                !Path::new(&format!("/proc/{pid}")).exists(),
                "fio (pid {pid}) is still running"
            );
        }
        // Nothing may have been created under the writer's default file name.
        assert!(!Path::new(fio::DEFAULT_FILE_NAME).exists());
    }
}

#[test]
fn synthetic_trace_comes_back_from_fio_and_the_kernel_request_for_request() {
    let test = "synthetic_trace_comes_back_from_fio_and_the_kernel_request_for_request";
    if !can_run(test) {
        return;
    }
    let mut left = Leftovers::default();
    {
        let image = TempFile::create_sparse(&scratch("fio-synth.img"), SPAN_BYTES).unwrap();
        left.files.push(image.path().to_path_buf());
        let dev = LoopDevice::attach(image.path(), false).unwrap();
        left.loop_number = Some(dev.number());
        left.backing_file = Some(dev.backing_file().to_path_buf());
        assert!(dev.set_scheduler_none().unwrap(), "scheduler none");
        let limit_bytes = (queue_limit(&dev, "max_sectors_kb") * 1024)
            .min(queue_limit(&dev, "max_segments") * 4096);
        assert!(
            MAX_REQUEST_BYTES <= limit_bytes,
            "this loop device splits requests above {limit_bytes} bytes"
        );

        let trace = synthetic_trace(0x10_1063, 1500, SPAN_BYTES);
        let log_path = scratch("fio-synth.iolog");
        let dev_name = dev.path().to_str().unwrap().to_string();
        std::fs::write(&log_path, fio::write_v3(&trace, &dev_name).unwrap()).unwrap();
        let _log = TempFile::adopt(&log_path);
        left.files.push(log_path.clone());

        let version = fio_version().unwrap();
        let replay = traced_replay(&dev, &log_path, Target::Filename, true);
        let (expected, expected_stderr) = expected_replay(&trace, version);
        assert_eq!(replay.stderr, expected_stderr, "fio's standard error");
        let got = stream(&replay.capture.trace);
        assert_same_stream(
            &expected,
            &got,
            &replay.text,
            "synthetic trace via --filename",
        );

        let written = stream(&trace);
        let count = |op: Op| written.iter().filter(|k| k.0 == op).count();
        let bytes: u64 = trace.requests.iter().map(Request::bytes).sum();
        let secs = replay.fio_wall.as_secs_f64();
        eprintln!(
            "synthetic: {} requests written ({} reads, {} writes, {} discards, {} flushes, \
             {:.1} MiB); fio {}.{} replayed {} and they came back identical; fio ran {:.3} s \
             ({:.0} requests/s)",
            written.len(),
            count(Op::Read),
            count(Op::Write),
            count(Op::Discard),
            count(Op::Flush),
            bytes as f64 / (1 << 20) as f64,
            version.0,
            version.1,
            expected.len(),
            secs,
            expected.len() as f64 / secs
        );
    }
    left.assert_none_left();
}

/// The workload whose kernel trace is replayed: direct and buffered reads and writes of
/// several sizes, with fsyncs (flushes), and a discard.
fn dd_workload(dev: &Path) -> String {
    let d = dev.display();
    [
        format!("dd if={d} of=/dev/null bs=64k skip=10 count=40 iflag=direct"),
        format!("dd if=/dev/zero of={d} bs=16k seek=3000 count=50 oflag=direct conv=fsync,notrunc"),
        // Buffered reads: readahead decides the request sizes.
        format!("dd if={d} of=/dev/null bs=4k skip=20000 count=300"),
        // Buffered writes: writeback at the fsync decides them.
        format!("dd if=/dev/zero of={d} bs=4k seek=30000 count=200 conv=fsync,notrunc"),
        format!("dd if={d} of=/dev/null bs=128k skip=700 count=16 iflag=direct"),
        format!("dd if=/dev/zero of={d} bs=8k seek=25000 count=30 oflag=direct conv=notrunc"),
    ]
    .iter()
    .map(|c| format!("{c} status=none"))
    // 1 MiB discarded at 200 MiB.
    .chain([format!("blkdiscard -o 209715200 -l 1048576 {d}")])
    .collect::<Vec<_>>()
    .join(" && ")
}

#[test]
fn kernel_captured_trace_replays_to_the_same_stream() {
    let test = "kernel_captured_trace_replays_to_the_same_stream";
    if !can_run(test) {
        return;
    }
    let mut left = Leftovers::default();
    {
        let image = TempFile::create_sparse(&scratch("fio-dd.img"), SPAN_BYTES).unwrap();
        left.files.push(image.path().to_path_buf());
        let dev = LoopDevice::attach(image.path(), false).unwrap();
        left.loop_number = Some(dev.number());
        left.backing_file = Some(dev.backing_file().to_path_buf());
        assert!(dev.set_scheduler_none().unwrap(), "scheduler none");
        // Page-cache requests (readahead, writeback) are built from large folios and can be as
        // long as max_sectors_kb; fio's buffer is 4 KiB pages, of which one request holds at
        // most max_segments (128): cap requests at 256 KiB so the replay cannot be split.
        dev.set_max_sectors_kb(256).unwrap();
        dev.set_read_ahead_kb(128).unwrap();
        dev.flush_buffers().unwrap();

        let session = TracefsSession::start(dev.dev(), &TraceOptions::default()).unwrap();
        let script = dd_workload(dev.path());
        let (child, _out, err) = spawn_guarded(
            {
                let mut c = Command::new("sh");
                c.arg("-c").arg(&script);
                c
            },
            &scratch("fio-dd-workload"),
        );
        let status = child.wait(FIO_TIMEOUT).unwrap();
        let original = session.stop().unwrap();
        assert!(
            status.success(),
            "{script}: {}",
            std::fs::read_to_string(err.path()).unwrap_or_default()
        );
        assert_eq!(original.lost_events, 0);
        let expected = stream(&original.trace);
        let count = |op: Op| expected.iter().filter(|k| k.0 == op).count();
        let (reads, writes, flushes, discards) = (
            count(Op::Read),
            count(Op::Write),
            count(Op::Flush),
            count(Op::Discard),
        );
        // Sanity of the capture itself: the direct parts reach the device as dd asked.
        let direct_64k = expected
            .iter()
            .filter(|k| k.0 == Op::Read && k.2 == 128 && (1280..6400).contains(&k.1))
            .count();
        assert_eq!(direct_64k, 40, "dd's 64 KiB direct reads");
        assert!(flushes >= 2, "two fsyncs, {flushes} flushes");
        assert!(
            expected.contains(&(Op::Discard, 409_600, 2048)),
            "blkdiscard's 1 MiB at 200 MiB"
        );
        // max_sectors_kb bounds reads and writes; discards have their own, larger limit.
        let max_sectors = expected
            .iter()
            .filter(|k| matches!(k.0, Op::Read | Op::Write))
            .map(|k| k.2)
            .max()
            .unwrap();
        assert!(
            max_sectors <= 512,
            "a {max_sectors}-sector request above the cap"
        );

        // The generic writer: file name /dev/layoutlab0, redirected by fio to the device.
        let log_path = scratch("fio-dd.iolog");
        write_path(&original.trace, &log_path, Format::FioV3).unwrap();
        let _log = TempFile::adopt(&log_path);
        left.files.push(log_path.clone());

        let version = fio_version().unwrap();
        let replay = traced_replay(&dev, &log_path, Target::Redirect, true);
        let (replayed, expected_stderr) = expected_replay(&original.trace, version);
        assert_eq!(replay.stderr, expected_stderr, "fio's standard error");
        let got = stream(&replay.capture.trace);
        assert_same_stream(
            &replayed,
            &got,
            &replay.text,
            "dd trace via --replay_redirect",
        );
        let sizes: std::collections::BTreeSet<u32> = expected.iter().map(|k| k.2).collect();
        eprintln!(
            "dd trace: {} requests captured ({reads} reads, {writes} writes, {flushes} flushes, \
             {discards} discards; sizes in sectors {sizes:?}); fio {}.{} replayed {} and they \
             came back identical; fio ran {:.3} s",
            expected.len(),
            version.0,
            version.1,
            replayed.len(),
            replay.fio_wall.as_secs_f64()
        );
    }
    left.assert_none_left();
}

#[test]
fn a_failed_assertion_mid_replay_leaves_nothing_behind() {
    let test = "a_failed_assertion_mid_replay_leaves_nothing_behind";
    if !can_run(test) {
        return;
    }
    let mut left = Leftovers::default();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let image = TempFile::create_sparse(&scratch("fio-panic.img"), SPAN_BYTES).unwrap();
        left.files.push(image.path().to_path_buf());
        let dev = LoopDevice::attach(image.path(), false).unwrap();
        left.loop_number = Some(dev.number());
        left.backing_file = Some(dev.backing_file().to_path_buf());
        dev.set_scheduler_none().unwrap();
        // Timestamps honoured (no replay_no_stall): 40 requests 50 ms apart keep fio busy
        // for 2 s, during which the comparison fails.
        let mut trace = synthetic_trace(7, 40, SPAN_BYTES);
        for (i, r) in trace.requests.iter_mut().enumerate() {
            r.issue_ns = i as u64 * 50_000_000;
        }
        let log_path = scratch("fio-panic.iolog");
        write_path(&trace, &log_path, Format::FioV3).unwrap();
        let _log = TempFile::adopt(&log_path);
        left.files.push(log_path.clone());
        let text_path = scratch("fio-panic.tracefs.txt");
        let _text = TempFile::adopt(&text_path);
        left.files.push(text_path.clone());
        let session = TracefsSession::start(
            dev.dev(),
            &TraceOptions {
                text_path: Some(text_path),
                ..TraceOptions::default()
            },
        )
        .unwrap();
        left.instance_name = Some(
            session
                .instance()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned(),
        );
        let (child, out, err) = spawn_guarded(
            fio_command(&log_path, dev.path(), Target::Redirect, false),
            &log_path,
        );
        left.fio_pid = Some(child.pid());
        left.files.push(out.path().to_path_buf());
        left.files.push(err.path().to_path_buf());
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            Path::new(&format!("/proc/{}", child.pid())).exists(),
            "fio should still be replaying"
        );
        // A stream one sector off: the comparison must notice it.
        let mut expected = stream(&trace);
        expected[3].1 += 1;
        let got = stream(&trace);
        assert_same_stream(&expected, &got, "", "deliberately wrong expectation");
    }));
    let message = match outcome {
        Ok(()) => panic!("the comparison accepted a stream one sector off"),
        Err(payload) => payload
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default(),
    };
    assert!(
        message.contains("differ first at request 3"),
        "unexpected failure: {message}"
    );
    left.assert_none_left();
}

#[test]
fn log_timestamps_are_microseconds_to_the_real_fio() {
    let test = "log_timestamps_are_microseconds_to_the_real_fio";
    if !can_run(test) {
        return;
    }
    let mut left = Leftovers::default();
    {
        let image = TempFile::create_sparse(&scratch("fio-time.img"), SPAN_BYTES).unwrap();
        left.files.push(image.path().to_path_buf());
        let dev = LoopDevice::attach(image.path(), false).unwrap();
        left.loop_number = Some(dev.number());
        left.backing_file = Some(dev.backing_file().to_path_buf());
        assert!(dev.set_scheduler_none().unwrap(), "scheduler none");
        // 4 KiB reads 2-6 ms apart: far longer than a loop read (tens of µs), so the gaps the
        // kernel sees are fio's sleeps, i.e. the log's timestamp differences read as µs.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x71_3e);
        let mut trace = Trace::default();
        let mut issue_ns = 0u64;
        for i in 0..80 {
            trace.requests.push(Request {
                issue_ns,
                complete_ns: None,
                op: Op::Read,
                sector: 8 * rng.gen_range(0..SPAN_BYTES / 4096),
                sectors: 8,
                flags: Flags::NONE,
                tag: 0,
                cpu: None,
            });
            // The first gap is long (20 ms) so that skipping it cannot be mistaken for noise.
            issue_ns += if i == 0 {
                20_000_000
            } else {
                rng.gen_range(2_000_000..6_000_000)
            };
        }
        let log_path = scratch("fio-time.iolog");
        write_path(&trace, &log_path, Format::FioV3).unwrap();
        let _log = TempFile::adopt(&log_path);
        left.files.push(log_path.clone());

        let replay = traced_replay(&dev, &log_path, Target::Redirect, false);
        assert_eq!(replay.stderr, "", "fio's standard error");
        let got = &replay.capture.trace;
        assert_same_stream(&stream(&trace), &stream(got), &replay.text, "timed replay");
        let gaps = |t: &Trace| -> Vec<f64> {
            t.requests
                .windows(2)
                .map(|w| (w[1].issue_ns - w[0].issue_ns) as f64)
                .collect()
        };
        let (mut want, mut seen) = (gaps(&trace), gaps(got));
        // fio takes a previous timestamp of 0 for "none" (`delay_since_ttime`), so the request
        // after the one logged at 0 µs goes out at once: the first gap is not replayed.
        let first_gap_ms = seen.remove(0) / 1e6;
        let want_first_gap_ms = want.remove(0) / 1e6;
        assert!(
            first_gap_ms < 10.0,
            "fio replayed the gap after time 0 ({first_gap_ms:.3} ms): update docs/trace-formats.md"
        );
        let span = |g: &[f64]| g.iter().sum::<f64>();
        let total_ratio = span(&seen) / span(&want);
        let mut ratios: Vec<f64> = seen.iter().zip(&want).map(|(s, w)| s / w).collect();
        ratios.sort_by(f64::total_cmp);
        let median = ratios[ratios.len() / 2];
        let worst_ms = seen
            .iter()
            .zip(&want)
            .map(|(s, w)| (s - w).abs() / 1e6)
            .fold(0.0, f64::max);
        eprintln!(
            "timed replay: first gap {first_gap_ms:.3} ms (log: {want_first_gap_ms:.1} ms, not \
             replayed); next {} gaps: log span \
             {:.1} ms, kernel saw {:.1} ms (ratio {total_ratio:.4}), median gap ratio \
             {median:.4}, largest gap error {worst_ms:.3} ms",
            want.len(),
            span(&want) / 1e6,
            span(&seen) / 1e6
        );
        // Read as ms the run would take 1000 times longer, as ns 1000 times shorter: these
        // bounds only leave room for sleep overshoot on a busy 2-core machine (seen: up to 1.17
        // for the span, a 16 ms late wake-up).
        assert!(
            (0.9..3.0).contains(&total_ratio),
            "kernel span / log span = {total_ratio}"
        );
        assert!((0.8..1.5).contains(&median), "median gap ratio {median}");
    }
    left.assert_none_left();
}
