//! Benchmark 1 (sequential write of the file, then `sync`) as the write stream the layout
//! implies, priced on the device model.
//!
//! Today's kernel cannot write a file the way ext3 of 2007 allocated it (the ext4 driver in
//! ext3 mode has its own allocator), so nothing is captured: the stream is built from the
//! policy's plan, following what ext3 in ordered mode (the default) and the 2.6.23 writeback
//! did, and every request is handed to the device model in turn. The model, in full
//! (docs/experiments/metacluster-io.md):
//!
//! 1. **Data in file order.** The program writes faster than the disk, so the disk writes data
//!    continuously, in file order, in requests of at most `os_max_sectors_kb`, broken wherever
//!    the layout is not contiguous (an indirect block in the way on the 2007 layout, the
//!    metacluster or a group's metadata on the metacluster layout).
//! 2. **Metadata dirtied with it.** Writing logical block `L` allocates its data block and,
//!    when `L` is the first block an indirect (double, triple) block maps, that block too
//!    (the plan's `MapBlock::logical`); each allocation dirties its group's block bitmap and
//!    group descriptor; every indirect (double, triple) block on the path to a written block
//!    gets a pointer, so is dirtied; and every transaction dirties the inode's inode-table
//!    block.
//! 3. **Journal commits every `commit_interval_s`** (ext3's `JBD_DEFAULT_MAX_COMMIT_AGE`, 5 s,
//!    fs/jbd, 2.6.23) of modelled time: in ordered mode the transaction's data is on disk
//!    before the commit (it was written in step 1); then one sequential write to the journal
//!    of the descriptor blocks (one per 508 tags) and every metadata block dirtied since the
//!    last commit, then the commit block alone (jbd waits for the log writes before it writes
//!    the commit record). Barriers were off by default in 2.6.23's ext3: no cache flushes.
//! 4. **Home locations by writeback.** Committed metadata blocks are dirty buffers of the
//!    block device; the periodic writeback (`dirty_writeback_centisecs` = 5 s) writes the
//!    device's dirty buffers once they are `dirty_expire_s` old (30 s) — all of them, since
//!    2.6.23 ages the device's inode, not each buffer — in ascending block order, merged where
//!    contiguous.
//! 5. **`sync`**: the rest of the data, a last commit, every home write left.
//!
//! Not modelled: the superblock written at sync (one block), the program's CPU time (the
//! write is disk-bound), queueing of writeback and commit I/O together (requests are served
//! one after the other, in the order above).

use super::MetaclusterIoSpec;
use layoutlab_device::{Device, IoRequest};
use layoutlab_layout::geometry::MetaKind;
use layoutlab_layout::{Geometry, MapKind, PlannedInode};
use layoutlab_trace::{Flags, Op, Request, Trace};
use std::collections::BTreeSet;

/// Tags in a journal descriptor block (4 KiB: 12-byte header, 8-byte tags, one 16-byte UUID).
const TAGS_PER_DESCRIPTOR: u64 = 508;

/// What the stream holds, by kind of block written: blocks and commits of one write stream, not
/// counts of the file system's objects (`layoutlab_image::ImageCounts`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WriteCounts {
    /// File data blocks written.
    pub data_blocks: u64,
    /// Journal blocks written (descriptors, metadata copies, commit blocks).
    pub journal_blocks: u64,
    /// Metadata blocks written home (indirect blocks, bitmaps, descriptors, inode table).
    pub home_blocks: u64,
    /// Journal commits.
    pub commits: u64,
}

struct Builder<'a> {
    dev: &'a mut dyn Device,
    spb: u64,
    max_blocks: u64,
    now_ns: f64,
    trace: Trace,
    tag: u16,
    counts: WriteCounts,
}

impl Builder<'_> {
    /// Hands a write of `blocks` blocks at `block` to the device when the previous one is done.
    fn write(&mut self, block: u64, blocks: u64, flags: Flags) {
        let req = IoRequest {
            op: Op::Write,
            sector: block * self.spb,
            sectors: (blocks * self.spb) as u32,
            flags,
        };
        let issue = self.now_ns;
        let done = self.dev.submit(issue, &req);
        self.trace.requests.push(Request {
            issue_ns: issue.round() as u64,
            complete_ns: Some(done.round().max(issue.round()) as u64),
            op: Op::Write,
            sector: req.sector,
            sectors: req.sectors,
            flags,
            tag: self.tag,
            cpu: None,
        });
        self.now_ns = done;
    }

    /// Writes the sorted `blocks`, merged where contiguous.
    fn write_sorted(&mut self, blocks: &BTreeSet<u64>, flags: Flags) {
        let mut run: Option<(u64, u64)> = None;
        for &b in blocks {
            run = match run {
                Some((s, n)) if s + n == b && n < self.max_blocks => Some((s, n + 1)),
                Some((s, n)) => {
                    self.write(s, n, flags);
                    Some((b, 1))
                }
                None => Some((b, 1)),
            };
        }
        if let Some((s, n)) = run {
            self.write(s, n, flags);
        }
    }
}

/// The journal's blocks in log order (block 0 is its superblock).
fn journal_blocks(geometry: &Geometry) -> Vec<u64> {
    let mut extents: Vec<(u64, u64)> = geometry
        .meta
        .iter()
        .filter(|m| m.kind == MetaKind::Journal)
        .map(|m| (m.start, m.blocks))
        .collect();
    extents.sort();
    extents.into_iter().flat_map(|(s, n)| s..s + n).collect()
}

/// Builds benchmark 1's stream for `inode` (inode number `inode.ino`) on `geometry` and
/// prices it on `dev` as it goes; returns the trace (tag `tag`, issue and completion times
/// the model's) and what it holds. `inode_size` is the file system's inode size in bytes.
pub fn build(
    inode: &PlannedInode,
    geometry: &Geometry,
    inode_size: u64,
    spec: &MetaclusterIoSpec,
    dev: &mut dyn Device,
    tag: &str,
) -> (Trace, WriteCounts) {
    let bs = u64::from(geometry.block_size_bytes);
    let mut trace = Trace::default();
    let tag = trace.tag(tag);
    let mut b = Builder {
        dev,
        spb: bs / 512,
        max_blocks: (u64::from(spec.os_max_sectors_kb) * 1024 / bs).max(1),
        now_ns: 0.0,
        trace,
        tag,
        counts: WriteCounts::default(),
    };
    let journal = journal_blocks(geometry);
    let mut jpos: usize = 1;
    let group_of = |blk: u64| geometry.group_of(blk);
    let bpg_desc = bs / geometry.desc_bytes.max(1);
    let gdt_block = |g: u64| geometry.first_data_block + 1 + g / bpg_desc;
    let ipg = u64::from(geometry.inodes_per_group);
    let ino = u64::from(inode.ino);
    let itable_block = geometry.groups[((ino - 1) / ipg) as usize].inode_table
        + ((ino - 1) % ipg) * inode_size / bs;

    // Mapping blocks by the logical block whose first write allocates them.
    let mut mapping: Vec<(u64, u64)> = inode
        .mapping
        .iter()
        .map(|m| (m.logical, m.physical))
        .collect();
    mapping.sort();
    let mut next_map = 0usize;
    let per_block = bs / 4;
    let paths: Vec<(u64, u64, u64)> = inode
        .mapping
        .iter()
        .map(|m| {
            let span = match m.kind {
                MapKind::Ind => per_block,
                MapKind::Dind => per_block * per_block,
                _ => per_block * per_block * per_block,
            };
            (m.logical, span, m.physical)
        })
        .collect();
    let mut runs = inode.data.clone();
    runs.sort_by_key(|r| r.logical);

    let interval = spec.commit_interval_s * 1e9;
    let wb_interval = spec.writeback_interval_s * 1e9;
    let expire = spec.dirty_expire_s * 1e9;
    let mut next_commit = interval;
    let mut next_wb = wb_interval;
    let mut dirty: BTreeSet<u64> = BTreeSet::new();
    // Committed, not yet written home; and when the oldest of them was committed.
    let mut home: BTreeSet<u64> = BTreeSet::new();
    let mut oldest: Option<f64> = None;
    // Journal blocks used since the last time every home write was done.
    let mut log_used: usize = 0;

    let commit = |b: &mut Builder,
                  dirty: &mut BTreeSet<u64>,
                  home: &mut BTreeSet<u64>,
                  oldest: &mut Option<f64>,
                  jpos: &mut usize,
                  log_used: &mut usize| {
        if dirty.is_empty() || journal.len() < 3 {
            return;
        }
        let n = dirty.len() as u64;
        let log_blocks = (n.div_ceil(TAGS_PER_DESCRIPTOR) + n) as usize;
        // A full log forces a checkpoint: everything committed is written home first.
        if *log_used + log_blocks + 1 > journal.len() - 1 {
            b.write_sorted(home, Flags::META);
            b.counts.home_blocks += home.len() as u64;
            home.clear();
            *oldest = None;
            *log_used = 0;
        }
        let mut left = log_blocks;
        while left > 0 {
            // One request per contiguous stretch of the log (it wraps, and it may have holes
            // where the journal inode's own indirect blocks sit).
            let start = journal[*jpos];
            let mut k = 1usize;
            while k < left
                && (k as u64) < b.max_blocks
                && *jpos + k < journal.len()
                && journal[*jpos + k] == start + k as u64
            {
                k += 1;
            }
            b.write(start, k as u64, Flags(Flags::SYNC.0 | Flags::META.0));
            left -= k;
            *jpos += k;
            if *jpos >= journal.len() {
                *jpos = 1;
            }
        }
        b.write(journal[*jpos], 1, Flags(Flags::SYNC.0 | Flags::META.0));
        *jpos += 1;
        if *jpos >= journal.len() {
            *jpos = 1;
        }
        *log_used += log_blocks + 1;
        b.counts.journal_blocks += log_blocks as u64 + 1;
        b.counts.commits += 1;
        home.append(dirty);
        oldest.get_or_insert(b.now_ns);
    };

    for run in &runs {
        let mut done = 0;
        while done < run.len {
            // A chunk: contiguous in the file and on disk, at most one request.
            let n = (run.len - done).min(b.max_blocks);
            let (l0, p0) = (run.logical + done, run.physical + done);
            // Allocated now: their groups' bitmaps and descriptors change.
            while next_map < mapping.len() && mapping[next_map].0 < l0 + n {
                let m = mapping[next_map].1;
                dirty.insert(geometry.groups[group_of(m) as usize].block_bitmap);
                dirty.insert(gdt_block(group_of(m)));
                next_map += 1;
            }
            // Every mapping block on the path to these blocks gets a pointer written.
            for &(first, span, m) in &paths {
                if first < l0 + n && l0 < first + span {
                    dirty.insert(m);
                }
            }
            for g in group_of(p0)..=group_of(p0 + n - 1) {
                dirty.insert(geometry.groups[g as usize].block_bitmap);
                dirty.insert(gdt_block(g));
            }
            dirty.insert(itable_block);
            b.write(p0, n, Flags::NONE);
            b.counts.data_blocks += n;
            done += n;
            if b.now_ns >= next_commit {
                commit(
                    &mut b,
                    &mut dirty,
                    &mut home,
                    &mut oldest,
                    &mut jpos,
                    &mut log_used,
                );
                while next_commit <= b.now_ns {
                    next_commit += interval;
                }
            }
            if b.now_ns >= next_wb {
                if oldest.is_some_and(|t| b.now_ns - t >= expire) {
                    b.write_sorted(&home, Flags::META);
                    b.counts.home_blocks += home.len() as u64;
                    home.clear();
                    oldest = None;
                    log_used = 0;
                }
                while next_wb <= b.now_ns {
                    next_wb += wb_interval;
                }
            }
        }
    }
    // sync: the last commit, then every home write.
    commit(
        &mut b,
        &mut dirty,
        &mut home,
        &mut oldest,
        &mut jpos,
        &mut log_used,
    );
    b.write_sorted(&home, Flags::META);
    b.counts.home_blocks += home.len() as u64;
    (b.trace, b.counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> MetaclusterIoSpec {
        toml::from_str::<toml::Table>(include_str!(
            "../../../../../experiments/metacluster-io.toml"
        ))
        .unwrap()["metacluster-io"]
            .clone()
            .try_into()
            .unwrap()
    }

    #[test]
    fn the_stream_writes_the_data_in_file_order_and_every_indirect_block_home() {
        let spec = spec();
        for policy in ["ext3-2007", "ext3-metacluster"] {
            let (profile, geometry, plan) =
                super::super::run::plan_image("ext3-2007", policy, 8_000_000_000, 2_000_000_000, 7)
                    .unwrap();
            let inode = super::super::run::file_inode(&plan).unwrap();
            let mut dev = layoutlab_device::preset::load_preset("sata-400g-2007").unwrap();
            let (trace, counts) = build(
                inode,
                &geometry,
                u64::from(profile.inode_size_bytes),
                &spec,
                dev.as_mut(),
                "b1",
            );
            let data_blocks: u64 = inode.data.iter().map(|r| r.len).sum();
            assert_eq!(counts.data_blocks, data_blocks);
            // Data requests (no flags) come in file order: physical order of the runs.
            let data: Vec<u64> = trace
                .requests
                .iter()
                .filter(|r| r.flags == Flags::NONE)
                .map(|r| r.sector / 8)
                .collect();
            assert!(data.windows(2).all(|w| w[0] < w[1]), "{policy}");
            // Every indirect block is written home (at writeback or at sync).
            let written: Vec<u64> = trace
                .requests
                .iter()
                .filter(|r| r.flags == Flags::META)
                .flat_map(|r| r.sector / 8..(r.sector + u64::from(r.sectors)) / 8)
                .collect();
            for m in &inode.mapping {
                assert!(
                    written.contains(&m.physical),
                    "{policy}: indirect block {} never written home",
                    m.physical
                );
            }
            // Commits every 5 s of modelled time: at least one per 5 s the stream took.
            let secs = trace.requests.last().unwrap().complete_ns.unwrap() as f64 / 1e9;
            assert!(
                counts.commits as f64 >= (secs / 5.0).floor(),
                "{policy} {counts:?}"
            );
            assert!(counts.journal_blocks > counts.commits * 2);
        }
    }
}
