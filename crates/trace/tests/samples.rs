//! Readers on real samples: a tracefs capture and a blktrace capture of dd/blkdiscard on a
//! loop device (kernel 6.18; the blkparse text is the real blkparse's rendering of those
//! binary files), a real fio 3.33 iolog, and DiskSim's measured validation traces.

use std::path::{Path, PathBuf};

use layoutlab_trace::{
    blktrace, disksim, read_as, read_path, read_path_with, stats, DevId, Flags, Format, Op,
    ReadOptions, Trace,
};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn shared_disksim() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/disksim")
}

#[test]
fn tracefs_capture_of_dd_on_loop0() {
    let text = std::fs::read_to_string(data("loop0.tracefs.txt")).unwrap();
    let t = read_path(data("loop0.tracefs.txt")).unwrap();
    // Oracle: one request per block_rq_issue line of the capture.
    let issues = text
        .lines()
        .filter(|l| l.contains("block_rq_issue:"))
        .count();
    assert_eq!(t.requests.len(), issues);
    assert_eq!(t.requests.len(), 79);
    // Every request in this capture completed, after it was issued.
    for r in &t.requests {
        let c = r.complete_ns.expect("every request completed");
        assert!(c >= r.issue_ns);
    }
    assert_eq!(t.requests[0].issue_ns, 0);
    // Tags from trace_marker, in the order written.
    assert_eq!(t.tags, vec!["", "write", "read", "discard"]);
    let per = stats::per_tag(&t);
    let write = per.iter().find(|s| s.tag == "write").unwrap();
    // dd wrote 4 × 64 KiB then 3 × 4 KiB with O_DSYNC: 7 writes, each followed by a flush.
    assert_eq!(write.writes, 7);
    assert_eq!(write.write_bytes, 4 * 65536 + 3 * 4096);
    assert_eq!(write.flushes, 7);
    let read = per.iter().find(|s| s.tag == "read").unwrap();
    // 8 direct 4 KiB reads, then buffered reads through readahead.
    let direct = t
        .requests
        .iter()
        .filter(|r| t.tag_name(r.tag) == "read" && r.op == Op::Read && r.flags == Flags::SYNC)
        .count();
    assert_eq!(direct, 8);
    assert!(read.reads > 8);
    let discard = t.requests.iter().find(|r| r.op == Op::Discard).unwrap();
    assert_eq!((discard.sector, discard.sectors), (2048, 2048));
    assert_eq!(t.tag_name(discard.tag), "discard");
    // The issue→complete pairing found the right completion: dd's first 64 KiB write
    // (issued at 477.293901, completed at 477.293977).
    let first_write = t.requests.iter().find(|r| r.op == Op::Write).unwrap();
    assert_eq!(
        first_write.complete_ns.unwrap() - first_write.issue_ns,
        76_000
    );
}

#[test]
fn tracefs_device_filter() {
    let other = ReadOptions {
        dev: Some(DevId { major: 8, minor: 0 }),
        devno: None,
    };
    let t = read_path_with(data("loop0.tracefs.txt"), Some(Format::Tracefs), &other).unwrap();
    assert!(t.requests.is_empty());
}

fn without_origin(t: &Trace) -> Vec<(u64, Option<u64>, Op, u64, u32, Flags)> {
    let t0 = t.requests.first().map(|r| r.issue_ns).unwrap_or(0);
    t.requests
        .iter()
        .map(|r| {
            (
                r.issue_ns - t0,
                r.complete_ns.map(|c| c - t0),
                r.op,
                r.sector,
                r.sectors,
                r.flags,
            )
        })
        .collect()
}

#[test]
fn blktrace_binary_and_real_blkparse_text_agree() {
    // read_path on one per-CPU file brings in its sibling.
    let bin = read_path(data("loop0.blktrace.0")).unwrap();
    let text = read_as(data("loop0.blkparse.txt"), Format::Blkparse).unwrap();
    let issues = std::fs::read_to_string(data("loop0.blkparse.txt"))
        .unwrap()
        .lines()
        .filter(|l| l.split_whitespace().nth(5) == Some("D"))
        .count();
    assert_eq!(bin.requests.len(), issues);
    assert_eq!(bin.requests.len(), 62);
    assert_eq!(without_origin(&bin), without_origin(&text));
    assert!(bin.requests.iter().all(|r| r.complete_ns.is_some()));
    let flush = bin.requests.iter().filter(|r| r.op == Op::Flush).count();
    assert_eq!(flush, 1);
}

#[test]
fn blktrace_big_endian_reads_the_same() {
    // Byte-swap every field of every record of the real capture.
    let mut files = Vec::new();
    for cpu in 0..2 {
        let le = std::fs::read(data(&format!("loop0.blktrace.{cpu}"))).unwrap();
        let records = blktrace::records(&le, "le").unwrap();
        let mut be = Vec::new();
        for r in &records {
            be.extend_from_slice(&(0x6561_7407u32).to_be_bytes());
            be.extend_from_slice(&r.sequence.to_be_bytes());
            be.extend_from_slice(&r.time_ns.to_be_bytes());
            be.extend_from_slice(&r.sector.to_be_bytes());
            be.extend_from_slice(&r.bytes.to_be_bytes());
            be.extend_from_slice(&r.action.to_be_bytes());
            be.extend_from_slice(&r.pid.to_be_bytes());
            be.extend_from_slice(&r.device.to_be_bytes());
            be.extend_from_slice(&r.cpu.to_be_bytes());
            be.extend_from_slice(&r.error.to_be_bytes());
            be.extend_from_slice(&(r.pdu.len() as u16).to_be_bytes());
            be.extend_from_slice(&r.pdu);
        }
        assert_eq!(blktrace::records(&be, "be").unwrap(), records);
        files.push((format!("be.blktrace.{cpu}"), be));
    }
    let be = blktrace::read(&files, &ReadOptions::default()).unwrap();
    let le = read_path(data("loop0.blktrace.0")).unwrap();
    assert_eq!(be, le);
}

#[test]
fn fio_iolog_written_by_fio() {
    let t = read_path(data("randrw.fio3.iolog")).unwrap();
    assert_eq!(t.requests.len(), 20);
    let r = t.requests[0];
    assert_eq!(
        (r.issue_ns, r.op, r.sector, r.sectors),
        (523_000, Op::Write, 1_011_712 / 512, 8)
    );
    let last = t.requests[19];
    assert_eq!(
        (last.issue_ns, last.op, last.sector),
        (802_000, Op::Read, 10_391_552 / 512)
    );
}

#[test]
fn disksim_validate_excerpts() {
    let recs = disksim::read_validate(
        &std::fs::read_to_string(data("hp_c2247a.head40.trace")).unwrap(),
        "hp",
    )
    .unwrap();
    assert_eq!(recs.len(), 40);
    assert_eq!(recs[0].op, Op::Read);
    assert_eq!(recs[0].buffer_action, "Miss");
    assert_eq!((recs[0].sector, recs[0].sectors), (564_347, 2));
    assert_eq!(recs[0].service_us, 14095.370);
    assert_eq!(recs[0].interarrival_us, 13876.270);
    assert_eq!(recs[3].buffer_action, "Doub");
    let t = disksim::validate_to_trace(&recs);
    // Closed loop: request 1 arrives when request 0 completes plus its interarrival time.
    assert_eq!(t.requests[0].complete_ns, Some(14_095_370));
    assert_eq!(t.requests[1].issue_ns, 14_095_370 + 13_876_270);
    assert_eq!(t.tag_name(t.requests[0].tag), "Miss");
    let detected = read_path(data("barracuda.head40.trace")).unwrap();
    assert_eq!(detected.requests.len(), 40);
}

#[test]
fn disksim_validate_shared_traces() {
    let dir = shared_disksim();
    assert!(
        dir.is_dir(),
        "the shared measured-drive data is missing: expected {} (the `shared` directory beside the checkout)",
        dir.display()
    );
    for (name, lines) in [
        ("atlas_III", 10_000),
        ("barracuda", 10_000),
        ("cheetah4LP", 10_000),
        ("hp_c2247a", 9_999),
    ] {
        let path = dir.join(format!("{name}.trace"));
        let text = std::fs::read_to_string(&path).unwrap();
        let recs = disksim::read_validate(&text, name).unwrap();
        assert_eq!(recs.len(), lines, "{name}");
        assert!(
            recs.iter().all(|r| r.service_us > 0.0 && r.sectors > 0),
            "{name}"
        );
        let t = read_as(&path, Format::DisksimValidate).unwrap();
        assert_eq!(t.requests.len(), lines);
        // Auto-detection picks the validate format from the content.
        assert_eq!(read_path(&path).unwrap(), t);
    }
}
