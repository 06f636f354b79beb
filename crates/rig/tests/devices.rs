//! Loop and zram devices, mounts and mkfs leave nothing behind; readahead reaches the requests.

mod common;

use common::*;
use layoutlab_rig::{
    mkfs, FsKind, LoopDevice, Mount, TempFile, TraceOptions, TracefsSession, Zram,
};
use layoutlab_trace::Op;

#[test]
fn loop_attach_then_drop_leaves_no_device() {
    if !root_or_skip("loop_attach_then_drop_leaves_no_device") {
        return;
    }
    let image = TempFile::create_sparse(&scratch("loop.img"), 64 << 20).unwrap();
    let dev = LoopDevice::attach(image.path(), true).unwrap();
    let listed = loops_backed_by(image.path());
    assert!(
        listed.contains(&dev.path().display().to_string()),
        "{listed}"
    );
    let sysfs = std::fs::read_to_string(format!("/sys/block/loop{}/dev", dev.number())).unwrap();
    assert_eq!(sysfs.trim(), format!("{}:{}", dev.dev().0, dev.dev().1));
    assert_eq!(
        std::fs::read_to_string(format!("/sys/block/loop{}/ro", dev.number()))
            .unwrap()
            .trim(),
        "1"
    );
    dev.set_scheduler_none().unwrap();
    drop(dev);
    assert_eq!(loops_backed_by(image.path()), "");
}

#[test]
fn mkfs_and_mount_every_kind_then_nothing_is_left() {
    if !root_or_skip("mkfs_and_mount_every_kind_then_nothing_is_left") {
        return;
    }
    for kind in FsKind::ALL {
        // XFS and btrfs refuse very small file systems.
        let image =
            TempFile::create_sparse(&scratch(&format!("{}.img", kind.name())), 320 << 20).unwrap();
        let dev = LoopDevice::attach(image.path(), false).unwrap();
        mkfs(kind, dev.path(), &[]).unwrap();
        let mount = Mount::new(dev.path(), None, kind.name(), false, "").unwrap();
        let target = mount.target().to_path_buf();
        assert!(is_mounted(&target), "{}", kind.name());
        std::fs::write(target.join("hello"), b"hello").unwrap();
        drop(mount);
        assert!(!is_mounted(&target), "{} still mounted", kind.name());
        assert!(
            !target.exists(),
            "mount point of {} not removed",
            kind.name()
        );
        drop(dev);
        assert_eq!(loops_backed_by(image.path()), "", "{}", kind.name());
    }
}

#[test]
fn zram_is_created_and_removed() {
    if !root_or_skip("zram_is_created_and_removed") {
        return;
    }
    let zram = match Zram::create(64 << 20) {
        Ok(z) => z,
        Err(e) => {
            eprintln!("SKIP zram: {e}");
            return;
        }
    };
    let path = zram.path().to_path_buf();
    assert!(path.exists());
    let size: u64 = std::fs::read_to_string(format!(
        "/sys/block/{}/size",
        path.file_name().unwrap().to_string_lossy()
    ))
    .unwrap()
    .trim()
    .parse()
    .unwrap();
    assert_eq!(size * 512, 64 << 20);
    drop(zram);
    assert!(!path.exists(), "{} still exists", path.display());
}

/// Largest read request, in sectors, of `dd` reading the device with `flags`.
fn max_read_sectors(dev: &LoopDevice, dd_args: &str) -> (u32, usize) {
    dev.flush_buffers().unwrap();
    let session = TracefsSession::start(dev.dev(), &TraceOptions::default()).unwrap();
    sh(&format!(
        "dd if={} of=/dev/null {dd_args} status=none",
        dev.path().display()
    ));
    let capture = session.stop().unwrap();
    assert_eq!(capture.lost_events, 0);
    let reads: Vec<_> = capture
        .trace
        .requests
        .iter()
        .filter(|r| r.op == Op::Read)
        .collect();
    assert!(!reads.is_empty(), "no read traced for dd {dd_args}");
    let max = reads.iter().map(|r| r.sectors).max().unwrap();
    eprintln!("dd {dd_args}: {} reads, largest {max} sectors", reads.len());
    (max, reads.len())
}

#[test]
fn read_ahead_kb_bounds_buffered_requests_and_not_direct_ones() {
    if !root_or_skip("read_ahead_kb_bounds_buffered_requests_and_not_direct_ones") {
        return;
    }
    let image = TempFile::create_sparse(&scratch("ra.img"), 64 << 20).unwrap();
    let dev = LoopDevice::attach(image.path(), true).unwrap();
    dev.set_scheduler_none().unwrap();

    dev.set_read_ahead_kb(16).unwrap();
    assert_eq!(dev.read_ahead_kb().unwrap(), 16);
    let (small_max, small_count) = max_read_sectors(&dev, "bs=4k count=2048");
    assert!(
        small_max <= 32,
        "16 KiB readahead but a {small_max}-sector request"
    );

    dev.set_read_ahead_kb(512).unwrap();
    let (big_max, big_count) = max_read_sectors(&dev, "bs=4k count=2048");
    assert!(
        big_max > 64,
        "512 KiB readahead but requests of at most {big_max} sectors"
    );
    assert!(
        big_count < small_count,
        "{big_count} requests with big readahead vs {small_count}"
    );

    // O_DIRECT bypasses readahead: 64 KiB reads stay 128 sectors however small readahead is.
    dev.set_read_ahead_kb(16).unwrap();
    let (direct_max, direct_count) = max_read_sectors(&dev, "bs=64k count=64 iflag=direct");
    assert_eq!(direct_max, 128);
    assert_eq!(direct_count, 64);
}
