//! request-merging's capture on a stack whose bio and request sizes are known: `dd bs=1M`
//! O_DIRECT on the raw loop device with max_sectors_kb 256 submits 1 MiB bios, each split into
//! four 256 KiB requests; buffered writes submit 4 KiB bios that the queue merges into
//! requests no larger than 256 KiB. Root only (zram, loop devices, tracefs).

mod common;

use layoutlab_experiments::request_merging::{capture_target, histogram, RequestMergingSpec};
use layoutlab_trace::Op;

#[test]
fn known_bio_and_request_sizes_on_a_raw_loop_device() {
    if !common::root_or_skip(
        "known_bio_and_request_sizes_on_a_raw_loop_device",
        "zram, loop devices, tracefs",
    ) {
        return;
    }
    let spec = RequestMergingSpec {
        mib: 8,
        targets: vec!["raw".into()],
        modes: vec!["direct".into(), "buffered".into()],
        devices: vec!["ssd-sata-2010".into()],
        read_ahead_kb: 128,
        max_sectors_kb: 256,
    };
    let loops_before = loops();
    let phases = capture_target(&spec, "raw", None, "sata-500g-2008", None).unwrap();
    // Read at once: the capture has just released the rig lock, which other layoutlab runs
    // on this machine take before they make a zram-backed loop device of their own.
    let loops_after = loops();
    let names: Vec<(String, Op)> = phases.iter().map(|p| (p.mode.clone(), p.op)).collect();
    assert_eq!(
        names,
        vec![
            ("direct".into(), Op::Write),
            ("direct".into(), Op::Read),
            ("buffered".into(), Op::Write),
            ("buffered".into(), Op::Read)
        ]
    );
    for p in &phases {
        let bio_sectors: u64 = p.bios.requests.iter().map(|r| u64::from(r.sectors)).sum();
        let rq_sectors: u64 = p
            .requests
            .requests
            .iter()
            .map(|r| u64::from(r.sectors))
            .sum();
        // Every byte dd moved, the same at both levels (a buffered read also reads ahead
        // past the last block dd asked for, at most one 1 MiB window).
        assert_eq!(bio_sectors, rq_sectors, "{} {:?}", p.mode, p.op);
        if p.mode == "buffered" && p.op == Op::Read {
            assert!(
                (8 * 2048..=9 * 2048).contains(&bio_sectors),
                "{bio_sectors}"
            );
        } else {
            assert_eq!(bio_sectors, 8 * 2048, "{} {:?}", p.mode, p.op);
        }
        assert!(p.bios.requests.iter().all(|r| r.op == p.op));
        // No request exceeds max_sectors_kb.
        assert!(
            p.requests.requests.iter().all(|r| r.sectors <= 512),
            "{} {:?}",
            p.mode,
            p.op
        );
    }
    // O_DIRECT: one 1 MiB bio per dd block, four 256 KiB requests each (64 pages, within the
    // loop device's 128 segments, so max_sectors_kb alone splits them).
    for p in &phases[..2] {
        let bios: Vec<u32> = p.bios.requests.iter().map(|r| r.sectors).collect();
        let rqs: Vec<u32> = p.requests.requests.iter().map(|r| r.sectors).collect();
        assert_eq!(bios, vec![2048; 8], "{:?}", p.op);
        assert_eq!(rqs, vec![512; 32], "{:?}", p.op);
        assert!(p.bio_events.split >= 8, "{:?}", p.bio_events);
    }
    // Buffered writes: page-sized bios from writeback, merged into fewer, larger requests.
    let w = &phases[2];
    assert!(w.bios.requests.iter().all(|r| r.sectors == 8));
    assert_eq!(w.bios.requests.len(), 2048);
    assert!(
        w.requests.requests.len() <= 2048 / 8,
        "{}",
        w.requests.requests.len()
    );
    assert!(w.bio_events.merged > 1000, "{:?}", w.bio_events);
    let h = histogram(&w.bios);
    assert_eq!(h[0], 2048);
    // Teardown: every resource this process registered is released, and no zram-backed
    // loop device appeared that is still there (one another run had before may be gone).
    assert_eq!(layoutlab_rig::cleanup::pending(), Vec::<String>::new());
    let left: Vec<&String> = loops_after
        .iter()
        .filter(|l| !loops_before.contains(l))
        .collect();
    assert!(left.is_empty(), "loop devices left: {left:?}");
}

/// Loop devices bound to a backing file or device now.
fn loops() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/sys/block")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.starts_with("loop")
                && std::fs::read_to_string(format!("/sys/block/{n}/loop/backing_file"))
                    .map(|s| s.contains("zram"))
                    .unwrap_or(false)
        })
        .collect();
    v.sort();
    v
}
