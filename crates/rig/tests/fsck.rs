//! The real e2fsck, traced on a loop device: requests tagged by pass, `-tt` parsed, bytes agree.

mod common;

use common::*;
use layoutlab_rig::{mkfs, run_e2fsck_traced, FsKind, FsckOptions, LoopDevice, Mount, TempFile};
use layoutlab_trace::Op;

/// A 1 GiB ext3 image with a few hundred files and directories (so pass 2 has work).
fn populated_ext3(name: &str) -> TempFile {
    let image = TempFile::create_sparse(&scratch(name), 1 << 30).unwrap();
    mkfs(FsKind::Ext3, image.path(), &["-b", "4096"]).unwrap();
    let dev = LoopDevice::attach(image.path(), false).unwrap();
    let mount = Mount::new(dev.path(), None, "ext3", false, "").unwrap();
    for d in 0..20 {
        let dir = mount.target().join(format!("d{d}"));
        std::fs::create_dir(&dir).unwrap();
        for f in 0..20 {
            // Up to 80 KiB: past the 12 direct blocks, so files have indirect blocks.
            std::fs::write(dir.join(format!("f{f}")), vec![d as u8; 4096 * (f + 1)]).unwrap();
        }
    }
    drop(mount);
    drop(dev);
    image
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
fn check_common(run: &layoutlab_rig::FsckRun) {
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
    // leaves out (a loaded machine once made that 10.6 ms over). Not asserted: that it is
    // all of it. With two traced e2fsck at once (the tests of this file), the scheduler's
    // account once came to 26 ms against -tt's 80 ms; alone, and at experiment scale, the two
    // agree within 0.3% (docs/replay.md, "Known limits": an open finding).
    assert!(cpu.total_ns > 0, "no CPU accounted for e2fsck");
    assert!(
        cpu.during_trace_ns() as f64 <= tt_ns + 10e6,
        "followed CPU during the trace {} ns is more than e2fsck -tt's {tt_ns} ns",
        cpu.during_trace_ns()
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
    let traced = traced_fsck("fsck-nora.img", &["-E", "readahead_kb=0"], 0);
    let run = &traced.run;
    check_common(run);
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
    let traced = traced_fsck("fsck-ra.img", &[], 128);
    check_common(&traced.run);
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
