//! The 2007 kernel's order of a read across an indirect block, restored in a captured trace.
//!
//! A buffered read of a block-mapped file builds its bios page by page and asks the file
//! system for each page's blocks. When the next page lies past the last block the current
//! indirect block maps, the mapping needs a block that is not yet in memory, and the file
//! system reads it synchronously. The kernels of 2007 first pushed out the bio of data they had
//! already built: ext3 flags the last block an indirect block maps as a boundary
//! (`ext3_get_blocks_handle`: `if (count > blocks_to_boundary) set_buffer_boundary(bh_result)`,
//! since 2.6.18's "ext3-multiblock-boundary-fix"), and `do_mpage_readpage` submits the bio it
//! holds when it meets a boundary. The reason is spelled out above `mpage_readpages` in
//! 2.6.24's `fs/mpage.c`: without it "an mpage read of the first 16 blocks of an ext2 file will
//! cause I/O to be submitted in the following order: 12 0 1 2 3 4 5 6 7 8 9 10 11 13 14 15
//! 16"; with it "the disk requests \[are\] issued in the correct order". So the drive saw the
//! data in front of the boundary, then the indirect block, then the data after it.
//!
//! Today's kernel, reading the same image on the capture device (ext4's driver in ext3 mode),
//! issues the indirect block first and the data in front of it afterwards, whatever the I/O
//! scheduler (measured: `none` and `mq-deadline` alike, 2026-11-29, kernel 6.18; docs/fidelity.md,
//! "metacluster-io"). On a disk that order costs the 2007 layout a revolution or two at every
//! indirect block of a sequential read: the drive has just read ahead past the data when the
//! indirect block behind it is asked for, and then has to come back.
//!
//! [`restore`] moves each such data read back in front of the indirect-block read that
//! overtook it. A data read qualifies when it reads file blocks that end exactly where the
//! range mapped by the indirect block begins (the bio that was pending at the boundary), and
//! it comes after the indirect-block read, before any read of a mapping block for another
//! range, within [`WINDOW`] requests. It takes the indirect-block read's issue stamps (wall and
//! CPU), so a replay issues it first and the indirect block right behind it; nothing else
//! changes (every request is kept, with its size and place on disk).

use super::file_map::FileMap;
use layoutlab_layout::PlannedInode;
use layoutlab_trace::{Op, Request, Trace};

/// How many requests after an indirect-block read are searched for the data read it overtook.
/// Today's kernel issues that read within the next three (the block after the indirect one,
/// the data in front of it, the rest of the window); eight leaves room without reaching the
/// next boundary, which is at least 1024 blocks (a read-ahead window is at most 128 of them)
/// further on.
pub const WINDOW: usize = 8;

/// What [`restore`] did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Restored {
    /// The trace in the period's order.
    pub trace: Trace,
    /// Data reads moved in front of the indirect-block read that had overtaken them.
    pub moved: u64,
}

/// What [`restore`] asks of the file's map about a request.
struct Maps(FileMap);

impl Maps {
    /// The first logical block mapped by the mapping blocks `r` reads, if it reads any.
    fn mapped_from(&self, r: &Request, spb: u64) -> Option<u64> {
        super::request_blocks(r, spb)
            .filter_map(|b| self.0.mapped_from(b))
            .min()
    }

    /// One past the last logical block `r` reads, if it reads only file data, in one run of
    /// logical blocks.
    fn data_end(&self, r: &Request, spb: u64) -> Option<u64> {
        let mut end = None;
        for b in super::request_blocks(r, spb) {
            let l = self.0.logical(b)?;
            if end.is_some_and(|e| e != l) {
                return None;
            }
            end = Some(l + 1);
        }
        end
    }
}

/// Restores the 2007 kernel's order of reads across the indirect blocks of `inode` in `trace`.
pub fn restore(trace: &Trace, inode: &PlannedInode, block_size: u64) -> Restored {
    let spb = (block_size / 512).max(1);
    let maps = Maps(FileMap::new(inode, block_size));
    let mut out: Vec<Request> = trace.requests.clone();
    let mut moved = 0u64;
    let mut i = 0;
    while i < out.len() {
        let r = out[i];
        let Some(from) = (r.op == Op::Read)
            .then(|| maps.mapped_from(&r, spb))
            .flatten()
        else {
            i += 1;
            continue;
        };
        // The double-indirect block and the first indirect block under it map the same
        // range: the data read may come after both.
        let mut found = None;
        for (j, q) in out.iter().enumerate().skip(i + 1).take(WINDOW) {
            if q.op != Op::Read {
                continue;
            }
            if let Some(other) = maps.mapped_from(q, spb) {
                if other != from {
                    break;
                }
                continue;
            }
            if maps.data_end(q, spb) == Some(from) {
                found = Some(j);
                break;
            }
        }
        if let Some(j) = found {
            let mut d = out.remove(j);
            d.issue_ns = r.issue_ns;
            d.cpu = match (d.cpu, r.cpu) {
                (Some(dc), Some(rc)) => Some(layoutlab_trace::cpu::CpuStamps {
                    at_issue_ns: rc.at_issue_ns,
                    at_complete_ns: dc.at_complete_ns.max(rc.at_issue_ns),
                }),
                (c, _) => c,
            };
            if let Some(c) = d.complete_ns {
                d.complete_ns = Some(c.max(d.issue_ns));
            }
            out.insert(i, d);
            moved += 1;
            // The indirect-block read is now at i + 1; go on after it.
            i += 2;
            continue;
        }
        i += 1;
    }
    Restored {
        trace: Trace {
            requests: out,
            tags: trace.tags.clone(),
            queue: trace.queue.clone(),
        },
        moved,
    }
}

#[cfg(test)]
mod tests {
    use super::super::file_map::fixtures::{blocks, file_2007, read, trace};
    use super::*;

    #[test]
    fn the_data_in_front_of_a_boundary_goes_before_the_indirect_block_again() {
        // As today's kernel issues it: the indirect block first, then the block after it,
        // then the 12 blocks in front of it, then the rest of the window.
        let t = trace(vec![
            read(0, 1913, 112),
            read(1000, 2037, 1),
            read(2000, 2038, 1),
            read(3000, 2039, 1),
            read(4000, 2025, 12),
            read(4010, 2040, 116),
        ]);
        let r = restore(&t, &file_2007(), 4096);
        assert_eq!(r.moved, 1);
        assert_eq!(
            blocks(&r.trace),
            [
                (1913, 112),
                (2025, 12),
                (2037, 1),
                (2038, 1),
                (2039, 1),
                (2040, 116)
            ]
        );
        // It takes the overtaking read's issue stamps, so a replay issues it first.
        let d = r.trace.requests[1];
        assert_eq!(d.issue_ns, 1000);
        assert_eq!(d.cpu.unwrap().at_issue_ns, 100);
        assert!(d.complete_ns.unwrap() >= d.issue_ns);
        // Nothing else changes.
        let mut a = t.requests.clone();
        let mut b = r.trace.requests.clone();
        let key = |q: &Request| (q.sector, q.sectors);
        a.sort_by_key(key);
        b.sort_by_key(key);
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(
                (x.sector, x.sectors, x.flags, x.tag),
                (y.sector, y.sectors, y.flags, y.tag)
            );
        }
    }

    #[test]
    fn a_trace_already_in_order_is_left_alone() {
        // The data in front of the boundary was read before the indirect block; a data read
        // that does not end at the boundary (the window after it) is not moved.
        let t = trace(vec![
            read(0, 1913, 124),
            read(1000, 2037, 1),
            read(2000, 2038, 1),
            read(3000, 2039, 128),
        ]);
        let r = restore(&t, &file_2007(), 4096);
        assert_eq!(r.moved, 0);
        assert_eq!(r.trace, t);
    }

    /// A read of `len` logical blocks from `logical` of [`file_2007`] (within one run), or of
    /// one of its mapping blocks.
    fn arbitrary_read(pick: u64, len: u64, issue: u64) -> Request {
        let f = file_2007();
        if pick.is_multiple_of(5) {
            let m = f.mapping[(pick / 5) as usize % f.mapping.len()];
            return read(issue, m.physical, 1);
        }
        let run = f.data[(pick as usize / 7) % f.data.len()];
        let first = pick % run.len;
        let n = len.clamp(1, run.len - first);
        read(issue, run.physical + first, n)
    }

    proptest::proptest! {
        /// Over arbitrary reads of the file, each block read once: the same requests come
        /// out, issue times stay in order, and at most one read moves per mapping-block read.
        /// (A second pass may move more: a move can bring another read into a window.)
        #[test]
        fn it_only_reorders(
            picks in proptest::collection::vec((0u64..4000, 1u64..130), 0..40),
        ) {
            // Through the page cache a block is read once: overlapping picks are left out.
            let mut reqs: Vec<Request> = Vec::new();
            for (i, &(p, n)) in picks.iter().enumerate() {
                let q = arbitrary_read(p, n, i as u64 * 1000);
                let end = |r: &Request| r.sector + u64::from(r.sectors);
                if reqs.iter().all(|r| end(r) <= q.sector || end(&q) <= r.sector) {
                    reqs.push(q);
                }
            }
            let t = trace(reqs);
            let ino = file_2007();
            let r = restore(&t, &ino, 4096);
            let key = |q: &Request| (q.sector, q.sectors);
            let (mut a, mut b) = (t.requests.clone(), r.trace.requests.clone());
            a.sort_by_key(key);
            b.sort_by_key(key);
            proptest::prop_assert_eq!(a.iter().map(key).collect::<Vec<_>>(), b.iter().map(key).collect::<Vec<_>>());
            proptest::prop_assert!(r.trace.requests.windows(2).all(|w| w[0].issue_ns <= w[1].issue_ns));
            let mapping_reads = t.requests.iter().filter(|q| q.sectors == 8 && ino.mapping.iter().any(|m| m.physical * 8 == q.sector)).count() as u64;
            proptest::prop_assert!(r.moved <= mapping_reads);
        }
    }

    #[test]
    fn the_search_stops_at_the_next_boundary() {
        // A read ending at logical 12 (the first boundary) after the second boundary's
        // indirect block is not the bio that block overtook.
        let t = trace(vec![
            read(0, 2038, 1),
            read(10, 1012, 1),
            read(20, 1000, 12),
        ]);
        let r = restore(&t, &file_2007(), 4096);
        // 1012 (maps from 12) overtook the direct blocks 1000..1011: they move before it;
        // nothing moves before 2038, whose range starts at 1036.
        assert_eq!(r.moved, 1);
        assert_eq!(blocks(&r.trace), [(2038, 1), (1000, 12), (1012, 1)]);
    }
}
