//! What the 2007 kernel made of a large random read from a program that gave no advice.
//!
//! Benchmark 4 reads 512 KiB at random offsets. The capture's reader advises the kernel
//! `POSIX_FADV_RANDOM`, so that today's kernel reads exactly the pages asked for (run.rs says
//! why), and today's kernel then issues each read as one 512 KiB request. 2.6.24 did neither
//! for a program that gave no advice. Its `mm/readahead.c` (`ondemand_readahead`) takes a read
//! larger than the window (`req_size > max`, 512 KiB against 128 KiB) for a sequential one:
//! the first window starts at the read's first page, is as large as the window may be
//! (`get_init_ra_size`: the maximum for such a request), and is wholly asynchronous, so its
//! marker sits on that first page; the reader meets the marker at once and starts the next
//! window (`get_next_ra_size`: the maximum again), and then the one after each window whose
//! first page it reaches. So window `w0` and `w1` are submitted together, `w2` when the reader
//! reaches `w1`, `w3` when it reaches `w2`, and so on, until the window after the one holding
//! the read's last page: read ahead past the read's end, for a reader that will not come.
//!
//! The queue of 2.6.24 is plugged while the reader submits and unplugged when it waits for a
//! page (`sync_page`): `w0` and `w1` leave as one request; `w2`, submitted while the reader
//! copies `w1`'s pages, is still in the plugged queue when the reader reaches `w2`'s first
//! page, meets its marker and submits `w3`, which merges with it, and only then waits. So the
//! disk sees pairs of windows, and the window past the end either alone (after an even number
//! of windows in the read: the reader has `w_{n−1}` already and does not wait) or merged into
//! the last pair (after an odd number: the reader waits for that request, past-end pages
//! included).
//!
//! [`apply`] rebuilds that stream from a capture of exactly the pages asked for:
//! - each read's data requests are cut where a pair of windows ends (pieces keep the
//!   captured stamps, so a replay queues them one behind the other, as the plugged queue
//!   handed them over);
//! - the window past each read's end is inserted after the read's last request: the file's
//!   blocks there not already in memory, in file order, one request per physically
//!   contiguous run; a block whose mapping needs an indirect block not yet in memory first has
//!   that block read (synchronously, in the reader's context, as `ext3_get_block` does it,
//!   with the data in front of it pushed out first: the boundary order of [`super::bio_order`]).
//!   Alone, it is issued when the read's last request completed and nothing waits for it but
//!   the indirect-block reads; merged, it takes that request's stamps and is waited for;
//! - a captured request for blocks such a window already read is trimmed to the rest, or
//!   dropped when nothing is left (the page cache would have held them).
//!
//! Assumed, and true of benchmark 4: every read is larger than the window and starts with
//! its first page not in memory (a read that found its first page cached would have started
//! no window).

use super::file_map::FileMap;
use super::run::Access;
use layoutlab_layout::PlannedInode;
use layoutlab_trace::{Flags, Op, Request, Trace};
use serde::Serialize;
use std::collections::HashSet;

/// How many reads ahead of the current one a captured data request is looked for: a read
/// whose every page was already in memory has no requests, and the next read's requests
/// follow. A chosen bound, not a measured one: benchmark 4 at scale 1 (5,722 reads) left no
/// request unassigned (`windows.unassigned` = 0 in its JSON, 2026-11-29), and a request past
/// the bound is kept as captured and counted there, not lost.
const SEARCH: usize = 64;

/// What [`apply`] did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Windowed {
    /// The read-ahead window the rebuild used, in bytes (the experiment's `os_read_ahead_kb`).
    pub window_bytes: u64,
    /// Blocks the captured trace's reads covered (partial ones included).
    pub captured_blocks: u64,
    /// Windows read ahead past a read's end (reads whose window had any block not in memory).
    pub past_end_windows: u64,
    /// Data blocks those windows read.
    pub past_end_blocks: u64,
    /// Indirect-block reads those windows needed.
    pub past_end_mapping_reads: u64,
    /// Captured requests cut where a pair of windows ends (one per cut).
    pub cuts: u64,
    /// Captured blocks not read again because a window past an earlier read's end had read
    /// them.
    pub blocks_already_read: u64,
    /// Captured data requests that matched no read (left as they are).
    pub unassigned: u64,
}

/// The stamps a read's last request left: what the window past its end is issued from.
#[derive(Clone, Copy)]
struct Last {
    issue_ns: u64,
    complete_ns: Option<u64>,
    cpu: Option<layoutlab_trace::cpu::CpuStamps>,
    tag: u16,
}

/// Rebuilds benchmark `accesses`' reads of `inode` in `trace` (a capture of exactly the pages
/// asked for, in the 2007 kernel's order across indirect blocks) as 2.6.24 issued them for a
/// program that gave no advice, with read-ahead windows of `ra_blocks` blocks: that trace, and
/// what the rebuild did.
pub fn apply(
    trace: &Trace,
    inode: &PlannedInode,
    block_size: u64,
    accesses: &[Access],
    ra_blocks: u64,
) -> (Trace, Windowed) {
    let mut s = Rebuild {
        map: FileMap::new(inode, block_size),
        ra: ra_blocks.max(1),
        spb: (block_size / 512).max(1),
        in_memory: HashSet::new(),
        out: Vec::with_capacity(trace.requests.len() * 2),
        held: Vec::new(),
        w: Windowed {
            window_bytes: ra_blocks.max(1) * block_size,
            ..Windowed::default()
        },
    };
    let (spb, ra) = (s.spb, s.ra);
    let range = |k: usize| -> (u64, u64) {
        let (off, len) = accesses[k];
        (off / block_size, (off + len).div_ceil(block_size))
    };
    let mut current: Option<(usize, Last)> = None;
    for r in &trace.requests {
        let blocks: Vec<u64> = super::request_blocks(r, spb).collect();
        if r.op == Op::Read {
            s.w.captured_blocks += blocks.len() as u64;
        }
        let first_data = blocks.iter().find_map(|&b| s.map.logical(b));
        if r.op != Op::Read
            || (blocks.iter().all(|b| !s.map.is_mapping(*b)) && first_data.is_none())
        {
            s.flush();
            s.out.push(*r);
            continue;
        }
        let Some(l0) = first_data else {
            // Mapping blocks only: whose read they serve, the next data request says.
            s.held.push(*r);
            continue;
        };
        let from = current.map_or(0, |(k, _)| k);
        let owner = (from..accesses.len().min(from + SEARCH)).find(|&k| {
            let (s, e) = range(k);
            (s..e).contains(&l0)
        });
        let Some(k) = owner else {
            s.w.unassigned += 1;
            s.flush();
            s.in_memory.extend(blocks.iter().copied());
            s.out.push(*r);
            continue;
        };
        if let Some((prev, last)) = current {
            if prev != k {
                s.past_end(range(prev), last);
            }
        }
        s.flush();
        let (start, _) = range(k);
        // Pieces: blocks kept, split where a pair of windows ends or a block is skipped.
        let mut piece: Option<(u64, u64)> = None; // (first block, blocks)
        let mut pieces: Vec<(u64, u64)> = Vec::new();
        for &b in &blocks {
            let l = s.map.logical(b);
            if l.is_some() && s.in_memory.contains(&b) {
                s.w.blocks_already_read += 1;
                pieces.extend(piece.take());
                continue;
            }
            let cut = l.is_some_and(|l| l > start && (l - start).is_multiple_of(2 * ra));
            match piece {
                Some((f, n)) if !cut && f + n == b => piece = Some((f, n + 1)),
                _ => {
                    if cut && piece.is_some() {
                        s.w.cuts += 1;
                    }
                    pieces.extend(piece.take());
                    piece = Some((b, 1));
                }
            }
            s.in_memory.insert(b);
        }
        pieces.extend(piece);
        let whole = pieces.len() == 1 && pieces[0] == (blocks[0], blocks.len() as u64);
        if whole {
            s.out.push(*r);
        } else {
            for (f, n) in pieces {
                s.out.push(Request {
                    sector: f * spb,
                    sectors: (n * spb) as u32,
                    ..*r
                });
            }
        }
        current = Some((
            k,
            Last {
                issue_ns: r.issue_ns,
                complete_ns: r.complete_ns,
                cpu: r.cpu,
                tag: r.tag,
            },
        ));
    }
    if let Some((k, last)) = current {
        s.past_end(range(k), last);
    }
    s.flush();
    let rebuilt = Trace {
        requests: s.out,
        tags: trace.tags.clone(),
        queue: trace.queue.clone(),
    };
    (rebuilt, s.w)
}

/// The rebuilt stream so far, and what is in memory.
struct Rebuild {
    map: FileMap,
    /// Read-ahead window, blocks.
    ra: u64,
    /// Sectors per block.
    spb: u64,
    /// Blocks of the file read so far (data and mapping): the page cache.
    in_memory: HashSet<u64>,
    out: Vec<Request>,
    /// Mapping-block reads held until the next data request says whose read they served.
    held: Vec<Request>,
    w: Windowed,
}

impl Rebuild {
    /// Appends the held mapping-block reads to `out`, but for those a window already read.
    fn flush(&mut self) {
        let (spb, in_memory, out, w) = (self.spb, &mut self.in_memory, &mut self.out, &mut self.w);
        for r in self.held.drain(..) {
            let blocks = super::request_blocks(&r, spb);
            if blocks.clone().all(|b| in_memory.contains(&b)) {
                w.blocks_already_read += blocks.count() as u64;
                continue;
            }
            in_memory.extend(blocks);
            out.push(r);
        }
    }

    /// Appends the window 2.6.24 read ahead past a read of file blocks `start..end` to `out`.
    fn past_end(&mut self, (start, end): (u64, u64), last: Last) {
        let (map, ra, spb) = (&self.map, self.ra, self.spb);
        let (in_memory, out, w) = (&mut self.in_memory, &mut self.out, &mut self.w);
        let n = (end - start).div_ceil(ra);
        let from = start + n * ra;
        let to = (from + ra).min(map.blocks);
        if from >= to {
            return;
        }
        // After an odd number of windows the last one leaves with the last pair: the reader waits
        // for it. After an even number it leaves alone once the read's last request completed,
        // and nothing waits for it.
        let merged = n % 2 == 1;
        let issue_ns = if merged {
            last.issue_ns
        } else {
            last.complete_ns.unwrap_or(last.issue_ns)
        };
        let cpu = last.cpu.map(|c| {
            if merged {
                c
            } else {
                layoutlab_trace::cpu::CpuStamps {
                    at_issue_ns: c.at_complete_ns,
                    at_complete_ns: c.at_complete_ns,
                }
            }
        });
        let data = |first: u64, blocks: u64| Request {
            issue_ns,
            complete_ns: if merged { last.complete_ns } else { None },
            op: Op::Read,
            sector: first * spb,
            sectors: (blocks * spb) as u32,
            flags: Flags::READAHEAD,
            tag: last.tag,
            cpu,
        };
        let mut run: Option<(u64, u64)> = None;
        let mut any = false;
        for l in from..to {
            let Some(p) = map.physical(l) else {
                out.extend(run.take().map(|(f, c)| data(f, c)));
                continue;
            };
            let needed: Vec<u64> = map
                .path(l)
                .into_iter()
                .filter(|m| !in_memory.contains(m))
                .collect();
            if !needed.is_empty() {
                // The data in front of the boundary leaves first; the reader then reads the
                // mapping blocks one by one and waits for each.
                out.extend(run.take().map(|(f, c)| data(f, c)));
                for m in needed {
                    in_memory.insert(m);
                    out.push(Request {
                        issue_ns,
                        complete_ns: Some(issue_ns.max(last.complete_ns.unwrap_or(issue_ns))),
                        op: Op::Read,
                        sector: m * spb,
                        sectors: spb as u32,
                        flags: Flags::META,
                        tag: last.tag,
                        cpu: cpu.map(|c| layoutlab_trace::cpu::CpuStamps {
                            at_issue_ns: c.at_issue_ns,
                            at_complete_ns: c.at_complete_ns.max(c.at_issue_ns),
                        }),
                    });
                    w.past_end_mapping_reads += 1;
                }
            }
            if in_memory.contains(&p) {
                out.extend(run.take().map(|(f, c)| data(f, c)));
                continue;
            }
            in_memory.insert(p);
            any = true;
            w.past_end_blocks += 1;
            run = match run {
                Some((f, c)) if f + c == p => Some((f, c + 1)),
                other => {
                    out.extend(other.map(|(f, c)| data(f, c)));
                    Some((p, 1))
                }
            };
        }
        out.extend(run.map(|(f, c)| data(f, c)));
        if any {
            w.past_end_windows += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::file_map::fixtures::{blocks, file_2007, read, trace};
    use super::*;
    use layoutlab_layout::{MapBlock, MapFormat, MapKind, Run};

    const B: u64 = 4096;

    /// 512 KiB (128 blocks) from logical block `l`.
    fn access(l: u64) -> Access {
        (l * B, 128 * B)
    }

    #[test]
    fn a_read_leaves_in_pairs_of_windows_and_one_window_past_its_end() {
        // Read logical 0..128: the direct blocks, the indirect block, the rest.
        let t = trace(vec![
            read(0, 1000, 12),
            read(1000, 1012, 1),
            read(2000, 1013, 116),
        ]);
        let (wt, w) = apply(&t, &file_2007(), B, &[access(0)], 32);
        assert_eq!(w.window_bytes, 128 << 10, "32 blocks of 4 KiB");
        assert_eq!(
            blocks(&wt),
            [
                (1000, 12),
                (1012, 1),
                // Cut where windows 0-1 end (logical 64 = physical 1013 + 52).
                (1013, 52),
                (1065, 64),
                // The window past the end: logical 128..160.
                (1129, 32),
            ]
        );
        assert_eq!(w.cuts, 1);
        assert_eq!((w.past_end_windows, w.past_end_blocks), (1, 32));
        // After four windows the one past the end leaves alone, once the read's last request
        // completed; nothing waits for it.
        let p = wt.requests[4];
        assert_eq!((p.issue_ns, p.complete_ns), (2500, None));
        assert_eq!(p.cpu.unwrap().at_issue_ns, 205);
        assert!(p.flags.contains(Flags::READAHEAD));
        // The pieces keep the captured stamps (a replay queues them one behind the other).
        assert_eq!(wt.requests[3].issue_ns, 2000);
        assert_eq!(wt.requests[3].complete_ns, Some(2500));
    }

    #[test]
    fn a_window_past_a_boundary_reads_the_mapping_blocks_it_needs_in_the_period_order() {
        // Read logical 896..1024 (under the first indirect block); its window past the end,
        // 1024..1056, crosses the double-indirect boundary at 1036.
        let t = trace(vec![read(0, 1012, 1), read(1000, 1013 + 884, 128)]);
        let (wt, w) = apply(&t, &file_2007(), B, &[access(896)], 32);
        assert_eq!(
            blocks(&wt),
            [
                (1012, 1),
                (1897, 64),
                (1961, 64),
                // Logical 1024..1036, then the mapping blocks, then 1036..1056.
                (2025, 12),
                (2037, 1),
                (2038, 1),
                (2039, 20),
            ]
        );
        assert_eq!(w.past_end_mapping_reads, 2);
        // The reader waits for the mapping blocks (they complete), not for the data.
        let r = &wt.requests;
        assert!(r[3].complete_ns.is_none() && r[6].complete_ns.is_none());
        assert!(r[4].complete_ns.is_some() && r[5].complete_ns.is_some());
        assert!(r[4].flags.contains(Flags::META));
    }

    #[test]
    fn what_a_window_read_is_not_read_again() {
        // The read above, then one of logical 1024..1152 as today's kernel took it: the
        // mapping blocks, the 12 blocks before the boundary, the rest.
        let t = trace(vec![
            read(0, 1012, 1),
            read(1000, 1897, 128),
            read(5000, 2037, 1),
            read(6000, 2038, 1),
            read(7000, 2025, 12),
            read(8000, 2039, 116),
        ]);
        let (wt, w) = apply(&t, &file_2007(), B, &[access(896), access(1024)], 32);
        let b = blocks(&wt);
        // The second read keeps only what the first one's window did not read: logical
        // 1056..1152 (2059..2155), cut where its first pair of windows ends (1088 = 2091).
        assert_eq!(&b[7..], [(2059, 32), (2091, 64), (2155, 32)]);
        assert_eq!(w.blocks_already_read, 2 + 12 + 20);
        assert_eq!(w.past_end_windows, 2);
        // Every block is read once.
        let mut seen = HashSet::new();
        for (f, n) in b {
            for x in f..f + n {
                assert!(seen.insert(x), "block {x} read twice");
            }
        }
    }

    #[test]
    fn after_an_odd_number_of_windows_the_one_past_the_end_leaves_with_the_last_pair() {
        // 96 blocks: three windows; the fourth merges with the third, and the reader waits.
        let t = trace(vec![read(0, 1012, 1), read(10, 1013, 96)]);
        let (wt, _) = apply(&t, &file_2007(), B, &[(12 * B, 96 * B)], 32);
        assert_eq!(blocks(&wt), [(1012, 1), (1013, 64), (1077, 32), (1109, 32)]);
        let p = wt.requests[3];
        assert_eq!((p.issue_ns, p.complete_ns), (10, Some(510)));
    }

    #[test]
    fn the_window_stops_at_the_files_end_and_other_requests_pass() {
        let mut other = read(50, 5, 1);
        other.op = Op::Write;
        let t = trace(vec![other, read(100, 2039 + 1064 - 100, 100)]);
        let (wt, w) = apply(&t, &file_2007(), B, &[((2100 - 100) * B, 100 * B)], 32);
        assert_eq!(wt.requests[0], other);
        assert_eq!(w.past_end_windows, 0);
        assert_eq!(
            wt.requests
                .iter()
                .map(|r| r.sectors as u64 / 8)
                .sum::<u64>(),
            1 + 100
        );
    }

    /// Captured-style requests for `reads` (start blocks) of a one-level file: 32 indirect
    /// blocks at 0..32 each mapping 256 blocks, data at 100.. contiguous.
    fn flat_file() -> PlannedInode {
        PlannedInode {
            ino: 12,
            kind: layoutlab_layout::InodeKind::File,
            parent: 2,
            name: "f".into(),
            size_bytes: 8192 * B,
            data: vec![Run {
                logical: 0,
                physical: 100,
                len: 8192,
            }],
            mapping: (0..32)
                .map(|i| MapBlock {
                    kind: MapKind::Ind,
                    logical: i * 256,
                    physical: i,
                })
                .collect(),
            format: MapFormat::Blocks,
            special: layoutlab_layout::Special::None,
        }
    }

    proptest::proptest! {
        /// Over random reads of 1-300 blocks (windows of 1-64 blocks), captured as exactly the
        /// pages asked for (each indirect block once, the first time, before the data): no
        /// block is read twice, every captured block is read, issue stamps stay in order, and
        /// every other block read lies in a window past some read's end.
        #[test]
        fn windows_only_add_what_lies_past_a_read(
            reads in proptest::collection::vec((0u64..8192, 1u64..300), 1..30),
            ra in 1u64..64,
        ) {
            let f = flat_file();
            let mut seen: HashSet<u64> = HashSet::new();
            let mut reqs = Vec::new();
            let mut acc = Vec::new();
            let mut t_ns = 0;
            for &(start, len) in &reads {
                let end = (start + len).min(8192);
                acc.push((start * B, (end - start) * B));
                let mut run: Option<(u64, u64)> = None;
                for l in start..end {
                    let ind = l / 256;
                    if seen.insert(ind) {
                        if let Some((s, n)) = run.take() {
                            reqs.push(read(t_ns, s, n));
                            t_ns += 1000;
                        }
                        reqs.push(read(t_ns, ind, 1));
                        t_ns += 1000;
                    }
                    let p = 100 + l;
                    if !seen.insert(p) {
                        if let Some((s, n)) = run.take() {
                            reqs.push(read(t_ns, s, n));
                            t_ns += 1000;
                        }
                        continue;
                    }
                    run = match run {
                        Some((s, n)) if s + n == p => Some((s, n + 1)),
                        other => {
                            if let Some((s, n)) = other {
                                reqs.push(read(t_ns, s, n));
                                t_ns += 1000;
                            }
                            Some((p, 1))
                        }
                    };
                }
                if let Some((s, n)) = run {
                    reqs.push(read(t_ns, s, n));
                    t_ns += 1000;
                }
            }
            let t = trace(reqs);
            let (wt, w) = apply(&t, &f, B, &acc, ra);
            let mut out_blocks = HashSet::new();
            for r in &wt.requests {
                for b in r.sector / 8..(r.sector + u64::from(r.sectors)) / 8 {
                    proptest::prop_assert!(out_blocks.insert(b), "block {} read twice", b);
                }
            }
            for r in &t.requests {
                for b in r.sector / 8..(r.sector + u64::from(r.sectors)) / 8 {
                    proptest::prop_assert!(out_blocks.contains(&b), "captured block {} lost", b);
                }
            }
            proptest::prop_assert!(wt.requests.windows(2).all(|p| p[0].issue_ns <= p[1].issue_ns));
            for b in out_blocks.iter().filter(|b| !seen.contains(b)) {
                let l = b.checked_sub(100);
                let past_some_read = acc.iter().any(|&(o, n)| {
                    let (s, e) = (o / B, (o + n) / B);
                    let k = (e - s).div_ceil(ra);
                    l.is_some_and(|l| l >= s + k * ra && l < s + (k + 1) * ra)
                });
                // Indirect blocks a window needed are mapping blocks.
                proptest::prop_assert!(past_some_read || *b < 32, "block {} is in no window", b);
            }
            proptest::prop_assert_eq!(w.unassigned, 0);
        }
    }
}
