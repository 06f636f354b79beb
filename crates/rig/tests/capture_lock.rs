//! A traced e2fsck and the page cache: no layoutlab run drops it under a capture, and the drops
//! of others are counted. Its own test binary: the test drops the page cache itself (as another
//! process would), which must not land in the captures of the tests beside it in a binary
//! (crates/rig/tests/fsck.rs compares what e2fsck read), and cargo runs binaries one at a time.

mod common;

use common::*;
use layoutlab_rig::{run_e2fsck_traced, FsckOptions, LoopDevice};

/// A traced e2fsck holds the rig lock shared from before it starts until it has exited, so no
/// layoutlab run drops the page cache under it (a drop in pass 2 makes e2fsck read blocks again
/// in new read-ahead windows: docs/fidelity.md, "The spread of one capture"); and it counts the
/// drops of processes that do not take the lock. Here the test is that other process: once
/// e2fsck runs, it drops the page cache itself (counted), then takes the lock exclusively, as
/// a run that drops caches does, and must get it only after e2fsck has exited.
#[test]
fn a_capture_keeps_layoutlabs_cache_drops_out_and_counts_the_others() {
    if !root_or_skip("a_capture_keeps_layoutlabs_cache_drops_out_and_counts_the_others") {
        return;
    }
    // 16 GiB: e2fsck reads ~300 MB of inode tables, a second or more.
    let image = populated_ext3_of("cache-drops", 16 << 30);
    let dev = LoopDevice::attach(image.path(), true).unwrap();
    dev.flush_buffers().unwrap();
    let dev_path = dev.path().to_path_buf();
    let (path, number) = (dev.path().to_path_buf(), dev.dev());
    let capture = std::thread::spawn(move || {
        let opts = FsckOptions {
            extra_args: vec!["-E".into(), "readahead_kb=0".into()],
            ..FsckOptions::default()
        };
        run_e2fsck_traced(&path, number, &opts).unwrap()
    });
    // Our e2fsck: the process whose command line names our loop device (it starts once the
    // capture has the lock, which may wait for another layoutlab run on this machine).
    let pid = loop {
        let found = std::fs::read_dir("/proc").unwrap().find_map(|e| {
            let e = e.ok()?;
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            (cmd.starts_with("e2fsck ") && cmd.contains(dev_path.to_str().unwrap())).then_some(pid)
        });
        if let Some(pid) = found {
            break pid;
        }
        assert!(
            !capture.is_finished(),
            "e2fsck on {} ended before it was seen running",
            dev_path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    for _ in 0..3 {
        std::fs::write("/proc/sys/vm/drop_caches", "1").unwrap();
    }
    let _exclusive = layoutlab_rig::RigLock::acquire().unwrap();
    let alive = std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|c| c.starts_with("e2fsck"));
    assert!(
        !alive,
        "the exclusive lock was taken while e2fsck {pid} still ran"
    );
    let run = capture.join().unwrap();
    assert!(run.clean(), "e2fsck exit {}: {}", run.exit_code, run.stdout);
    assert!(
        run.cache_drops >= 3,
        "3 drops made while e2fsck ran, {} counted",
        run.cache_drops
    );
}
