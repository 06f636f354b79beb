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

#[test]
fn max_sectors_kb_caps_request_size() {
    if !root_or_skip("max_sectors_kb_caps_request_size") {
        return;
    }
    let image = TempFile::create_sparse(&scratch("maxsec.img"), 64 << 20).unwrap();
    let dev = LoopDevice::attach(image.path(), true).unwrap();
    let before_max = std::fs::read_to_string(format!(
        "/sys/block/loop{}/queue/max_sectors_kb",
        dev.number()
    ))
    .unwrap();
    dev.set_max_sectors_kb(64).unwrap();
    let (max, count) = max_read_sectors(&dev, "bs=1M count=4 iflag=direct");
    assert_eq!(max, 128, "1 MiB direct reads split at 64 KiB");
    assert_eq!(count, 64);
    // The settings go back to what loopN had when it is detached.
    let queue = format!("/sys/block/loop{}/queue", dev.number());
    drop(dev);
    let max_now = std::fs::read_to_string(format!("{queue}/max_sectors_kb")).unwrap();
    assert_eq!(max_now.trim(), before_max.trim());
}

#[test]
fn long_capture_streams_without_losing_events() {
    if !root_or_skip("long_capture_streams_without_losing_events") {
        return;
    }
    // 60 000 requests = 120 000 events, far more than a 256 KiB-per-CPU ring holds: only the
    // streaming of trace_pipe keeps them all.
    let image = TempFile::create_sparse(&scratch("long.img"), 256 << 20).unwrap();
    let dev = LoopDevice::attach(image.path(), true).unwrap();
    let opts = TraceOptions {
        // 60000 requests make about 13 MB of event text, six times this buffer: the capture
        // must stream. (256 KiB lost events when the two CPUs were busy with other tests.)
        buffer_size_kb: 2048,
        ..TraceOptions::default()
    };
    let session = TracefsSession::start(dev.dev(), &opts).unwrap();
    sh(&format!(
        "dd if={} of=/dev/null bs=4k count=60000 iflag=direct status=none",
        dev.path().display()
    ));
    let capture = session.stop().unwrap();
    assert_eq!(capture.lost_events, 0);
    assert_eq!(capture.trace.requests.len(), 60000);
    assert_eq!(capture.incomplete_requests, 0);
    let sectors: Vec<u64> = capture.trace.requests.iter().map(|r| r.sector).collect();
    assert!(
        sectors.windows(2).all(|w| w[1] == w[0] + 8),
        "sequential 4 KiB reads"
    );
}

/// A loop device presents the queue it is asked for, whatever its backing inherits, and a
/// trace of it records that queue. Writing `rotational` resets the read-ahead on this kernel
/// (128 KiB became 1024): the read-ahead must still be the one asked for.
#[test]
fn a_loop_device_presents_the_queue_asked_and_the_trace_records_it() {
    if !root_or_skip("a_loop_device_presents_the_queue_asked_and_the_trace_records_it") {
        return;
    }
    let image = TempFile::create_sparse(&scratch("present.img"), 64 << 20).unwrap();
    for rotational in [false, true] {
        let asked = layoutlab_rig::QueueSpec {
            rotational: Some(rotational),
            read_ahead_kb: Some(128),
            max_sectors_kb: Some(512),
            logical_block_bytes: Some(4096),
        };
        let dev = LoopDevice::attach_presenting(image.path(), true, &asked).unwrap();
        let q = dev.queue().unwrap();
        assert_eq!(q.rotational, rotational);
        assert_eq!((q.read_ahead_kb, q.max_sectors_kb), (128, 512), "{q:?}");
        assert_eq!(q.scheduler, "none");
        // The loop driver gives physical = logical; it cannot be set apart.
        assert_eq!(
            (q.logical_block_bytes, q.physical_block_bytes),
            (4096, 4096)
        );
        let session = TracefsSession::start(dev.dev(), &TraceOptions::default()).unwrap();
        sh(&format!(
            "dd if={} of=/dev/null bs=64k count=4 iflag=direct status=none",
            dev.path().display()
        ));
        let capture = session.stop().unwrap();
        assert_eq!(capture.trace.requests.len(), 4);
        assert_eq!(capture.trace.queue.as_ref(), Some(&q));
    }
    // Bad input: a clear error, and no loop device left over the file.
    let bad = layoutlab_rig::QueueSpec {
        logical_block_bytes: Some(1000),
        ..Default::default()
    };
    let e = LoopDevice::attach_presenting(image.path(), true, &bad).unwrap_err();
    assert!(e.to_string().contains("power of two"), "{e}");
    assert_eq!(loops_backed_by(image.path()), "");
}

/// `layoutlab clean` of a SIGKILLed run: the zram device is still open for a moment (the loop
/// device on it was just detached, lazily), so its removal waits for the last opener instead of
/// failing with EBUSY (as a CI run's did, leaving the device with no record to find it by); and
/// the record is never removed while its device is there.
#[test]
fn a_stale_zram_device_open_for_a_moment_is_removed_and_its_record_outlives_it() {
    use layoutlab_rig::stale::{self, StaleKind};
    if !root_or_skip("a_stale_zram_device_open_for_a_moment_is_removed_and_its_record_outlives_it")
    {
        return;
    }
    let dir = scratch("stale-zram");
    std::fs::create_dir_all(&dir).unwrap();
    // A process that has exited: the record's owner is dead.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    let id: u32 = std::fs::read_to_string("/sys/class/zram-control/hot_add")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let size = 16u64 << 20;
    std::fs::write(format!("/sys/block/zram{id}/disksize"), size.to_string()).unwrap();
    let record = dir.join(format!("layoutlab-zram-{pid}-{id}"));
    std::fs::write(&record, format!("{size}\n")).unwrap();
    let found = stale::find(&dir).unwrap();
    let zram = found
        .iter()
        .find(|s| s.kind == StaleKind::Zram)
        .unwrap_or_else(|| panic!("no stale zram in {found:?}"))
        .clone();
    assert_eq!(
        zram.path,
        std::path::PathBuf::from(format!("/dev/zram{id}"))
    );
    let rec = found
        .iter()
        .find(|s| s.kind == StaleKind::TempPath && s.path == record)
        .unwrap_or_else(|| panic!("the record is no temp path in {found:?}"))
        .clone();
    // While the device is there, its record stays.
    let e = stale::remove(&rec).unwrap_err().to_string();
    assert!(e.contains(&format!("/dev/zram{id}")), "{e}");
    assert!(record.exists());
    let open = std::fs::File::open(format!("/dev/zram{id}")).unwrap();
    let holder = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(700));
        drop(open);
    });
    let t0 = std::time::Instant::now();
    stale::remove(&zram).unwrap();
    assert!(
        t0.elapsed() >= std::time::Duration::from_millis(500),
        "removed while open?"
    );
    holder.join().unwrap();
    assert!(!std::path::Path::new(&format!("/sys/block/zram{id}")).exists());
    stale::remove(&rec).unwrap();
    assert!(!record.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
