//! Shared test helpers: random traces, test-only encoders for the read-only formats, and the
//! projections that say what each format keeps.
#![allow(dead_code)]

use layoutlab_trace::{Flags, Op, Request, Trace};
use proptest::prelude::*;

pub const TAG_NAMES: [&str; 5] = ["", "pass1", "pass 2", "a,b", "q\"x"];

/// A request as compared across formats: tag by name, not index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub issue_ns: u64,
    pub complete_ns: Option<u64>,
    pub op: Op,
    pub sector: u64,
    pub sectors: u32,
    pub flags: Flags,
    pub tag: String,
}

pub fn seen(t: &Trace) -> Vec<Seen> {
    t.requests
        .iter()
        .map(|r| Seen {
            issue_ns: r.issue_ns,
            complete_ns: r.complete_ns,
            op: r.op,
            sector: r.sector,
            sectors: r.sectors,
            flags: r.flags,
            tag: t.tag_name(r.tag).to_string(),
        })
        .collect()
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Read),
        4 => Just(Op::Write),
        1 => Just(Op::Flush),
        1 => Just(Op::Discard),
    ]
}

/// Random traces in issue order. Data requests have distinct sectors (so that pairing by
/// sector is unambiguous), at least one sector, and flushes complete in issue order: the
/// conditions under which a kernel trace pairs unambiguously.
pub fn trace_strategy(ops: Vec<Op>, max_sector_bits: u32) -> impl Strategy<Value = Trace> {
    let op = op_strategy().prop_filter("op allowed", move |o| ops.contains(o));
    prop::collection::vec(
        (
            0u64..5_000_000,
            prop::option::of(0u64..20_000_000),
            op,
            1u64..(1 << 20),
            1u32..4096,
            0u8..32,
            0usize..TAG_NAMES.len(),
        ),
        0..60,
    )
    .prop_flat_map(move |rows| {
        let base = 0u64..(1u64 << max_sector_bits.saturating_sub(22).max(1));
        (Just(rows), base, 0u64..1_000_000_000_000)
    })
    .prop_map(|(rows, base, t0)| {
        let mut t = Trace::default();
        for name in &TAG_NAMES[1..] {
            t.tag(name);
        }
        let mut clock = t0;
        let mut sector = base;
        let mut last_flush_done = 0u64;
        for (gap, latency, op, step, sectors, flags, tag) in rows {
            clock += gap;
            sector += step;
            let mut complete = latency.map(|l| clock + l);
            let (s, n) = if op == Op::Flush {
                // Flushes pair first-in first-out: a never-completed flush followed by a
                // completed one is ambiguous in every kernel format, so every flush completes.
                let c = complete.unwrap_or(clock).max(last_flush_done);
                last_flush_done = c;
                complete = Some(c);
                (0, 0)
            } else {
                (sector, sectors)
            };
            t.requests.push(Request {
                issue_ns: clock,
                complete_ns: complete,
                op,
                sector: s,
                sectors: n,
                flags: Flags(flags),
                tag: tag as u16,
                cpu: None,
            });
            sector += u64::from(sectors);
        }
        t
    })
}

/// What rwbs keeps of a request's flags.
pub fn rwbs_flags(op: Op, flags: Flags) -> Flags {
    if op == Op::Flush {
        Flags(flags.0 & !(Flags::PREFLUSH.0 | Flags::FUA.0))
    } else {
        flags
    }
}

/// Test-only encoder: the tracefs text the kernel would print for `t` on device 7,0, issue
/// and completion events interleaved in time, markers for tags, bio_queue events too.
pub fn to_tracefs(t: &Trace, uptime_ns: u64) -> String {
    let mut ev: Vec<(u64, usize, u8)> = Vec::new();
    let mut tag = 0;
    for (i, r) in t.requests.iter().enumerate() {
        if r.tag != tag {
            ev.push((r.issue_ns, i, 0));
            tag = r.tag;
        }
        ev.push((r.issue_ns, i, 1));
        ev.push((r.issue_ns, i, 2));
        if let Some(c) = r.complete_ns {
            ev.push((c, i, 3));
        }
    }
    ev.sort();
    let mut out = String::from("# tracer: nop\n#\n");
    for (time, i, kind) in ev {
        let r = &t.requests[i];
        let ts = time + uptime_ns;
        // tracefs prints µs by default; the tests use ns-exact times, so print 9 digits
        // (as the 'nsec' clock does) to keep the comparison exact.
        let stamp = format!("{}.{:09}", ts / 1_000_000_000, ts % 1_000_000_000);
        let rw = rwbs(r.op, r.flags);
        let line = match kind {
            0 => format!(
                "  bash-1   [001] ...1.  {stamp}: tracing_mark_write: layoutlab tag={}",
                t.tag_name(r.tag)
            ),
            1 => format!(
                "  fsck my-2   [000] .....  {stamp}: block_bio_queue: 7,0 {rw} {} + {} [fsck my]",
                r.sector, r.sectors
            ),
            2 => format!(
                "  fsck my-2   [000] .....  {stamp}: block_rq_issue: 7,0 {rw} {} (12 34) {} + {} be,0,4 [fsck my]",
                u64::from(r.sectors) * 512,
                r.sector,
                r.sectors
            ),
            _ => {
                let sector = if r.op == Op::Flush { u64::MAX } else { r.sector };
                format!(
                    "  ksoftirqd/0-14 [000] ..s..  {stamp}: block_rq_complete: 7,0 {rw} () {sector} + {} be,0,4 [0]",
                    r.sectors
                )
            }
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Kernel-style rwbs (flush as `FF`).
pub fn rwbs(op: Op, flags: Flags) -> String {
    let mut s = String::new();
    if op == Op::Flush || flags.contains(Flags::PREFLUSH) {
        s.push('F');
    }
    s.push(match op {
        Op::Read => 'R',
        Op::Write => 'W',
        Op::Discard => 'D',
        Op::Flush => 'F',
    });
    if op != Op::Flush && flags.contains(Flags::FUA) {
        s.push('F');
    }
    if flags.contains(Flags::READAHEAD) {
        s.push('A');
    }
    if flags.contains(Flags::SYNC) {
        s.push('S');
    }
    if flags.contains(Flags::META) {
        s.push('M');
    }
    s
}

/// Test-only encoder of one blk_io_trace record (version 7).
#[allow(clippy::too_many_arguments)]
pub fn blk_record(
    little: bool,
    time_ns: u64,
    sector: u64,
    bytes: u32,
    action: u32,
    device: u32,
    cpu: u32,
    pdu: &[u8],
) -> Vec<u8> {
    let mut v = Vec::with_capacity(48 + pdu.len());
    let p32 = |v: &mut Vec<u8>, x: u32| {
        v.extend_from_slice(&if little {
            x.to_le_bytes()
        } else {
            x.to_be_bytes()
        })
    };
    let p64 = |v: &mut Vec<u8>, x: u64| {
        v.extend_from_slice(&if little {
            x.to_le_bytes()
        } else {
            x.to_be_bytes()
        })
    };
    let p16 = |v: &mut Vec<u8>, x: u16| {
        v.extend_from_slice(&if little {
            x.to_le_bytes()
        } else {
            x.to_be_bytes()
        })
    };
    p32(&mut v, 0x6561_7407);
    p32(&mut v, 0);
    p64(&mut v, time_ns);
    p64(&mut v, sector);
    p32(&mut v, bytes);
    p32(&mut v, action);
    p32(&mut v, 42);
    p32(&mut v, device);
    p32(&mut v, cpu);
    p16(&mut v, 0);
    p16(&mut v, pdu.len() as u16);
    v.extend_from_slice(pdu);
    v
}

/// blktrace category bits of a request.
pub fn blk_category(op: Op, flags: Flags, bytes: u32) -> u32 {
    let _ = bytes;
    let mut c = match op {
        Op::Read => 1,
        Op::Write => 1 << 1,
        Op::Discard => (1 << 13) | (1 << 1),
        Op::Flush => 1 << 2,
    };
    if op != Op::Flush {
        if flags.contains(Flags::PREFLUSH) {
            c |= 1 << 2;
        }
        if flags.contains(Flags::FUA) {
            c |= 1 << 15;
        }
    }
    if flags.contains(Flags::SYNC) {
        c |= 1 << 3;
    }
    if flags.contains(Flags::READAHEAD) {
        c |= 1 << 11;
    }
    if flags.contains(Flags::META) {
        c |= 1 << 12;
    }
    c
}

/// Test-only encoder: `t` as blktrace per-CPU files (requests spread over `cpus` files by
/// index), device 8,16, issue (D) and complete (C) records, tag messages as notify records.
pub fn to_blktrace(t: &Trace, little: bool, cpus: u32, t0: u64) -> Vec<(String, Vec<u8>)> {
    let device = (8 << 20) | 16;
    let mut files: Vec<Vec<u8>> = vec![Vec::new(); cpus as usize];
    let mut tag = 0;
    for (i, r) in t.requests.iter().enumerate() {
        let cpu = (i as u32) % cpus;
        let f = &mut files[cpu as usize];
        if r.tag != tag {
            let msg = format!("layoutlab tag={}\0", t.tag_name(r.tag));
            // Messages go on the same CPU file, just before the issue.
            f.extend(blk_record(
                little,
                t0 + r.issue_ns,
                0,
                0,
                2 | (1 << 26),
                device,
                cpu,
                msg.as_bytes(),
            ));
            tag = r.tag;
        }
        let bytes = r.sectors * 512;
        let cat = blk_category(r.op, r.flags, bytes) << 16;
        f.extend(blk_record(
            little,
            t0 + r.issue_ns,
            r.sector,
            bytes,
            7 | cat | (1 << 22),
            device,
            cpu,
            &[],
        ));
    }
    // Completions on CPU 0's file, but merged by time they interleave correctly.
    let mut completes: Vec<(u64, usize)> = t
        .requests
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.complete_ns.map(|c| (c, i)))
        .collect();
    completes.sort();
    let mut c_file = Vec::new();
    for (c, i) in completes {
        let r = &t.requests[i];
        let bytes = r.sectors * 512;
        let cat = blk_category(r.op, r.flags, bytes) << 16;
        let sector = if r.op == Op::Flush {
            u64::MAX
        } else {
            r.sector
        };
        c_file.extend(blk_record(
            little,
            t0 + c,
            sector,
            bytes,
            8 | cat | (1 << 23),
            device,
            cpus,
            &[],
        ));
    }
    files.push(c_file);
    files
        .into_iter()
        .enumerate()
        .map(|(cpu, b)| (format!("mem.blktrace.{cpu}"), b))
        .collect()
}
