//! The real e2fsck, traced on a loop device: requests tagged by pass, `-tt` parsed, bytes agree.

mod common;

use common::*;
use layoutlab_rig::{
    mkfs, run_e2fsck_traced, FsKind, FsckOptions, LoopDevice, Mount, QueueSpec, TempFile,
};
use layoutlab_trace::Op;

/// A 1 GiB ext3 image with a few hundred files and directories (so pass 2 has work).
fn populated_ext3(name: &str) -> TempFile {
    populated_ext3_of(name, 1 << 30)
}

struct Traced {
    run: layoutlab_rig::FsckRun,
    _image: TempFile,
}

/// Runs the traced e2fsck on a fresh populated image with `extra` e2fsck arguments.
fn traced_fsck(name: &str, extra: &[&str], read_ahead_kb: u32) -> Traced {
    let image = populated_ext3(name);
    let dev = LoopDevice::attach(image.path(), true).unwrap();
    dev.set_read_ahead_kb(read_ahead_kb).unwrap();
    dev.set_scheduler_none().unwrap();
    let mut opts = FsckOptions {
        extra_args: extra.iter().map(|s| s.to_string()).collect(),
        ..FsckOptions::default()
    };
    if let Ok(path) = std::env::var("RIG_KEEP_TRACE") {
        opts.trace.text_path = Some(format!("{path}.{name}").into());
    }
    let run = run_e2fsck_traced(dev.path(), dev.dev(), &opts).unwrap();
    assert!(
        run.clean(),
        "e2fsck exit {}: {}{}",
        run.exit_code,
        run.stdout,
        run.stderr
    );
    drop(dev);
    assert_eq!(loops_backed_by(image.path()), "");
    let trace = &run.capture.trace;
    eprintln!("e2fsck {extra:?}:");
    for tag in &trace.tags {
        let n = trace
            .requests
            .iter()
            .filter(|r| trace.tag_name(r.tag) == tag)
            .count();
        eprintln!("  {tag:>6}: {n} requests, {} bytes", read_bytes(&run, tag));
    }
    Traced { run, _image: image }
}

fn read_bytes(run: &layoutlab_rig::FsckRun, tag: &str) -> u64 {
    let trace = &run.capture.trace;
    trace
        .requests
        .iter()
        .filter(|r| r.op == Op::Read && trace.tag_name(r.tag) == tag)
        .map(|r| r.bytes())
        .sum()
}

/// What holds for any traced run: every pass announced and tagged, a complete and ordered
/// trace of reads only, `-tt` parsed for every pass, and the bytes on the device close to the
/// bytes e2fsck says it read.
/// Steal time of the machine's CPUs so far, ns (/proc/stat's eighth `cpu` field, in
/// USER_HZ = 100 ticks): time this virtual machine's CPUs waited for the host.
fn steal_ns() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap();
    let ticks: u64 = stat
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(8))
        .and_then(|v| v.parse().ok())
        .expect("a cpu line with a steal field");
    ticks * 10_000_000
}

/// `steal_ns`: the steal time of the machine's CPUs while the capture ran.
fn check_common(run: &layoutlab_rig::FsckRun, steal_ns: u64) {
    let progress: Vec<u32> = run.progress.iter().map(|p| p.pass).collect();
    assert_eq!(progress, vec![1, 2, 3, 4, 5], "progress {:?}", run.progress);
    assert!(run.progress.windows(2).all(|w| w[0].at_ns <= w[1].at_ns));
    let trace = &run.capture.trace;
    assert_eq!(run.capture.lost_events, 0);
    assert_eq!(run.capture.incomplete_requests, 0);
    for pass in 1..=5 {
        assert!(
            trace.tags.contains(&format!("pass{pass}")),
            "tags {:?}",
            trace.tags
        );
        let section = run
            .times
            .pass(pass)
            .unwrap_or_else(|| panic!("no Pass {pass} in\n{}", run.stdout));
        assert!(section.real_s >= 0.0 && section.read_mib.is_some());
    }
    assert!(
        trace.requests.iter().all(|r| r.op == Op::Read),
        "e2fsck -n wrote"
    );
    assert!(trace
        .requests
        .windows(2)
        .all(|w| w[0].issue_ns <= w[1].issue_ns));
    assert!(trace
        .requests
        .iter()
        .all(|r| r.complete_ns.unwrap() >= r.issue_ns));
    // The scheduler's accounting of e2fsck: every request stamped, the CPU time used never
    // running backwards, and all of it about what e2fsck's own -tt says it used.
    let cpu = run
        .capture
        .cpu
        .as_ref()
        .expect("e2fsck followed in the CPU accounting");
    assert!(trace.has_cpu(), "requests without CPU stamps");
    assert!(trace.requests.windows(2).all(|w| {
        let (a, b) = (w[0].cpu.unwrap(), w[1].cpu.unwrap());
        a.at_issue_ns <= b.at_issue_ns && a.at_issue_ns <= a.at_complete_ns
    }));
    let total = run.times.total().expect("totals");
    let tt_ns = (total.user_s + total.sys_s) * 1e9;
    eprintln!(
        "  CPU: followed {} ns in all, {} ns during the trace; e2fsck -tt says {tt_ns:.0} ns",
        cpu.total_ns,
        cpu.during_trace_ns()
    );
    assert!(cpu.during_trace_ns() <= cpu.total_ns);
    // What it used between its first request and its last completion is never more than
    // e2fsck's own account (-tt prints user and system time in 10 ms steps, each rounded).
    // The whole count may be: it follows the process from the fork, so it holds the rig's
    // set-up before exec and e2fsck's start-up before `init_resource_track()`, which -tt
    // leaves out (a loaded machine once made that 10.6 ms over). Not asserted: that it is all
    // of it. Until 2026-11-29 the count came from switches to and away from e2fsck alone, and
    // this kernel does not record every switch to it from the idle task (once 26 ms against
    // -tt's 80 ms here, 14-33% in experiment captures); a switch away with no switch to it now
    // takes its run from the task's `sched_stat_runtime` events (trace crate, `read_cpu`),
    // which brought experiment captures to 87-108% of -tt. One run of this test under a loaded
    // CI still counted 57 ms against -tt's 70 ms: a residue not explained.
    assert!(cpu.total_ns > 0, "no CPU accounted for e2fsck");
    // On a virtual machine the scheduler's task clock leaves out steal time (the host ran
    // something else; CONFIG_PARAVIRT_TIME_ACCOUNTING, which getrusage and so -tt follow),
    // while the followed time between switches holds it: a loaded CI run's capture came to
    // 10.57 ms over. So the machine's steal while the capture ran is allowed on top.
    // Steal was not the whole story: the next loaded CI run's came to 10.38 ms over with no
    // steal counted (/proc/stat counts it in 10 ms ticks). The other candidate, read in
    // __schedule's order, not measured: the task clock stops at the scheduler's clock update,
    // the followed interval at the sched_switch event after the next task is picked, so each
    // time e2fsck blocks (once per read here, readahead off) the follower counts a little of
    // the scheduler's own work as e2fsck's. The two failures were 0.57 and 0.38 ms past the
    // rounding bound over about 4,370 reads (0.13 and 0.09 µs a read); 1 µs a read is allowed.
    let per_read_ns = 1_000.0 * trace.requests.len() as f64;
    assert!(
        cpu.during_trace_ns() as f64 <= tt_ns + 10e6 + steal_ns as f64 + per_read_ns,
        "followed CPU during the trace {} ns is more than e2fsck -tt's {tt_ns} ns \
         (+ 10 ms of its rounding + {steal_ns} ns of steal + {per_read_ns} ns for the \
         scheduler's path at each of {} reads)",
        cpu.during_trace_ns(),
        trace.requests.len()
    );
    let fsck_mib = run.times.total().expect("totals").read_mib.unwrap();
    let traced: u64 = trace.requests.iter().map(|r| r.bytes()).sum();
    let traced_mib = traced as f64 / (1 << 20) as f64;
    eprintln!("  e2fsck says {fsck_mib} MiB read, the trace has {traced_mib:.2} MiB");
    // e2fsck counts what libext2fs read through its I/O channel, rounded up to MiB; the
    // device also sees block-layer readahead (128 KiB windows here), so a little more.
    assert!(
        traced_mib <= fsck_mib as f64 + 2.0 && traced_mib >= 0.8 * fsck_mib as f64 - 1.0,
        "trace {traced_mib:.2} MiB vs e2fsck {fsck_mib} MiB"
    );
}

#[test]
fn traced_e2fsck_without_prefetch_tags_each_read_with_its_pass() {
    if !root_or_skip("traced_e2fsck_without_prefetch_tags_each_read_with_its_pass") {
        return;
    }
    // e2fsck of 2007 (1.40) had no metadata prefetch: each pass reads what it needs itself.
    // No block-layer read-ahead either: with 128 KiB of it, pass 1's inode-table reads
    // sometimes pulled in every directory block of this small file system, leaving pass 2
    // nothing to read (1 in ~10 runs), so "pass 2 reads" was not a property of the tagging.
    let steal = steal_ns();
    let traced = traced_fsck("fsck-nora.img", &["-E", "readahead_kb=0"], 0);
    let steal = steal_ns() - steal;
    let run = &traced.run;
    check_common(run, steal);
    // Pass 1 reads the inode tables (8 groups x 2 MiB), pass 2 directory blocks, pass 5 the
    // bitmaps; before pass 1 only the superblock, descriptors and journal superblock.
    assert!(
        read_bytes(run, "pass1") >= 16 << 20,
        "pass1 {}",
        read_bytes(run, "pass1")
    );
    assert!(read_bytes(run, "pass2") > 0);
    assert!(read_bytes(run, "pass5") > 0);
    assert!(
        read_bytes(run, "setup") < 1 << 20,
        "setup {}",
        read_bytes(run, "setup")
    );
    let pass1_mib = run.times.pass(1).unwrap().read_mib.unwrap() as f64;
    let traced_pass1_mib = read_bytes(run, "pass1") as f64 / (1 << 20) as f64;
    assert!(
        (traced_pass1_mib - pass1_mib).abs() <= 2.0,
        "{traced_pass1_mib} vs {pass1_mib}"
    );
}

#[test]
fn traced_e2fsck_with_its_default_prefetch_still_tags_every_pass() {
    if !root_or_skip("traced_e2fsck_with_its_default_prefetch_still_tags_every_pass") {
        return;
    }
    // e2fsck 1.47 prefetches (posix_fadvise) inode tables before announcing pass 1 and the
    // bitmaps at the end of pass 3: those reads carry the tag of where e2fsck issued them.
    let steal = steal_ns();
    let traced = traced_fsck("fsck-ra.img", &[], 128);
    let steal = steal_ns() - steal;
    check_common(&traced.run, steal);
    assert!(read_bytes(&traced.run, "pass1") > 0);
}

#[test]
fn e2fsck_on_a_corrupt_image_reports_errors_left() {
    if !root_or_skip("e2fsck_on_a_corrupt_image_reports_errors_left") {
        return;
    }
    let image = TempFile::create_sparse(&scratch("corrupt.img"), 256 << 20).unwrap();
    mkfs(FsKind::Ext3, image.path(), &["-b", "4096"]).unwrap();
    // Mark the root inode's directory block free in the bitmap: e2fsck -n finds and leaves it.
    sh(&format!(
        "debugfs -w -R 'freeb {}' {} 2>&1",
        sh(&format!(
            "debugfs -R 'bmap <2> 0' {} 2>/dev/null",
            image.path().display()
        ))
        .trim(),
        image.path().display()
    ));
    let dev = LoopDevice::attach(image.path(), true).unwrap();
    let run = run_e2fsck_traced(dev.path(), dev.dev(), &FsckOptions::default()).unwrap();
    assert_eq!(run.exit_code, 4, "{}", run.stdout);
    assert!(!run.clean());
}

/// Sectors of the pass-5 bitmap reads, in issue order.
fn bitmap_read_sectors(image_bytes: u64, single_cpu: bool) -> Vec<u64> {
    // Many small groups (-g 8192 with 4 KiB blocks = 32 MiB), so there are many bitmaps.
    let image =
        TempFile::create_sparse(&scratch(&format!("bitmaps-{single_cpu}.img")), image_bytes)
            .unwrap();
    mkfs(FsKind::Ext3, image.path(), &["-b", "4096", "-g", "8192"]).unwrap();
    let dev = LoopDevice::attach(image.path(), true).unwrap();
    dev.set_scheduler_none().unwrap();
    let opts = FsckOptions {
        extra_args: vec!["-E".into(), "readahead_kb=0".into()],
        single_cpu,
        ..FsckOptions::default()
    };
    let run = run_e2fsck_traced(dev.path(), dev.dev(), &opts).unwrap();
    assert!(run.clean(), "{}{}", run.stdout, run.stderr);
    let trace = &run.capture.trace;
    trace
        .requests
        .iter()
        .filter(|r| r.op == Op::Read && trace.tag_name(r.tag) == "pass5")
        .map(|r| r.sector)
        .collect()
}

#[test]
fn single_cpu_e2fsck_reads_the_bitmaps_in_one_sweep() {
    if !root_or_skip("single_cpu_e2fsck_reads_the_bitmaps_in_one_sweep") {
        return;
    }
    let cpus_before = std::fs::read_to_string("/sys/devices/system/cpu/possible").unwrap();
    let one = bitmap_read_sectors(4 << 30, true);
    assert!(
        one.len() >= 2 * 100,
        "expected the bitmaps of 128 groups, got {} reads",
        one.len()
    );
    let backwards = one.windows(2).filter(|w| w[1] < w[0]).count();
    assert_eq!(
        backwards, 0,
        "single-threaded bitmap reads go forward only: {one:?}"
    );
    // The namespace was the child's: this process still sees every CPU.
    assert_eq!(
        std::fs::read_to_string("/sys/devices/system/cpu/possible").unwrap(),
        cpus_before
    );
    // Without it, on a machine with more than one CPU, libext2fs's threads usually
    // interleave; not always (one thread may finish its half before the other starts: seen
    // once in some ten runs on a quiet 2-CPU machine), so only that it reads every group's
    // bitmaps too is asserted.
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    if cpus > 1 {
        let many = bitmap_read_sectors(4 << 30, false);
        let backwards = many.windows(2).filter(|w| w[1] < w[0]).count();
        eprintln!("with every CPU: {backwards} reads went backwards");
        assert!(
            many.len() >= 2 * 100,
            "expected the bitmaps of 128 groups, got {} reads",
            many.len()
        );
    }
}

/// (op, sector, sectors) of each request, in issue order: what the stream asked of the disk.
fn stream(run: &layoutlab_rig::FsckRun) -> Vec<(u8, u64, u32)> {
    run.capture
        .trace
        .requests
        .iter()
        .map(|r| (r.op as u8, r.sector, r.sectors))
        .collect()
}

/// `e2fsck -fn -E readahead_kb=0` (the fsck experiments' arguments) through a read-only loop
/// device over `file`, presenting `queue`, with the device's cache dropped.
fn fsck_through(file: &std::path::Path, queue: &QueueSpec) -> layoutlab_rig::FsckRun {
    let dev = LoopDevice::attach_presenting(file, true, queue).unwrap();
    dev.flush_buffers().unwrap();
    let opts = FsckOptions {
        extra_args: vec!["-E".into(), "readahead_kb=0".into()],
        ..FsckOptions::default()
    };
    let run = run_e2fsck_traced(dev.path(), dev.dev(), &opts).unwrap();
    assert!(run.clean(), "e2fsck exit {}: {}", run.exit_code, run.stdout);
    run
}

/// Issue 25: a loop device inherits `rotational` from its backing file's device (the issue
/// saw e2fsck's stream differ between tmpfs and the VM's disk; docs/rig.md has what was
/// measured since). Presenting the modelled disk's queue makes a capture of
/// one image on tmpfs and on a disk file read the same sectors (and, on a quiet machine, in
/// the same requests); the non-rotational capture of the same image is run and printed.
#[test]
fn a_capture_on_tmpfs_and_on_a_disk_file_give_the_same_requests() {
    if !root_or_skip("a_capture_on_tmpfs_and_on_a_disk_file_give_the_same_requests") {
        return;
    }
    let on_disk = populated_ext3("queue-disk");
    {
        // A few large files: their indirect blocks are what e2fsck's pass 1 reads between
        // inode tables, where the two queues' streams part (metacluster-fsck).
        let dev = LoopDevice::attach(on_disk.path(), false).unwrap();
        let mount = Mount::new(dev.path(), None, "ext3", false, "").unwrap();
        for f in 0..6 {
            std::fs::write(mount.target().join(format!("big{f}")), vec![1u8; 24 << 20]).unwrap();
        }
    }
    let shm = std::path::Path::new("/dev/shm");
    assert!(
        layoutlab_rig::is_memory_fs(shm).unwrap(),
        "/dev/shm must be tmpfs for this test"
    );
    // What a plain attach inherits: the premise of the test, checked, not assumed.
    let inherited = |file: &std::path::Path| {
        let dev = LoopDevice::attach(file, true).unwrap();
        dev.queue().unwrap().rotational
    };
    assert!(
        inherited(on_disk.path()),
        "the temp dir {} must be on a rotational disk (a loop device over it inherits 1)",
        std::env::temp_dir().display()
    );
    let in_memory = TempFile::adopt(&shm.join(format!("rig-test-{}-queue", std::process::id())));
    let cp = std::process::Command::new("cp")
        .arg("--sparse=always")
        .arg(on_disk.path())
        .arg(in_memory.path())
        .status()
        .unwrap();
    assert!(cp.success());
    assert!(
        !inherited(in_memory.path()),
        "a loop device over tmpfs inherits 0"
    );

    // Read-ahead 0. Any process's drop_caches (other tests, other runs on the machine) can
    // evict the device's cache under e2fsck, which then reads a block again; with read-ahead
    // on, that re-read starts a new read-ahead window and other sectors are read, so with 128
    // KiB this comparison failed twice in about seventeen runs on a loaded machine. With 0 a
    // re-read reads the same sectors: the request lists may differ by a few re-reads (up to 5
    // of 4,415 in six runs here), the sectors read may not.
    let disk = QueueSpec {
        rotational: Some(true),
        read_ahead_kb: Some(0),
        max_sectors_kb: Some(512),
        logical_block_bytes: Some(512),
    };
    let from_disk = fsck_through(on_disk.path(), &disk);
    let from_memory = fsck_through(in_memory.path(), &disk);
    let from_memory_ssd = fsck_through(
        in_memory.path(),
        &QueueSpec {
            rotational: Some(false),
            ..disk.clone()
        },
    );
    let queue = from_memory.capture.trace.queue.clone().expect("recorded");
    assert!(queue.rotational && queue.read_ahead_kb == 0 && queue.max_sectors_kb == 512);
    assert_eq!(queue.scheduler, "none");
    assert_eq!(queue.logical_block_bytes, 512);
    assert_eq!(from_disk.capture.trace.queue, Some(queue));
    // Sorted: e2fsck's last reads (superblock and descriptor backups) are issued together
    // and reach the queue in either order; the set of requests is what must agree.
    let sorted = |run: &layoutlab_rig::FsckRun| {
        let mut s = stream(run);
        s.sort();
        s
    };
    let (a, b, c) = (
        sorted(&from_disk),
        sorted(&from_memory),
        sorted(&from_memory_ssd),
    );
    eprintln!(
        "requests: disk file {}, tmpfs {}, tmpfs non-rotational {}",
        a.len(),
        b.len(),
        c.len()
    );
    assert!(a.len() > 100, "{} requests", a.len());
    // The sectors read, as merged ranges: what the stream asked of the disk, whatever the
    // requests' boundaries and re-reads. Compared exactly; the request lists are printed.
    let covered = |s: &[(u8, u64, u32)]| -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for &(_, start, len) in s {
            let end = start + u64::from(len);
            match out.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => out.push((start, end)),
            }
        }
        out
    };
    eprintln!("same request lists: {}", a == b);
    if covered(&a) != covered(&b) {
        let (ca, cb) = (covered(&a), covered(&b));
        let only_a: Vec<_> = ca.iter().filter(|r| !cb.contains(r)).take(10).collect();
        let only_b: Vec<_> = cb.iter().filter(|r| !ca.contains(r)).take(10).collect();
        let sum = |c: &[(u64, u64)]| c.iter().map(|(s, e)| e - s).sum::<u64>();
        eprintln!(
            "covered differ: disk {} sectors, tmpfs {}; only disk {only_a:?}; only tmpfs {only_b:?}",
            sum(&ca),
            sum(&cb)
        );
    }
    assert_eq!(
        covered(&a),
        covered(&b),
        "same image, same queue, different backing: the sectors read differ"
    );
    // On this small image the flag does not change the sectors e2fsck reads either (docs/rig.md):
    // printed, not asserted.
    eprintln!(
        "non-rotational: same request list {}, same sectors {}",
        b == c,
        covered(&b) == covered(&c)
    );
}
