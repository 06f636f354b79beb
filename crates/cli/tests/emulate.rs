//! `layoutlab device emulate`: the stream it served, replayed open loop on the same preset,
//! completes every request at the same model time (one model, two drivers); a read-only check
//! leaves the image's bytes alone; SIGTERM and SIGKILL (then `layoutlab clean`) leave no
//! mount, directory or loop device; a preset faster than the route is refused. Root only.

mod common;

use common::*;
use layoutlab_device::preset::load_preset;
use layoutlab_device::replay::{replay, ReplayOptions};
use layoutlab_trace::{Flags, Op, Request, Trace};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A 64 MiB ext3 image holding a small tree (mke2fs -d), in `dir`.
fn small_ext3(dir: &Path) -> PathBuf {
    let tree = dir.join("tree");
    for d in 0..8 {
        let sub = tree.join(format!("d{d}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..12 {
            std::fs::write(sub.join(format!("f{f}")), vec![d as u8; 4096 * f + 100]).unwrap();
        }
    }
    let image = dir.join("fs.img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let ok = Command::new("mke2fs")
        .args(["-q", "-F", "-t", "ext3", "-d"])
        .arg(&tree)
        .arg(&image)
        .status()
        .unwrap();
    assert!(ok.success());
    std::fs::remove_dir_all(&tree).unwrap();
    image
}

fn sha256(path: &Path) -> String {
    let out = Command::new("sha256sum").arg(path).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn the_served_stream_replayed_open_loop_completes_at_the_same_model_times() {
    if !is_root() {
        eprintln!("skipped: device emulate needs root (FUSE mount, loop device)");
        return;
    }
    let dir = scratch("emulate", "replay");
    let image = small_ext3(&dir);
    let before = sha256(&image);
    let log = dir.join("log.json");
    let o = layoutlab(&[
        "device",
        "emulate",
        "sata-400g-2007",
        image.to_str().unwrap(),
        "--time-scale",
        "8",
        "--log",
        log.to_str().unwrap(),
        "--",
        "e2fsck",
        "-fn",
        "-E",
        "readahead_kb=0",
        "{dev}",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        sha256(&image),
        before,
        "a read-only check changed the image"
    );
    let log: serde_json::Value = serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap();
    assert_eq!(log["time_scale"], 8.0);
    let served = log["requests"].as_array().unwrap();
    assert!(served.len() > 20, "e2fsck's reads: {}", served.len());
    // The served stream as a trace with its arrival times and no completions: replayed open
    // loop, each request reaches the model at the time it reached the emulator's.
    let mut trace = Trace::default();
    let tag = trace.tag("e2fsck");
    for r in served {
        let arrival = r["arrival_ns"].as_f64().unwrap();
        assert_eq!(arrival.fract(), 0.0, "arrivals are whole ns");
        trace.requests.push(Request {
            issue_ns: arrival as u64,
            complete_ns: None,
            op: if r["write"].as_bool().unwrap() {
                Op::Write
            } else {
                Op::Read
            },
            sector: r["sector"].as_u64().unwrap(),
            sectors: r["sectors"].as_u64().unwrap() as u32,
            flags: Flags::default(),
            tag,
            cpu: None,
        });
    }
    let mut model = load_preset("sata-400g-2007").unwrap();
    let replayed = replay(model.as_mut(), &trace, &ReplayOptions::default());
    for (i, (s, r)) in served.iter().zip(&replayed.requests).enumerate() {
        let complete = s["complete_ns"].as_f64().unwrap();
        assert_eq!(r.issue_ns, trace.requests[i].issue_ns as f64, "request {i}");
        assert!(
            (r.complete_ns - complete).abs() < 1e-3,
            "request {i}: the emulator completed it at {complete} ns, the replay at {} ns",
            r.complete_ns
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Mount points and temp paths of `pid`'s emulator, and loop devices over them.
fn leftovers(pid: u32) -> Vec<String> {
    let prefix = format!("layoutlab-mnt-{pid}-");
    let mut out: Vec<String> = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.contains(&prefix))
        .map(|l| format!("mount {l}"))
        .collect();
    out.extend(
        entries(&std::env::temp_dir())
            .into_iter()
            .filter(|n| n.starts_with(&prefix))
            .map(|n| format!("path {n}")),
    );
    let losetup = Command::new("losetup").arg("-a").output().unwrap();
    out.extend(
        String::from_utf8_lossy(&losetup.stdout)
            .lines()
            .filter(|l| l.contains(&prefix))
            .map(|l| format!("loop {l}")),
    );
    out
}

/// Sends signal `name` to `pid`.
fn send(pid: u32, name: &str) {
    let ok = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(ok.success());
}

/// Starts `device emulate` with no command; returns it once its device exists.
fn start_emulator(image: &Path) -> (std::process::Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args(["device", "emulate", "sata-400g-2007"])
        .arg(image)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let dev = line.trim().to_string();
    assert!(dev.starts_with("/dev/loop"), "device line: {line:?}");
    (child, dev)
}

#[test]
fn sigterm_and_sigkill_then_clean_leave_nothing() {
    if !is_root() {
        eprintln!("skipped: device emulate needs root (FUSE mount, loop device)");
        return;
    }
    let dir = scratch("emulate", "signals");
    let image = small_ext3(&dir);
    let before = sha256(&image);

    let (mut child, dev) = start_emulator(&image);
    let pid = child.id();
    assert!(
        !leftovers(pid).is_empty(),
        "the emulator's mount is not visible"
    );
    // The device answers while it runs.
    let read = Command::new("dd")
        .args([
            &format!("if={dev}"),
            "of=/dev/null",
            "bs=4096",
            "count=4",
            "iflag=direct",
        ])
        .status()
        .unwrap();
    assert!(read.success());
    send(pid, "TERM");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143), "{status:?}");
    assert_eq!(leftovers(pid), Vec::<String>::new(), "after SIGTERM");

    let (mut child, _dev) = start_emulator(&image);
    let pid = child.id();
    send(pid, "KILL");
    child.wait().unwrap();
    // SIGKILL runs no cleanup: the dead daemon's mount stays (its loop device went with the
    // last descriptor, by autoclear) until `layoutlab clean`.
    assert!(
        leftovers(pid).iter().any(|l| l.starts_with("mount ")),
        "{:?}",
        leftovers(pid)
    );
    let o = layoutlab(&["clean"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        leftovers(pid),
        Vec::<String>::new(),
        "after SIGKILL and clean"
    );
    assert_eq!(sha256(&image), before);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_preset_faster_than_the_route_is_refused_and_nothing_is_made() {
    if !is_root() {
        eprintln!("skipped: device emulate needs root (FUSE mount, loop device)");
        return;
    }
    let dir = scratch("emulate", "fast");
    let image = small_ext3(&dir);
    let child = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args(["device", "emulate", "ssd-nvme-2024"])
        .arg(&image)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(!child.status.success());
    let err = String::from_utf8_lossy(&child.stderr);
    assert!(err.contains("faster than this route can honour"), "{err}");
    // A disk the route honours at K = 1 is refused at a time scale that makes it too fast.
    let o = layoutlab(&[
        "device",
        "emulate",
        "sata-400g-2007",
        image.to_str().unwrap(),
        "--time-scale",
        "1000",
        "--",
        "true",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("at time scale 1000"), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What `--closed-loop` refused with names: the operations that take it.
const CLOSED_LOOP_TAKERS: &str =
    "applies to fsck, large-delete, inode-readahead, metacluster-io, request-merging, random-read, aging experiments";

/// Whether a closed-loop test can run here (it needs root: FUSE mount, loop device, tracefs);
/// says so when it cannot.
fn closed_loop_can_run() -> bool {
    let root = is_root();
    if !root {
        eprintln!("skipped: a closed-loop capture needs root (FUSE mount, loop device, tracefs)");
    }
    root
}

/// `layoutlab reproduce NAME ARGS... --out DIR/out --json DIR/r.json`: the result JSON, once
/// the run succeeded and left none of its emulators' mounts, directories or loop devices.
fn reproduce_closed_loop(dir: &Path, name: &str, args: &[&str]) -> serde_json::Value {
    let (v, _, pid) = reproduce_into(dir, name, args);
    assert_eq!(leftovers(pid), Vec::<String>::new());
    v
}

/// Which of a closed-loop run's requests the traced program's CPU placed on the model's clock.
#[derive(Clone, Copy)]
enum Paced {
    /// Every one (the program named itself before exec: e2fsck, a walk, a reader).
    All,
    /// At least one (a `dd` among other work).
    Some,
    /// None: kernel threads did the work, the wall placed them.
    None,
}

/// Asserts `run` (one run of a result JSON) was captured closed loop at time scale `k`: the
/// emulator served exactly the `run[traced]` requests the kernel traced, paced as `paced`
/// says, and a time was measured there beside the open-loop replay (at JSON pointer `replay`).
fn assert_closed_loop(run: &serde_json::Value, k: f64, traced: &str, paced: Paced, replay: &str) {
    let closed = &run["closed_loop"];
    assert_eq!(closed["time_scale"], k, "{run}");
    assert!(run[traced].as_u64().unwrap() > 0, "{run}");
    assert_eq!(closed["requests_served"], run[traced], "{run}");
    let n = closed["requests_paced"].as_u64().unwrap();
    match paced {
        Paced::All => assert_eq!(closed["requests_paced"], run[traced], "{run}"),
        Paced::Some => assert!(n > 0, "{run}"),
        Paced::None => assert_eq!(n, 0, "{run}"),
    }
    assert!(closed["measured_seconds"].as_f64().unwrap() > 0.0, "{run}");
    let replayed = run.pointer(replay).and_then(serde_json::Value::as_f64);
    assert!(replayed.is_some_and(|s| s > 0.0), "{replay}: {run}");
}

/// Asserts `layoutlab ARGS... --out OUT` fails saying `says` and makes no OUT.
fn assert_refused(args: &[&str], out: &Path, says: &str) {
    let mut all = args.to_vec();
    all.extend(["--out", out.to_str().unwrap()]);
    let o = layoutlab(&all);
    assert!(!o.status.success(), "{all:?}");
    assert!(stderr(&o).contains(says), "{all:?}: {}", stderr(&o));
    assert!(!out.exists(), "{all:?} made its report directory");
}

#[test]
fn metacluster_fsck_closed_loop_reports_the_emulated_time_beside_the_replay() {
    if !closed_loop_can_run() {
        return;
    }
    let dir = scratch("emulate", "closed-loop");
    let r = reproduce_closed_loop(
        &dir,
        "metacluster-fsck",
        &["--scale", "0.005", "--closed-loop", "8"],
    );
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for run in runs {
        // e2fsck ran on the emulated device: the emulator served every request the kernel
        // traced, one for one (requests reach the daemon whole), and e2fsck named itself
        // before exec: its CPU placed every request on the model's clock, the first included
        // (`CpuPace`). The open-loop replay of the same stream stays beside it.
        assert_closed_loop(run, 8.0, "requests", Paced::All, "/total_seconds");
    }
    // Closed loop is built for the operations that capture: another refuses it, naming those.
    assert_refused(
        &["reproduce", "fio-randread", "--closed-loop"],
        &dir.join("refused"),
        CLOSED_LOOP_TAKERS,
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// large-delete closed loop: each file system is moved onto the emulated device (read-write
/// over its own backing) for the traced delete. The emulator serves exactly the requests the
/// kernel traced in the delete's window (not the mount's or the unmount's, nor a flush
/// fewer: a journal's barrier reaches it as the FUSE file's fsync), and the JSON gives the
/// time measured there beside the open-loop replay of the same stream. ext3 is a policy's
/// image on a sparse file, ext4-2007 a kernel-written file on zram (`--set layout=kernel`: its
/// default is the engine's sparse image, as ext3's), XFS a 512-byte-sector file
/// system: the three ways large-delete's file systems reach the device. Scale 0.002 (a 200 MB
/// file), K = 8.
#[test]
fn large_delete_closed_loop_serves_the_traced_requests_and_reports_both_times() {
    if !closed_loop_can_run() {
        return;
    }
    let dir = scratch("emulate", "large-delete");
    let r = reproduce_closed_loop(
        &dir,
        "large-delete",
        &[
            "--scale",
            "0.002",
            "--fs",
            "ext3,ext4-2007,xfs",
            "--set",
            "variants=contiguous",
            "--set",
            "layout=kernel",
            "--closed-loop",
            "8",
        ],
    );
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3, "{r}");
    for run in runs {
        // The delete's work runs in kernel threads, which no program's CPU clock counts: the
        // wall places its requests.
        assert_closed_loop(run, 8.0, "requests", Paced::None, "/seconds");
        // Traced on the emulated device: its queue, FUSE's largest request.
        assert_eq!(run["capture_queue"]["rotational"], true, "{run}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// request-merging closed loop: each target's `dd`s run on the emulated disk of the one preset
/// (the raw target on the emulator over its zram device; ext3 and ext4 moved there after
/// mkfs). In every phase the emulator serves exactly the requests the kernel traced between the
/// phase's marks, each `dd` named itself before exec so its CPU places requests on the model's
/// clock, and the request row gives the time measured there beside the open-loop prices of the
/// same stream. What it cannot run is refused before anything is made: several presets, and a
/// request size FUSE would split (the experiment's 1280 KiB). 8 MiB per `dd`, K = 8.
#[test]
fn request_merging_closed_loop_serves_the_traced_requests_and_reports_both_times() {
    if !closed_loop_can_run() {
        return;
    }
    let dir = scratch("emulate", "request-merging");
    let r = reproduce_closed_loop(
        &dir,
        "request-merging",
        &[
            "--device",
            "sata-500g-2008",
            "--set",
            "mib=8",
            "--set",
            "max_sectors_kb=1024",
            "--closed-loop",
            "8",
        ],
    );
    assert_eq!(r["closed_loop"], 8.0, "{r}");
    let runs = r["runs"].as_array().unwrap();
    let requests: Vec<&serde_json::Value> =
        runs.iter().filter(|x| x["level"] == "request").collect();
    // Three targets, two modes, a write and a read each.
    assert_eq!(requests.len(), 12, "{r}");
    for run in requests {
        assert!(run["requests"].as_u64().unwrap() > 0, "{run}");
        // dd named itself before exec: its CPU placed its requests, the first included.
        assert_closed_loop(run, 8.0, "phase_requests", Paced::Some, "/seconds");
        assert!(run["replayed_seconds"].as_f64().unwrap() > 0.0, "{run}");
        assert_eq!(run["capture_queue"]["rotational"], true, "{run}");
    }
    // The bio level is a view of the same queue: no time of its own.
    assert!(runs
        .iter()
        .filter(|x| x["level"] == "bio")
        .all(|x| x.get("closed_loop").is_none()));

    for (args, says) in [
        (
            ["--set", "max_sectors_kb=1024"],
            "captures on one emulated disk",
        ),
        (["--device", "sata-500g-2008"], "--set max_sectors_kb=1024"),
    ] {
        let mut all = vec!["reproduce", "request-merging", "--closed-loop", "8"];
        all.extend(args);
        assert_refused(&all, &dir.join("refused"), says);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// random-read closed loop: each target's reads run on the emulated disk (the raw target's
/// sparse file served read-only; ext3's policy image and ext4's engine image moved there after
/// their layout is read). In every run the emulator serves exactly the requests the kernel
/// traced in the reads' window, the reading thread's own CPU places them on the model's clock,
/// and the JSON gives the time measured there beside the open-loop replay. Scale 0.001 (a
/// 1.9 GB sparse file), 300 reads per target and mode, K = 8.
#[test]
fn random_read_closed_loop_serves_the_traced_requests_and_reports_both_times() {
    if !closed_loop_can_run() {
        return;
    }
    let dir = scratch("emulate", "random-read");
    let r = reproduce_closed_loop(
        &dir,
        "random-read",
        &[
            "--scale",
            "0.001",
            "--set",
            "reads=300",
            "--closed-loop",
            "8",
        ],
    );
    let runs = r["runs"].as_array().unwrap();
    // ext3, ext4 and raw, buffered and direct.
    assert_eq!(runs.len(), 6, "{r}");
    for run in runs {
        assert!(run["device_requests"].as_u64().unwrap() >= 300, "{run}");
        // The reading thread was followed from before its first read.
        assert_closed_loop(run, 8.0, "phase_requests", Paced::Some, "/seconds");
        assert_eq!(run["capture_queue"]["rotational"], true, "{run}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Real fio on the emulated disk: `fio --direct=1 --rw=randread --iodepth=1` on the emulated
/// `sata-500g-2008` (a 16 GiB span, 4 KiB and 256 KiB) is priced as `layoutlab device fio`
/// prices the same job. Every fio request reaches the model whole (one served request per fio
/// I/O, of fio's size), and the model's mean service time of fio's own random offsets is within
/// 2% of `device fio`'s mean latency, so the IOPS the emulated disk offers fio (1 / mean
/// service) is within 2% of `device fio`'s. Deterministic but for sampling: fio's offsets and
/// `device fio`'s are two random samples of 6,000 and 20,000 requests, so with the model's spread
/// (CV 0.34 at 4 KiB, 0.25 at 256 KiB) the two means differ by a standard error of 0.5% and
/// 0.4%: 2% is 4 and 5 of them. K = 16: about 4 s of wall time per size. The IOPS fio itself
/// reports adds the time between its requests (its own CPU and the route), which depends on the
/// machine's load: printed, and given with the load in docs/emulate.md, not asserted.
///
/// The mean service does not depend on the machine's load: fio waits for each completion, so
/// each of its requests reaches the model no sooner than the previous completed, however early
/// the route delivered it (the model's clock raises it, `ModelClock` in
/// crates/rig/src/emulate.rs). Before that, a fresh-clone CI run with two CPU-bound loops gave
/// 7.620 ms against `device fio`'s 7.196 ms at 4 KiB (5.9%): the model charged a wait the kernel
/// never saw. Runs with two CPU-bound loops since: docs/emulate.md.
#[test]
fn real_fio_on_the_emulated_disk_is_priced_as_device_fio() {
    if !is_root() {
        eprintln!("skipped: device emulate needs root (FUSE mount, loop device)");
        return;
    }
    let dir = scratch("emulate", "fio");
    let image = dir.join("span.img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(16 << 30)
        .unwrap();
    let k = 16.0;
    for (bs, bytes) in [("4k", 4096u64), ("256k", 256 << 10)] {
        let log = dir.join(format!("served-{bs}.json"));
        let fio_json = dir.join(format!("fio-{bs}.json"));
        let dev_arg = "--filename={dev}";
        let out = layoutlab(&[
            "device",
            "emulate",
            "sata-500g-2008",
            image.to_str().unwrap(),
            "--time-scale",
            "16",
            "--log",
            log.to_str().unwrap(),
            "--",
            // fio real-time, as a period machine ran it alone: with the ordinary scheduler it
            // waits for a CPU between requests (docs/emulate.md), which at K = 16 takes 16
            // times as long on the model's clock and thins out the sample.
            "chrt",
            "-f",
            "1",
            "fio",
            "--name=emulated",
            dev_arg,
            "--direct=1",
            "--rw=randread",
            &format!("--bs={bs}"),
            "--iodepth=1",
            "--number_ios=6000",
            "--output-format=json",
            &format!("--output={}", fio_json.display()),
        ]);
        assert!(out.status.success(), "device emulate: {}", stderr(&out));
        let fio: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&fio_json).unwrap()).unwrap();
        let read = &fio["jobs"][0]["read"];
        let fio_ios = read["total_ios"].as_u64().unwrap() as usize;
        let fio_iops = read["iops"].as_f64().unwrap();
        let served: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
        let served = served["requests"].as_array().unwrap();
        assert_eq!(
            served.len(),
            fio_ios,
            "{bs}: one served request per fio I/O"
        );
        assert!(
            served
                .iter()
                .all(|r| r["write"] == false && r["sectors"].as_u64().unwrap() * 512 == bytes),
            "{bs}: every request reaches the model whole"
        );
        assert_eq!(fio_ios, 6000, "{bs}: fio ran its 6,000 requests");
        let mean_service_ms = served
            .iter()
            .map(|r| r["complete_ns"].as_f64().unwrap() - r["arrival_ns"].as_f64().unwrap())
            .sum::<f64>()
            / served.len() as f64
            / 1e6;
        let model = layoutlab(&[
            "device",
            "fio",
            "--device",
            "sata-500g-2008",
            "--rw",
            "randread",
            "--bs",
            bs,
            "--span",
            "16g",
            "--number",
            "20000",
            "--json",
            "-",
        ]);
        assert!(model.status.success(), "device fio: {}", stderr(&model));
        let model: serde_json::Value = serde_json::from_slice(&model.stdout).unwrap();
        let model_ms = model["mean_ms"].as_f64().unwrap();
        eprintln!(
            "{bs}: {fio_ios} fio requests; model service {mean_service_ms:.3} ms ({:.1} IOPS), \
             device fio {model_ms:.3} ms ({:.1} IOPS); fio's own IOPS on the model's clock {:.1}",
            1e3 / mean_service_ms,
            model["iops"].as_f64().unwrap(),
            fio_iops / k
        );
        assert!(
            (mean_service_ms - model_ms).abs() <= 0.02 * model_ms,
            "{bs}: fio's requests took {mean_service_ms:.3} ms on the emulated disk, \
             device fio's {model_ms:.3} ms"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--closed-loop` through fsck-predict (the check on the one preset's emulated device) and
/// through a sweep (each cell's `reproduce` gets it): the emulator serves every request the
/// kernel traced, and the measured time sits beside the open-loop replay. Where it cannot
/// apply the flag is refused before anything is made: fsck-predict with several presets or
/// with --relayout, a preset faster than the route, a sweep of an operation without it.
#[test]
fn fsck_predict_and_sweeps_take_the_closed_loop_flag_or_refuse_it() {
    if !closed_loop_can_run() {
        return;
    }
    let dir = scratch("emulate", "predict-sweep");
    let image = small_ext3(&dir);
    let img = image.to_str().unwrap();
    let json = dir.join("p.json");
    let o = layoutlab(&[
        "fsck-predict",
        img,
        "--device",
        "sata-400g-2007",
        "--closed-loop",
        "8",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(r["requests"].as_u64().unwrap() > 20, "{r}");
    assert_closed_loop(
        &r,
        8.0,
        "requests",
        Paced::All,
        "/predictions/0/total_seconds",
    );
    assert_eq!(r["predictions"].as_array().unwrap().len(), 1, "{r}");

    for (args, says) in [
        (
            vec!["--device", "sata-400g-2007,sata-160g-2009"],
            "give one --device",
        ),
        (
            vec!["--device", "sata-400g-2007", "--relayout", "ext3-2007"],
            "does not go with --relayout",
        ),
        (vec!["--device", "ssd-nvme-2024"], "faster than this route"),
    ] {
        let mut all = vec!["fsck-predict", img, "--closed-loop", "8"];
        all.extend(args);
        let o = layoutlab(&all);
        assert!(!o.status.success(), "{all:?}");
        assert!(stderr(&o).contains(says), "{all:?}: {}", stderr(&o));
    }

    let sw = dir.join("sw");
    let sweep = |closed: bool| {
        let mut args = vec![
            "sweep",
            "metacluster-fsck",
            "--set",
            "scale=0.005",
            "--set",
            "policy=ext3-2007",
            "--out",
            sw.to_str().unwrap(),
        ];
        if closed {
            args.extend(["--closed-loop", "8"]);
        }
        layoutlab(&args)
    };
    let o = sweep(true);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = layoutlab(&["sweep", "collect", sw.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let c: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let runs = c["cells"][0]["result"]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{c}");
    assert_closed_loop(&runs[0], 8.0, "requests", Paced::All, "/total_seconds");
    // The same directory asked open loop: refused, its closed-loop cells kept apart.
    let o = sweep(false);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("would mix the two"), "{}", stderr(&o));

    assert_refused(
        &["sweep", "fio-randread", "--closed-loop"],
        &dir.join("none"),
        CLOSED_LOOP_TAKERS,
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// inode-readahead closed loop: each walk runs on a fresh emulated disk of the one preset
/// (the image mounted there read-only, then back), its thread's CPU placing every request on
/// the model's clock. The emulator serves exactly the requests the kernel traced in the walk,
/// every one paced, and the JSON gives the time measured there beside the open-loop replay of
/// the same stream. Both policies walked at once (two emulators), two settings, both orders;
/// scale 0.005 (about 1,600 names), K = 8. Several presets, or an SSD faster than the route,
/// are refused before anything is made.
#[test]
fn inode_readahead_closed_loop_walks_on_the_emulated_disk_and_reports_both_times() {
    if !closed_loop_can_run() {
        return;
    }
    let dir = scratch("emulate", "inode-readahead");
    for (device, says) in [
        ("sata-500g-2008,sata-400g-2007", "give one --device"),
        ("ssd-nvme-2024", "faster than this route"),
    ] {
        assert_refused(
            &[
                "reproduce",
                "inode-readahead",
                "--scale",
                "0.005",
                "--device",
                device,
                "--closed-loop",
                "8",
            ],
            &dir.join("refused"),
            says,
        );
    }
    let r = reproduce_closed_loop(
        &dir,
        "inode-readahead",
        &[
            "--scale",
            "0.005",
            "--settings",
            "0,32",
            "--device",
            "sata-500g-2008",
            "--closed-loop",
            "8",
        ],
    );
    let runs = r["runs"].as_array().unwrap();
    // 2 policies x 2 orders x 2 settings, one device
    assert_eq!(runs.len(), 8, "{r}");
    for run in runs {
        assert!(run["requests"].as_u64().unwrap() > 20, "{run}");
        // The walk ran on the emulated disk: one served request per traced one (a read-only
        // walk issues reads only), and its thread named itself: its CPU placed every request.
        assert_closed_loop(run, 8.0, "requests", Paced::All, "/seconds");
        assert_eq!(run["capture_queue"]["rotational"], true, "{run}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// metacluster-io closed loop: benchmarks 2-4 read on a fresh emulated disk each (the file
/// system moved there read-write over its own backing, then back), the reader's CPU placing
/// every request on the model's clock. The emulator serves exactly the requests the kernel
/// traced, every one paced; the JSON gives the measured time on the captured runs without the
/// read-ahead option (not on the write stream, nor on the read-ahead option's rewritten
/// traces, which no device served). Scale 0.02, K = 8. A CPU factor is refused with it.
#[test]
fn metacluster_io_closed_loop_serves_the_traced_reads_and_reports_both_times() {
    if !closed_loop_can_run() {
        return;
    }
    let dir = scratch("emulate", "metacluster-io");
    assert_refused(
        &[
            "reproduce",
            "metacluster-io",
            "--scale",
            "0.02",
            "--closed-loop",
            "8",
            "--cpu-scale",
            "2",
        ],
        &dir.join("refused"),
        "drop --cpu-scale",
    );
    let r = reproduce_closed_loop(
        &dir,
        "metacluster-io",
        &["--scale", "0.02", "--closed-loop", "8"],
    );
    let runs = r["runs"].as_array().unwrap();
    let mut closed_runs = 0;
    for run in runs {
        let captured = run["source"] == "kernel trace";
        assert_eq!(run["closed_loop"].is_null(), !captured, "{run}");
        if !captured {
            continue;
        }
        closed_runs += 1;
        assert!(run["requests"].as_u64().unwrap() > 20, "{run}");
        assert_closed_loop(run, 8.0, "requests", Paced::All, "/seconds");
        assert_eq!(run["capture_queue"]["rotational"], true, "{run}");
    }
    // benchmarks 2, 3 and 4 of both policies
    assert_eq!(closed_runs, 6, "{r}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// metacluster-aging closed loop: each cell's traced e2fsck runs on its own emulated disk
/// (the check step the fsck experiments use), one cell at a time. The emulator serves exactly
/// the requests the kernel traced in every cell, e2fsck's CPU placing each one, and the JSON
/// gives the time measured there beside the open-loop replay of the same stream, within a
/// bound of it. A preset faster than the route is refused before anything is made. bench5 at
/// scale 0.005 (a 2 GB file system), its four policies at ages 0 and 1 (8 cells), K = 8.
#[test]
fn metacluster_aging_closed_loop_checks_each_cell_on_its_own_emulated_disk() {
    // The measured time against its own stream's replay, 8 runs of this matrix (release build
    // of 653cd04, 2026-11-27 12:53-12:54 UTC, load 9-11): the ext3 policies' cells (435-1,028
    // requests, 1.0-4.5 s) lay -2.4% to +0.8% off, ext4-2009's (19 requests, 0.09-0.10 s) at
    // most 16.6 ms off: two revolutions of the 7,200 rpm disk (a request that reaches the
    // model a little later waits a turn more). Bound: 4% plus three revolutions.
    const WITHIN: f64 = 0.04;
    const REVOLUTIONS_S: f64 = 3.0 * 60.0 / 7200.0;
    if !closed_loop_can_run() {
        return;
    }
    let dir = scratch("emulate", "aging");
    assert_refused(
        &[
            "reproduce",
            "metacluster-aging",
            "--device",
            "ssd-nvme-2024",
            "--closed-loop",
            "8",
        ],
        &dir.join("refused"),
        "faster than this route",
    );
    let r = reproduce_closed_loop(
        &dir,
        "metacluster-aging",
        &[
            "--scale",
            "0.005",
            "--set",
            "workloads=bench5",
            "--set",
            "ages=0,1",
            "--closed-loop",
            "8",
        ],
    );
    assert_eq!(r["closed_loop"], 8.0, "{r}");
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 8, "{r}");
    for run in runs {
        assert_eq!(run["fsck_clean"], true, "{run}");
        assert_closed_loop(run, 8.0, "requests", Paced::All, "/total_seconds");
        let measured = run["closed_loop"]["measured_seconds"].as_f64().unwrap();
        let replay = run["total_seconds"].as_f64().unwrap();
        assert!(
            (measured - replay).abs() <= WITHIN * replay + REVOLUTIONS_S,
            "{} {} age {}: measured {measured:.3} s against its replay {replay:.3} s",
            run["population"],
            run["policy"],
            run["age"]
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
