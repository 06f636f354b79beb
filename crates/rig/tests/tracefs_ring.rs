//! The ring buffer of a capture, sized by `TraceOptions::sized_for`'s rule, holds a real
//! e2fsck's whole capture even when nothing reads it until the end; a ring a quarter that size
//! loses events, and the loss is counted (the experiments refuse such a capture).
//!
//! The captures run with `drain: false`, so that what the ring holds does not depend on how
//! soon the streaming thread gets a CPU on a loaded machine: the outcome is the kernel's
//! alone and the test is deterministic.

mod common;

use common::*;
use layoutlab_rig::{
    mkfs, run_e2fsck_traced, ExpectedEvents, FsKind, FsckOptions, LoopDevice, TempFile,
    TraceOptions,
};
use std::process::Command;

/// A 1 GiB ext4 image (mke2fs -d) of 1,500 directories of one small file each: e2fsck writes a
/// progress line per directory block in pass 2 and per directory in pass 3.
fn tree_image() -> TempFile {
    let tree = scratch("ring-tree");
    for d in 0..1500 {
        let dir = tree.join(format!("d{:02}/e{d}", d % 30));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("f"), [d as u8; 100]).unwrap();
    }
    let image = TempFile::create_sparse(&scratch("ring.img"), 1 << 30).unwrap();
    let tree_text = tree.to_string_lossy().into_owned();
    mkfs(
        FsKind::Ext4,
        image.path(),
        &["-b", "4096", "-d", &tree_text],
    )
    .unwrap();
    std::fs::remove_dir_all(&tree).unwrap();
    image
}

/// The progress lines `e2fsck -fn -C 3` writes on `image` (untraced).
fn progress_lines(image: &std::path::Path) -> u64 {
    let out = scratch("ring-progress.txt");
    let status = Command::new("sh")
        .args(["-c", "e2fsck -fnv -tt -C 3 \"$0\" 3>\"$1\" >/dev/null 2>&1"])
        .arg(image)
        .arg(&out)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0), "e2fsck -fn on the fresh image");
    let lines = std::fs::read_to_string(&out).unwrap().lines().count() as u64;
    std::fs::remove_file(&out).unwrap();
    lines
}

fn undrained_check(
    image: &std::path::Path,
    buffer_size_kb: u32,
) -> layoutlab_rig::Result<layoutlab_rig::FsckRun> {
    let dev = LoopDevice::attach(image, true).unwrap();
    dev.set_scheduler_none().unwrap();
    dev.flush_buffers().unwrap();
    let opts = FsckOptions {
        trace: TraceOptions {
            buffer_size_kb,
            drain: false,
            cpu_accounting: false,
            ..TraceOptions::default()
        },
        ..FsckOptions::default()
    };
    let run = run_e2fsck_traced(dev.path(), dev.dev(), &opts)?;
    assert!(run.clean(), "e2fsck exit {}: {}", run.exit_code, run.stdout);
    Ok(run)
}

#[test]
fn a_ring_sized_by_the_rule_holds_an_undrained_check_and_a_quarter_of_it_overruns() {
    if !root_or_skip(
        "a_ring_sized_by_the_rule_holds_an_undrained_check_and_a_quarter_of_it_overruns",
    ) {
        return;
    }
    layoutlab_rig::cleanup::install_signal_handlers();
    let image = tree_image();
    let lines = progress_lines(image.path());
    // 1,500 directories and more than 1,500 directory blocks: passes 2 and 3 dominate.
    assert!(lines > 3000, "{lines} progress lines");

    // The requests of the check, from a drained capture with the default ring.
    let requests = {
        let dev = LoopDevice::attach(image.path(), true).unwrap();
        dev.set_scheduler_none().unwrap();
        dev.flush_buffers().unwrap();
        let run = run_e2fsck_traced(dev.path(), dev.dev(), &FsckOptions::default()).unwrap();
        assert_eq!(run.capture.lost_events, 0);
        run.capture.trace.requests.len() as u64
    };
    // The rig's own marks: `setup` and each tag it writes (fewer than 16).
    let expected = ExpectedEvents {
        markers: lines + 16,
        requests,
    };
    let sized = TraceOptions {
        buffer_size_kb: 4,
        ..TraceOptions::default()
    }
    .sized_for(expected)
    .unwrap();
    let sized_kb = sized.buffer_size_kb;
    assert_eq!(u64::from(sized_kb), expected.ring_bytes().div_ceil(1024));
    eprintln!("{lines} progress lines, {requests} requests: ring of {sized_kb} KiB per CPU");

    // Read only at the end: every event still there, every pass tagged.
    let held = undrained_check(image.path(), sized_kb).unwrap();
    assert_eq!(held.capture.lost_events, 0, "the sized ring overran");
    let passes: Vec<u32> = held.progress.iter().map(|p| p.pass).collect();
    assert_eq!(passes, vec![1, 2, 3, 4, 5]);
    assert!(!held.capture.trace.requests.is_empty());

    // A quarter of it, read only at the end: the kernel overwrote events, and the capture
    // says so: the reader refuses the text's `[LOST N EVENTS]` line, or the count is set.
    match undrained_check(image.path(), sized_kb / 4) {
        Err(e) => assert!(e.to_string().contains("ring buffer overrun"), "{e}"),
        Ok(run) => assert!(
            run.capture.lost_events > 0,
            "a ring of {} KiB held everything",
            sized_kb / 4
        ),
    }
}
