//! The KernelFs harness on every kernel file system at small size: made on zram under a loop
//! device, traced by named phases whose bytes match the device's counters, and torn down
//! without a trace.

mod common;

use common::*;
use layoutlab_rig::{Backing, FsKind, KernelFs, KernelFsOptions, TraceOptions};
use std::io::Write;

const MIB: u64 = 1 << 20;

/// The zram devices this process made are gone. Other processes (other engineers' runs, CI's
/// other test binaries) make and remove zram devices at any time, so the machine's list is not
/// compared: each device this test used is absent, or its number now serves another process
/// (a rig record `layoutlab-zram-PID-ID` of another PID), and no record of this process is left.
fn assert_own_zram_gone(ids: &[u32]) {
    let me = std::process::id();
    let records: Vec<String> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("layoutlab-zram-"))
        .collect();
    let mine = format!("layoutlab-zram-{me}-");
    assert!(
        !records.iter().any(|r| r.starts_with(&mine)),
        "a zram record of this process was left: {records:?}"
    );
    for id in ids {
        let reused = records
            .iter()
            .any(|r| r.ends_with(&format!("-{id}")) && !r.starts_with(&mine));
        assert!(
            !std::path::Path::new(&format!("/sys/block/zram{id}")).exists() || reused,
            "a zram device was left: zram{id}"
        );
    }
}

/// The tests of this binary run at once and wait for each other on the rig's lock, which is
/// released when a `KernelFs` drops: another test may then take the loop device just freed
/// before this one checks that it is gone. Each test holds this for its whole body.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

/// Write a 16 MiB file of non-zero bytes, remount, read it back, delete it: each a traced
/// phase. The read phase must read the whole file from the device (the caches were dropped),
/// the write phase write at least all of it, and nothing may be left afterwards.
/// Returns the number of the zram device that backed the file system.
fn write_remount_read_delete(kind: FsKind, mkfs_args: &[&str]) -> u32 {
    let opts = KernelFsOptions {
        kind,
        mkfs_args: mkfs_args.iter().map(|s| s.to_string()).collect(),
        mount_options: String::new(),
        // mkfs.xfs refuses file systems under 300 MB.
        bytes: 512 * MIB,
        backing: Backing::Zram,
        resident_bytes: 64 * MIB,
        queue: layoutlab_rig::QueueSpec {
            read_ahead_kb: Some(128),
            ..layoutlab_rig::QueueSpec::default()
        },
    };
    let mut fs = KernelFs::create(&opts).unwrap();
    let mount_point = fs.mount_point().to_path_buf();
    let loop_path = fs.device().path().to_path_buf();
    let file = mount_point.join("data");
    let backing_attr = format!("/sys/block/loop{}/loop/backing_file", fs.device().number());
    let backing = std::fs::read_to_string(&backing_attr).unwrap();
    assert!(backing.starts_with("/dev/zram"), "{backing}");
    let zram_id: u32 = backing
        .trim()
        .trim_start_matches("/dev/zram")
        .parse()
        .unwrap();
    let file_bytes = 16 * MIB;
    let mut run = fs.trace(&TraceOptions::default()).unwrap();
    run.phase("write", |fs| {
        let mut f = std::fs::File::create(fs.mount_point().join("data")).unwrap();
        let block: Vec<u8> = (0..MIB).map(|i| (i % 251) as u8 + 1).collect();
        for _ in 0..file_bytes / MIB {
            f.write_all(&block).unwrap();
        }
        f.sync_all().unwrap();
        Ok(())
    })
    .unwrap();
    run.phase("remount", |fs| fs.remount()).unwrap();
    let read = run
        .phase("read", |fs| {
            Ok(std::fs::read(fs.mount_point().join("data")).unwrap().len() as u64)
        })
        .unwrap();
    assert_eq!(read, file_bytes);
    run.phase("delete", |fs| {
        std::fs::remove_file(fs.mount_point().join("data")).unwrap();
        Ok(())
    })
    .unwrap();
    let trace = run.finish().unwrap();
    let names: Vec<&str> = trace.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["write", "remount", "read", "delete"]);
    let w = &trace.phases[0];
    assert!(
        w.sectors_written >= file_bytes / 512,
        "{kind:?} write phase wrote {} sectors",
        w.sectors_written
    );
    let r = &trace.phases[2];
    assert!(
        r.sectors_read >= file_bytes / 512,
        "{kind:?} read phase read {} sectors",
        r.sectors_read
    );
    // Every request of the capture belongs to a phase (none before the first mark).
    assert!(trace.capture.trace.requests.iter().all(|q| q.tag != 0));
    // The thread that ran the phases was followed: every request carries its CPU time.
    let cpu = trace
        .capture
        .cpu
        .as_ref()
        .expect("CPU accounting of the phases' thread");
    assert_eq!(cpu.roots.len(), 1, "{kind:?}: {:?}", cpu.roots);
    assert!(cpu.total_ns > 0, "{kind:?}: the phases used no CPU?");
    assert!(
        trace.capture.trace.has_cpu(),
        "{kind:?}: requests without CPU stamps"
    );
    drop(fs);
    assert!(!is_mounted(&mount_point), "{kind:?} left a mount");
    assert!(!file.exists());
    // The loop device is gone (its number may already serve someone else: compare backing).
    let backing_now = std::fs::read_to_string(&backing_attr).unwrap_or_default();
    assert_ne!(
        backing_now,
        backing,
        "{kind:?} left {}",
        loop_path.display()
    );
    zram_id
}

#[test]
fn every_kernel_fs_runs_traced_phases_and_leaves_nothing() {
    let _one = one_at_a_time();
    if !root_or_skip("every_kernel_fs_runs_traced_phases_and_leaves_nothing") {
        return;
    }
    let ids = [
        write_remount_read_delete(FsKind::Ext3, &[]),
        write_remount_read_delete(FsKind::Ext4, &[]),
        write_remount_read_delete(FsKind::Xfs, &[]),
        write_remount_read_delete(FsKind::Btrfs, &["-m", "single", "-d", "single"]),
    ];
    assert_own_zram_gone(&ids);
}

#[test]
fn sparse_file_backing_too() {
    let _one = one_at_a_time();
    if !root_or_skip("sparse_file_backing_too") {
        return;
    }
    let dir = scratch("kfs-sparse");
    std::fs::create_dir_all(&dir).unwrap();
    let opts = KernelFsOptions {
        kind: FsKind::Ext4,
        mkfs_args: vec![],
        mount_options: String::new(),
        bytes: 256 * MIB,
        backing: Backing::SparseFile(dir.clone()),
        resident_bytes: 64 * MIB,
        queue: layoutlab_rig::QueueSpec::default(),
    };
    let mut fs = KernelFs::create(&opts).unwrap();
    let mut run = fs.trace(&TraceOptions::default()).unwrap();
    run.phase("mkdir", |fs| {
        for i in 0..100 {
            std::fs::create_dir(fs.mount_point().join(format!("d{i}"))).unwrap();
        }
        Ok(())
    })
    .unwrap();
    let t = run.finish().unwrap();
    assert!(t.phases[0].sectors_written > 0);
    drop(fs);
    assert!(
        std::fs::read_dir(&dir).unwrap().next().is_none(),
        "the sparse image was left"
    );
    std::fs::remove_dir(&dir).unwrap();
}

#[test]
fn too_little_disk_space_is_refused_before_anything_is_made() {
    let _one = one_at_a_time();
    if !root_or_skip("too_little_disk_space_is_refused_before_anything_is_made") {
        return;
    }
    let dir = scratch("kfs-nospace");
    std::fs::create_dir_all(&dir).unwrap();
    let opts = KernelFsOptions {
        kind: FsKind::Ext4,
        mkfs_args: vec![],
        mount_options: String::new(),
        bytes: 1 << 50,
        backing: Backing::SparseFile(dir.clone()),
        resident_bytes: 1 << 50,
        queue: layoutlab_rig::QueueSpec::default(),
    };
    let err = KernelFs::create(&opts).unwrap_err().to_string();
    assert!(err.contains("space") || err.contains("free"), "{err}");
    assert!(std::fs::read_dir(&dir).unwrap().next().is_none());
    std::fs::remove_dir(&dir).unwrap();
}
