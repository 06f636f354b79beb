//! The patch's indirect-block read-ahead, as a replay option.
//!
//! Rai's patch ("[PATCH] Clustering indirect blocks in Ext3", LKML, 2007-11-16,
//! <https://lore.kernel.org/lkml/d9885f0f0711161427u3ab41741kf5a0dc58def30c0@mail.gmail.com/T/>)
//! also changed the read path: when a read of a file needs an indirect block that is not in
//! memory, it reads ahead, asynchronously, several indirect blocks of the same file from the
//! same metacluster (as ../shared/EXPERIMENTS.md summarises the review). No kernel has this
//! code, so it is applied to the captured trace instead:
//!
//! - A read request that covers a mapping block `M` of the file which is not already in
//!   memory triggers the read-ahead: the blocks `M+1 … M+n−1` that follow it on disk, as long
//!   as each is a mapping block of the same file (the metacluster holds a file's indirect
//!   blocks in allocation order, so they are its next ones; on the 2007 layout the block after
//!   an indirect block is file data, and nothing is read ahead). `n` is
//!   `ind_readahead_blocks` (the missed block included). The blocks are read by one request,
//!   issued when `M`'s read completes, asynchronously (flagged read-ahead, and no completion
//!   time in the trace, so nothing the program does waits for it: the replay keeps the
//!   program's next request at its captured offset from this one, and the device serves
//!   both in order).
//! - A later read request whose every block is a mapping block read ahead is dropped: the
//!   kernel with the patch would have found them in memory.
//!
//! Which blocks, and when, follows the description; how many (`n`) is ours: the text of the
//! patch available here is its cover letter, which does not give the number.

use layoutlab_layout::PlannedInode;
use layoutlab_trace::{Flags, Op, Request, Trace};
use std::collections::{BTreeSet, HashSet};

/// What the option did to a trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Applied {
    /// The trace with the read-ahead requests inserted and the reads they made unnecessary
    /// dropped.
    pub trace: Trace,
    /// Read-ahead requests inserted.
    pub inserted: u64,
    /// Blocks they read.
    pub inserted_blocks: u64,
    /// Captured requests dropped (their blocks were read ahead).
    pub dropped: u64,
}

/// Applies the patch's read-ahead of up to `n` indirect blocks of `inode` to `trace`.
pub fn apply(trace: &Trace, inode: &PlannedInode, block_size: u64, n: u64) -> Applied {
    let spb = block_size / 512;
    let mapping: HashSet<u64> = inode.mapping.iter().map(|m| m.physical).collect();
    // Mapping blocks in memory (read by the kernel or read ahead).
    let mut cached: HashSet<u64> = HashSet::new();
    // Read ahead and not yet asked for by the kernel.
    let mut ahead: BTreeSet<u64> = BTreeSet::new();
    let mut out: Vec<Request> = Vec::with_capacity(trace.requests.len());
    // Read-ahead requests waiting to be placed in issue order.
    let mut pending: Vec<Request> = Vec::new();
    let mut applied = Applied::default();
    for r in &trace.requests {
        // Place read-aheads issued before this request.
        pending.sort_by_key(|p| p.issue_ns);
        while pending.first().is_some_and(|p| p.issue_ns <= r.issue_ns) {
            out.push(pending.remove(0));
        }
        if r.op != Op::Read {
            out.push(*r);
            continue;
        }
        let blocks: Vec<u64> = super::request_blocks(r, spb).collect();
        if !blocks.is_empty() && blocks.iter().all(|b| ahead.contains(b)) {
            for b in &blocks {
                ahead.remove(b);
            }
            applied.dropped += 1;
            continue;
        }
        let mut trigger = None;
        for b in &blocks {
            if mapping.contains(b) && !cached.contains(b) {
                trigger.get_or_insert(*b);
            }
            if mapping.contains(b) {
                cached.insert(*b);
            }
        }
        out.push(*r);
        let Some(m) = trigger else { continue };
        let mut k = 0;
        while k + 1 < n && mapping.contains(&(m + 1 + k)) && !cached.contains(&(m + 1 + k)) {
            k += 1;
        }
        if k == 0 {
            continue;
        }
        for b in m + 1..=m + k {
            cached.insert(b);
            ahead.insert(b);
        }
        let at = r.complete_ns.unwrap_or(r.issue_ns);
        let cpu = r.cpu.map(|c| layoutlab_trace::cpu::CpuStamps {
            at_issue_ns: c.at_complete_ns,
            at_complete_ns: c.at_complete_ns,
        });
        pending.push(Request {
            issue_ns: at,
            complete_ns: None,
            op: Op::Read,
            sector: (m + 1) * spb,
            sectors: (k * spb) as u32,
            flags: Flags(Flags::READAHEAD.0 | Flags::META.0),
            tag: r.tag,
            cpu,
        });
        applied.inserted += 1;
        applied.inserted_blocks += k;
    }
    pending.sort_by_key(|p| p.issue_ns);
    out.extend(pending);
    applied.trace = Trace {
        requests: out,
        tags: trace.tags.clone(),
        queue: trace.queue.clone(),
    };
    applied
}

#[cfg(test)]
mod tests {
    use super::*;
    use layoutlab_layout::{MapBlock, MapFormat, MapKind, PlannedInode, Run};

    fn inode(mapping: &[u64]) -> PlannedInode {
        PlannedInode {
            ino: 12,
            kind: layoutlab_layout::InodeKind::File,
            parent: 2,
            name: "bench".into(),
            size_bytes: 1 << 30,
            data: vec![Run {
                logical: 0,
                physical: 10_000,
                len: 262_144,
            }],
            mapping: mapping
                .iter()
                .enumerate()
                .map(|(i, &p)| MapBlock {
                    kind: MapKind::Ind,
                    logical: 12 + 1024 * i as u64,
                    physical: p,
                })
                .collect(),
            format: MapFormat::Blocks,
            special: layoutlab_layout::Special::None,
        }
    }

    fn read(issue: u64, block: u64, blocks: u32) -> Request {
        Request {
            issue_ns: issue,
            complete_ns: Some(issue + 100),
            op: Op::Read,
            sector: block * 8,
            sectors: blocks * 8,
            flags: Flags::SYNC,
            tag: 1,
            cpu: None,
        }
    }

    fn trace(reqs: Vec<Request>) -> Trace {
        Trace {
            requests: reqs,
            tags: vec![String::new(), "b".into()],
            queue: None,
        }
    }

    #[test]
    fn a_missed_indirect_block_reads_its_followers_and_their_reads_go() {
        // Indirect blocks 500..504 clustered; a fifth one elsewhere.
        let ino = inode(&[500, 501, 502, 503, 900]);
        let t = trace(vec![
            read(0, 500, 1),
            read(1000, 20_000, 2),
            read(2000, 502, 1),
            read(3000, 30_000, 1),
            read(4000, 900, 1),
        ]);
        let a = apply(&t, &ino, 4096, 3);
        // 500 triggers 501 and 502 (n = 3); 502's read is dropped; 900 has no clustered
        // follower.
        assert_eq!(a.inserted, 1);
        assert_eq!(a.inserted_blocks, 2);
        assert_eq!(a.dropped, 1);
        let sectors: Vec<(u64, u32, bool)> = a
            .trace
            .requests
            .iter()
            .map(|r| (r.sector / 8, r.sectors / 8, r.complete_ns.is_none()))
            .collect();
        assert_eq!(
            sectors,
            [
                (500, 1, false),
                (501, 2, true),
                (20_000, 2, false),
                (30_000, 1, false),
                (900, 1, false)
            ]
        );
        // Issued when the triggering read completed.
        assert_eq!(a.trace.requests[1].issue_ns, 100);
    }

    #[test]
    fn the_2007_layout_has_nothing_to_read_ahead() {
        // Each indirect block sits before the data it maps: the next block is data.
        let ino = inode(&[10_012, 11_037, 12_062]);
        let t = trace(vec![read(0, 10_012, 1), read(10, 10_013, 32)]);
        let a = apply(&t, &ino, 4096, 32);
        assert_eq!((a.inserted, a.dropped), (0, 0));
        assert_eq!(a.trace, t);
    }
}
