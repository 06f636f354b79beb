//! Round trips as properties over random traces: every writer (write → read → same requests,
//! as far as the format can say them), and the read-only formats through test-only encoders.

mod common;

use common::*;
use layoutlab_trace::{
    blktrace, disksim, read_bytes, write_string, Flags, Format, Op, ReadOptions, Trace,
};
use proptest::prelude::*;

const ALL_OPS: [Op; 4] = [Op::Read, Op::Write, Op::Flush, Op::Discard];

fn read(text: &str, name: &str, format: Format) -> Trace {
    read_bytes(text.as_bytes(), name, format, &ReadOptions::default())
        .unwrap_or_else(|e| panic!("{e}\n--- input ---\n{text}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, rng_algorithm: prop::test_runner::RngAlgorithm::ChaCha, rng_seed: prop::test_runner::RngSeed::Fixed(0x1a70_07a6), ..ProptestConfig::default() })]

    #[test]
    fn csv_is_lossless(t in trace_strategy(ALL_OPS.to_vec(), 64)) {
        let text = write_string(&t, Format::Csv).unwrap();
        let back = read(&text, "rt.csv", Format::Csv);
        prop_assert_eq!(seen(&back), seen(&t));
    }

    #[test]
    fn csv_keeps_cpu_stamps(t in trace_strategy(ALL_OPS.to_vec(), 64), steps in prop::collection::vec((0u64..5_000, 0u64..5_000), 60)) {
        // Stamps as a capture makes them: cumulative, never decreasing within a request.
        let mut t = t;
        let mut used = 0;
        for (r, (a, b)) in t.requests.iter_mut().zip(steps) {
            used += a;
            r.cpu = Some(layoutlab_trace::cpu::CpuStamps { at_issue_ns: used, at_complete_ns: used + b });
        }
        let text = write_string(&t, Format::Csv).unwrap();
        prop_assert!(t.requests.is_empty() || text.starts_with(layoutlab_trace::csv::HEADER_CPU));
        let back = read(&text, "rt.csv", Format::Csv);
        prop_assert_eq!(seen(&back), seen(&t));
        let stamps = |t: &Trace| t.requests.iter().map(|r| r.cpu).collect::<Vec<_>>();
        prop_assert_eq!(stamps(&back), stamps(&t));
    }

    #[test]
    fn blkparse_keeps_requests_completions_and_tags(t in trace_strategy(ALL_OPS.to_vec(), 64)) {
        let text = write_string(&t, Format::Blkparse).unwrap();
        let back = read(&text, "rt.blkparse", Format::Blkparse);
        let want: Vec<Seen> = seen(&t)
            .into_iter()
            .map(|mut s| {
                s.flags = rwbs_flags(s.op, s.flags);
                s
            })
            .collect();
        prop_assert_eq!(seen(&back), want);
    }

    #[test]
    fn disksim_ascii_keeps_time_place_and_sync(t in trace_strategy(vec![Op::Read, Op::Write], 64)) {
        let text = write_string(&t, Format::DisksimAscii).unwrap();
        let back = read(&text, "rt.disksim", Format::DisksimAscii);
        let want: Vec<Seen> = seen(&t)
            .into_iter()
            .map(|mut s| {
                s.complete_ns = None;
                s.flags = disksim::ascii_canonical(s.op, s.flags);
                s.tag = String::new();
                s
            })
            .collect();
        prop_assert_eq!(seen(&back), want);
    }

    #[test]
    fn fio_v3_keeps_ops_places_and_us(t in trace_strategy(ALL_OPS.to_vec(), 54)) {
        let text = write_string(&t, Format::FioV3).unwrap();
        let back = read(&text, "rt.iolog", Format::FioV3);
        let want: Vec<Seen> = seen(&t)
            .into_iter()
            .map(|mut s| {
                s.issue_ns = s.issue_ns / 1_000 * 1_000;
                s.complete_ns = None;
                s.flags = Flags::NONE;
                s.tag = String::new();
                s
            })
            .collect();
        prop_assert_eq!(seen(&back), want);
    }

    #[test]
    fn tracefs_reader_recovers_the_trace(t in trace_strategy(ALL_OPS.to_vec(), 64), uptime in 0u64..10_000_000_000_000) {
        let text = to_tracefs(&t, uptime);
        let back = read(&text, "rt.tracefs", Format::Tracefs);
        let origin = t.requests.iter().map(|r| r.issue_ns).min().unwrap_or(0);
        let want: Vec<Seen> = seen(&t)
            .into_iter()
            .map(|mut s| {
                s.issue_ns -= origin;
                s.complete_ns = s.complete_ns.map(|c| c - origin);
                s.flags = rwbs_flags(s.op, s.flags);
                s
            })
            .collect();
        prop_assert_eq!(seen(&back), want);
    }

    #[test]
    fn blktrace_reader_recovers_the_trace(
        t in trace_strategy(ALL_OPS.to_vec(), 64),
        little in any::<bool>(),
        cpus in 1u32..4,
        t0 in 0u64..1_000_000_000_000,
    ) {
        // Per-CPU files merge by time: make issue times distinct, as a real clock would.
        let mut t = t;
        for (i, r) in t.requests.iter_mut().enumerate() {
            r.issue_ns += i as u64;
            r.complete_ns = r.complete_ns.map(|c| c + i as u64);
        }
        let files = to_blktrace(&t, little, cpus, t0);
        let back = blktrace::read(&files, &ReadOptions::default()).unwrap();
        let origin = t.requests.iter().map(|r| r.issue_ns).min().unwrap_or(0);
        let want: Vec<Seen> = seen(&t)
            .into_iter()
            .map(|mut s| {
                s.issue_ns -= origin;
                s.complete_ns = s.complete_ns.map(|c| c - origin);
                s.flags = rwbs_flags(s.op, s.flags);
                s
            })
            .collect();
        prop_assert_eq!(seen(&back), want);
    }

    #[test]
    fn detection_finds_every_written_format(t in trace_strategy(vec![Op::Read, Op::Write], 40)) {
        prop_assume!(!t.requests.is_empty());
        for f in [Format::Csv, Format::Blkparse, Format::DisksimAscii, Format::FioV3] {
            let text = write_string(&t, f).unwrap();
            prop_assert_eq!(layoutlab_trace::detect(text.as_bytes()), Some(f));
        }
        prop_assert_eq!(layoutlab_trace::detect(to_tracefs(&t, 5).as_bytes()), Some(Format::Tracefs));
    }
}

#[test]
fn disksim_writer_refuses_flush_and_discard() {
    let mut t = Trace::default();
    t.requests.push(layoutlab_trace::Request {
        issue_ns: 0,
        complete_ns: None,
        op: Op::Read,
        sector: 0,
        sectors: 8,
        flags: Flags::NONE,
        tag: 0,
        cpu: None,
    });
    t.requests.push(layoutlab_trace::Request {
        op: Op::Discard,
        ..t.requests[0]
    });
    let e = write_string(&t, Format::DisksimAscii).unwrap_err();
    assert!(e.to_string().contains("request 1"), "{e}");
    assert!(e.reason().contains("only reads and writes"), "{e}");
}

#[test]
fn fio_writer_refuses_offsets_past_u64_bytes() {
    let mut t = Trace::default();
    t.requests.push(layoutlab_trace::Request {
        issue_ns: 0,
        complete_ns: None,
        op: Op::Read,
        sector: u64::MAX / 256,
        sectors: 8,
        flags: Flags::NONE,
        tag: 0,
        cpu: None,
    });
    let e = write_string(&t, Format::FioV3).unwrap_err();
    assert!(e.reason().contains("byte offset"), "{e}");
}

#[test]
fn write_path_and_read_path_agree() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = Trace::default();
    let tag = t.tag("pass1");
    t.requests.push(layoutlab_trace::Request {
        issue_ns: 1_500_000,
        complete_ns: Some(9_000_000),
        op: Op::Write,
        sector: 2048,
        sectors: 16,
        flags: Flags::SYNC | Flags::META,
        tag,
        cpu: None,
    });
    for f in [
        Format::Csv,
        Format::Blkparse,
        Format::DisksimAscii,
        Format::FioV3,
    ] {
        let path = dir.path().join(format!("t.{}", f.name()));
        layoutlab_trace::write_path(&t, &path, f).unwrap();
        let back = layoutlab_trace::read_path(&path).unwrap();
        assert_eq!(back.requests.len(), 1, "{f}");
        assert_eq!(back.requests[0].sector, 2048, "{f}");
        assert_eq!(back.requests[0].op, Op::Write, "{f}");
    }
    let e = layoutlab_trace::write_path(&t, dir.path().join("x"), Format::Tracefs).unwrap_err();
    assert!(e.to_string().contains("csv"), "{e}");
}
