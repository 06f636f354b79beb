//! The fio v3 writer, proven with the real fio: fio replays a log we wrote against a plain
//! file and records every I/O it did in its completion-latency log (`write_lat_log` with
//! `log_offset=1`: `time_ms, clat_ns, ddir, bytes, offset, prio`); that record is our request
//! stream. (fio does not honour `write_iolog` while replaying.) Skips, with a note, where fio
//! is not installed.

use layoutlab_trace::{fio, read_bytes, Flags, Format, Op, ReadOptions, Request, Trace};
use rand::{Rng, SeedableRng};

fn fio_present() -> bool {
    std::process::Command::new("fio")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

#[test]
fn real_fio_replays_our_v3_log_request_for_request() {
    if !fio_present() {
        eprintln!("skipped: fio is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("disk.img");
    let span_bytes: u64 = 16 << 20;
    std::fs::File::create(&target)
        .unwrap()
        .set_len(span_bytes)
        .unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut t = Trace::default();
    let mut clock = 0u64;
    for _ in 0..200 {
        clock += rng.gen_range(0..50_000);
        let sectors = 8 * rng.gen_range(1..=16u32);
        let op = if rng.gen_bool(0.5) {
            Op::Read
        } else {
            Op::Write
        };
        let sector = 8 * rng.gen_range(0..(span_bytes / 512 - 128) / 8);
        t.requests.push(Request {
            issue_ns: clock,
            complete_ns: None,
            op,
            sector,
            sectors,
            flags: Flags::NONE,
            tag: 0,
            cpu: None,
        });
    }
    let name = target.to_str().unwrap();
    let ours = dir.path().join("ours.iolog");
    std::fs::write(&ours, fio::write_v3(&t, name).unwrap()).unwrap();
    let lat_prefix = dir.path().join("lat");
    let out = std::process::Command::new("fio")
        .arg("--name=replay")
        .arg(format!("--read_iolog={}", ours.display()))
        .arg(format!("--write_lat_log={}", lat_prefix.display()))
        .args([
            "--log_offset=1",
            "--ioengine=psync",
            "--iodepth=1",
            "--replay_no_stall=1",
        ])
        .arg("--output-format=terse")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "fio failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let clat = dir.path().join("lat_clat.1.log");
    let text = std::fs::read_to_string(&clat).unwrap();
    let done: Vec<(Op, u64, u32)> = text
        .lines()
        .map(|l| {
            let f: Vec<u64> = l.split(',').map(|x| x.trim().parse().unwrap()).collect();
            let op = match f[2] {
                0 => Op::Read,
                1 => Op::Write,
                other => panic!("unexpected ddir {other}"),
            };
            (op, f[4] / 512, (f[3] / 512) as u32)
        })
        .collect();
    let ours_read = read_bytes(
        std::fs::read(&ours).unwrap().as_slice(),
        "ours",
        Format::FioV3,
        &ReadOptions::default(),
    )
    .unwrap();
    let key = |tr: &Trace| -> Vec<(Op, u64, u32)> {
        tr.requests
            .iter()
            .map(|r| (r.op, r.sector, r.sectors))
            .collect()
    };
    assert_eq!(key(&ours_read), key(&t));
    assert_eq!(done, key(&t));
}
