//! The aging engine: the tree as the stream has left it so far, and the operations that move
//! it toward its targets (create, extend, truncate, unlink, rename, mkdir/rmdir).

use std::collections::{HashMap, HashSet};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::spec::AgingSpec;
use super::stats::{tv, DepthRow, SizeRow, StreamStats};
use super::targets::{depth_targets, parent_of, size_targets, InitialTree, Measured, Pool, Room};
use super::{below, blocks_of, bucket_of, BLOCK, NONE, SIZE_BUCKETS};
use crate::{Error, NsOp, Population};

/// A file the stream may touch (one name, a regular file).
struct FileRec {
    path: String,
    size: u64,
    dir: u32,
    bucket: u8,
    depth: u16,
    /// Index in `sets[bucket][depth]`.
    pos: u32,
    /// Index in `all`.
    all_pos: u32,
}

struct DirRec {
    path: String,
    /// Its parent directory (never freed while this one lives: it is not empty).
    parent: u32,
    depth: u32,
    /// Names in it, of any kind.
    entries: u32,
    /// Index in `by_depth[depth]`.
    depth_pos: u32,
    /// Index in `empty`, or NONE.
    empty_pos: u32,
    /// May be removed (made by the tree or the stream; not the root).
    removable: bool,
}

/// An indexable set of ids: O(1) insert, remove (given the position) and uniform choice.
fn set_remove<F: FnMut(u32, u32)>(v: &mut Vec<u32>, pos: u32, mut moved: F) {
    let last = v.pop().expect("removing from a non-empty set");
    if (pos as usize) < v.len() {
        v[pos as usize] = last;
        moved(last, pos);
    }
}

/// The generator's state: the tree as the stream has left it so far (movable files by size
/// bucket and depth, directories by depth, the empty ones), the histograms against their
/// targets, and live data against the target fullness.
pub(super) struct Ager<'a> {
    spec: &'a AgingSpec,
    rng: ChaCha8Rng,
    initial_names: HashSet<&'a str>,
    serial: u64,
    // files
    files: Vec<FileRec>,
    free_files: Vec<u32>,
    /// Movable files by (bucket, depth): index `bucket * nd + depth`.
    sets: Vec<Vec<u32>>,
    all: Vec<u32>,
    movable_in_bucket: [u64; SIZE_BUCKETS],
    movable_at_depth: Vec<u64>,
    // histograms (every live regular file, hard-linked ones too)
    count: [u64; SIZE_BUCKETS],
    dcount: Vec<u64>,
    files_live: u64,
    // targets
    target: [f64; SIZE_BUCKETS],
    pools: Vec<Pool>,
    dtarget: Vec<f64>,
    nd: usize,
    // directories
    dirs: Vec<DirRec>,
    free_dirs: Vec<u32>,
    by_depth: Vec<Vec<u32>>,
    empty: Vec<u32>,
    dirs_live: u64,
    dir_target: Vec<f64>,
    dirs_goal: u64,
    // space
    live_blocks: u64,
    target_blocks: u64,
    goal_bytes: u64,
    // stats
    st: StreamStats,
    initial_hist: [u64; SIZE_BUCKETS],
    settled: bool,
    /// A create's size that did not fit yet.
    pending: Option<u64>,
}

impl<'a> Ager<'a> {
    /// The engine for `pop` and `spec`, built in the steps of `targets` (each checks what it
    /// can and names the key it refuses), then step 6: the stream's own records of the tree.
    /// `margin` bytes of the file system are left to metadata ([`super::age`]).
    pub(super) fn new(
        pop: &'a Population,
        spec: &'a AgingSpec,
        margin: u64,
    ) -> Result<Ager<'a>, Error> {
        let fs = pop.fs_bytes;
        let tree = InitialTree::read(pop);
        let mut measured = Measured::of(&tree, pop);
        let room = Room::choose(spec, fs, margin, &measured)?;
        let (target, pools) = size_targets(spec, fs, &mut measured, &room)?;
        let (nd, dtarget) = depth_targets(spec, &measured)?;
        let InitialTree {
            dirs: idirs,
            files: ifiles,
            names: initial_names,
        } = tree;
        let Measured {
            count,
            file_depths,
            files_live,
            live_blocks,
            ..
        } = measured;
        let mut a = Ager {
            spec,
            rng: ChaCha8Rng::seed_from_u64(spec.seed),
            initial_names,
            serial: 0,
            files: Vec::new(),
            free_files: Vec::new(),
            sets: vec![Vec::new(); SIZE_BUCKETS * nd],
            all: Vec::new(),
            movable_in_bucket: [0; SIZE_BUCKETS],
            movable_at_depth: vec![0; nd],
            count,
            dcount: vec![0; nd],
            files_live,
            target,
            pools,
            dtarget,
            nd,
            dirs: Vec::new(),
            free_dirs: Vec::new(),
            by_depth: vec![Vec::new(); nd],
            empty: Vec::new(),
            dirs_live: 0,
            dir_target: vec![0.0; nd],
            dirs_goal: 0,
            live_blocks,
            target_blocks: room.target_blocks,
            goal_bytes: (spec.age * fs as f64) as u64,
            st: StreamStats::default(),
            initial_hist: count,
            settled: false,
            pending: None,
        };
        for (d, &c) in file_depths.iter().enumerate() {
            a.dcount[d] = c;
        }
        // directories keep their tree numbers while the tree's are read
        let mut dir_map: Vec<u32> = vec![NONE; idirs.len()];
        for (i, d) in idirs.iter().enumerate().filter(|(_, d)| d.alive) {
            let id = a.dirs.len() as u32;
            dir_map[i] = id;
            a.dirs.push(DirRec {
                path: d.path.to_string(),
                parent: dir_map[d.parent as usize],
                depth: d.depth,
                entries: d.entries,
                depth_pos: a.by_depth[d.depth as usize].len() as u32,
                empty_pos: NONE,
                removable: i != 0,
            });
            a.by_depth[d.depth as usize].push(id);
            if i != 0 {
                a.dirs_live += 1;
                a.dir_target[d.depth as usize] += 1.0;
                if d.entries == 0 {
                    a.dirs[id as usize].empty_pos = a.empty.len() as u32;
                    a.empty.push(id);
                }
            }
        }
        a.dirs_goal = a.dirs_live;
        if a.dirs_live > 0 {
            let n = a.dirs_live as f64;
            a.dir_target.iter_mut().for_each(|t| *t /= n);
        }
        // parent directory of each file: by its name's directory path
        let dir_by_path: HashMap<&str, u32> = idirs
            .iter()
            .enumerate()
            .filter(|(_, d)| d.alive)
            .map(|(i, d)| (d.path, dir_map[i]))
            .collect();
        for f in ifiles.iter().filter(|f| !f.names.is_empty() && !f.linked) {
            let path = f.names[0];
            let dir = dir_by_path[parent_of(path)];
            a.add_file(path.to_string(), f.size, dir);
        }
        a.st = StreamStats {
            capacity_bytes: fs,
            metadata_margin_bytes: margin,
            target_fullness: room.fullness,
            initial_fullness: room.initial_fullness,
            initial_operations: pop.ops.len() as u64,
            goal_bytes: a.goal_bytes,
            files_initial: files_live,
            size_distance_initial: tv(&count, &a.target),
            lowest_fullness_after_settling: f64::NAN,
            highest_fullness_after_settling: f64::NAN,
            ..Default::default()
        };
        Ok(a)
    }

    fn fullness(&self) -> f64 {
        (self.live_blocks * BLOCK) as f64 / self.st.capacity_bytes as f64
    }

    pub(super) fn run(&mut self, sink: &mut dyn FnMut(NsOp)) -> Result<(), Error> {
        self.run_marked(&[], sink).map(|_| ())
    }

    /// [`Ager::run`], also counting, for each of `goals` (bytes written, each at most this
    /// stream's goal), the operations made when the loop first found that many bytes
    /// written: where a stream with that goal would have stopped, since the goal is read
    /// nowhere but in this loop's test. One count per goal, in the goals' order.
    pub(super) fn run_marked(
        &mut self,
        goals: &[u64],
        sink: &mut dyn FnMut(NsOp),
    ) -> Result<Vec<u64>, Error> {
        let mut marks: Vec<Option<u64>> = vec![None; goals.len()];
        // operations given to the sink so far (read by `mark` while the sink holds it)
        let made = std::cell::Cell::new(0u64);
        let mut mark = |written: u64, made: u64| {
            for (m, &g) in marks.iter_mut().zip(goals) {
                if m.is_none() && written >= g {
                    *m = Some(made);
                }
            }
        };
        mark(self.st.bytes_written, 0);
        let done = |marks: Vec<Option<u64>>| {
            marks
                .into_iter()
                .map(|m| m.expect("each goal is at most the stream's, so it was reached"))
                .collect()
        };
        if self.goal_bytes == 0 {
            return Ok(done(marks));
        }
        let mut sink = |op: NsOp| {
            made.set(made.get() + 1);
            sink(op)
        };
        while self.st.bytes_written < self.goal_bytes {
            mark(self.st.bytes_written, made.get());
            if !self.step(&mut sink) {
                return Err(Error::BadAging {
                    source_name: "aging spec".into(),
                    key: "fullness".into(),
                    reason: format!(
                        "no operation can write or free data at fullness {} (live {} blocks of 4 KiB, target {}): the tree cannot reach its targets",
                        self.fullness(),
                        self.live_blocks,
                        self.target_blocks
                    ),
                });
            }
            if self.settled {
                let f = self.fullness();
                let s = &mut self.st;
                if s.lowest_fullness_after_settling.is_nan() {
                    s.lowest_fullness_after_settling = f;
                    s.highest_fullness_after_settling = f;
                }
                s.lowest_fullness_after_settling = s.lowest_fullness_after_settling.min(f);
                s.highest_fullness_after_settling = s.highest_fullness_after_settling.max(f);
            }
        }
        mark(self.st.bytes_written, made.get());
        Ok(done(marks))
    }

    /// One operation; false when none was possible.
    fn step(&mut self, sink: &mut dyn FnMut(NsOp)) -> bool {
        let r: f64 = self.rng.gen();
        if r < self.spec.dir_share {
            if self.dir_op(sink) {
                return true;
            }
        } else if r < self.spec.dir_share + self.spec.rename_share && self.rename(sink) {
            return true;
        }
        if self.live_blocks < self.target_blocks {
            // while a create waits for room, the room is its: no extend takes it
            let extend = self.pending.is_none() && self.rng.gen::<f64>() < self.spec.extend_share;
            if (extend && self.extend(sink)) || self.create(sink) {
                return true;
            }
        }
        // the target is reached: from the first free at or below it on, the fullness is
        // the one held
        if self.live_blocks <= self.target_blocks {
            self.settled = true;
        }
        if self.rng.gen::<f64>() < self.spec.truncate_share && self.truncate(sink) {
            return true;
        }
        self.unlink(sink)
    }

    // ----- bookkeeping -----

    fn set_index(&self, bucket: usize, depth: usize) -> usize {
        bucket * self.nd + depth
    }

    /// Records a new movable file (counts, sets, histograms); returns its id.
    fn add_file(&mut self, path: String, size: u64, dir: u32) -> u32 {
        let depth = self.dirs[dir as usize].depth as usize + 1;
        let bucket = bucket_of(size);
        let si = self.set_index(bucket, depth);
        let rec = FileRec {
            path,
            size,
            dir,
            bucket: bucket as u8,
            depth: depth as u16,
            pos: self.sets[si].len() as u32,
            all_pos: self.all.len() as u32,
        };
        let id = match self.free_files.pop() {
            Some(id) => {
                self.files[id as usize] = rec;
                id
            }
            None => {
                self.files.push(rec);
                (self.files.len() - 1) as u32
            }
        };
        self.sets[si].push(id);
        self.all.push(id);
        self.movable_in_bucket[bucket] += 1;
        self.movable_at_depth[depth] += 1;
        id
    }

    /// Takes file `id` out of its (bucket, depth) set.
    fn unset(&mut self, id: u32) {
        let f = &self.files[id as usize];
        let (b, d, pos) = (f.bucket as usize, f.depth as usize, f.pos);
        let si = self.set_index(b, d);
        let files = &mut self.files;
        set_remove(&mut self.sets[si], pos, |moved, to| {
            files[moved as usize].pos = to
        });
        self.movable_in_bucket[b] -= 1;
        self.movable_at_depth[d] -= 1;
    }

    /// Puts file `id` back into the set its size and depth say.
    fn reset(&mut self, id: u32) {
        let f = &self.files[id as usize];
        let (b, d) = (f.bucket as usize, f.depth as usize);
        let si = self.set_index(b, d);
        self.files[id as usize].pos = self.sets[si].len() as u32;
        self.sets[si].push(id);
        self.movable_in_bucket[b] += 1;
        self.movable_at_depth[d] += 1;
    }

    fn resize(&mut self, id: u32, size: u64) {
        self.unset(id);
        let f = &mut self.files[id as usize];
        self.live_blocks = self.live_blocks - blocks_of(f.size) + blocks_of(size);
        self.count[f.bucket as usize] -= 1;
        f.size = size;
        f.bucket = bucket_of(size) as u8;
        self.count[f.bucket as usize] += 1;
        self.reset(id);
    }

    fn add_entry(&mut self, dir: u32) {
        let d = &mut self.dirs[dir as usize];
        d.entries += 1;
        if d.entries == 1 && d.empty_pos != NONE {
            let pos = d.empty_pos;
            d.empty_pos = NONE;
            let dirs = &mut self.dirs;
            set_remove(&mut self.empty, pos, |moved, to| {
                dirs[moved as usize].empty_pos = to
            });
        }
    }

    fn remove_entry(&mut self, dir: u32) {
        let d = &mut self.dirs[dir as usize];
        d.entries -= 1;
        if d.entries == 0 && d.removable {
            d.empty_pos = self.empty.len() as u32;
            self.empty.push(dir);
        }
    }

    /// A name in `dir` no operation has made: `g` + a base-36 serial (+ `tag`).
    fn fresh_path(&mut self, dir: u32, tag: char) -> String {
        loop {
            self.serial += 1;
            let parent = &self.dirs[dir as usize].path;
            let mut p = String::with_capacity(parent.len() + 16);
            if !parent.is_empty() {
                p.push_str(parent);
                p.push('/');
            }
            p.push(tag);
            let mut n = self.serial;
            loop {
                p.push(std::char::from_digit((n % 36) as u32, 36).expect("digit"));
                n /= 36;
                if n == 0 {
                    break;
                }
            }
            if !self.initial_names.contains(p.as_str()) {
                return p;
            }
        }
    }

    // ----- choices -----

    /// Ideal count of bucket b minus its count, with `n` files.
    fn size_deficit(&self, b: usize, n: u64) -> f64 {
        self.target[b] * n as f64 - self.count[b] as f64
    }

    fn depth_deficit(&self, d: usize, n: u64) -> f64 {
        self.dtarget[d] * n as f64 - self.dcount[d] as f64
    }

    /// Bucket for a new file: a draw from the target (steered or not; the steering is in
    /// what is removed, extended, truncated and renamed).
    fn create_bucket(&mut self) -> usize {
        self.draw_bucket(0, SIZE_BUCKETS - 1)
            .expect("a target has a bucket")
    }

    /// A bucket in `lo..=hi` drawn from the target restricted to it; None when it has no
    /// weight there.
    fn draw_bucket(&mut self, lo: usize, hi: usize) -> Option<usize> {
        let total: f64 = (lo..=hi).map(|b| self.target[b]).sum();
        if total <= 0.0 {
            return None;
        }
        let x = self.rng.gen::<f64>() * total;
        let mut acc = 0.0;
        let mut last = None;
        for b in (lo..=hi).filter(|&b| self.target[b] > 0.0) {
            acc += self.target[b];
            last = Some(b);
            if x < acc {
                return Some(b);
            }
        }
        last
    }

    /// Depth for a new file: a draw from the target.
    fn create_depth(&mut self) -> usize {
        let x: f64 = self.rng.gen();
        let mut acc = 0.0;
        let mut last = 1;
        for d in (1..self.nd).filter(|&d| self.dtarget[d] > 0.0) {
            acc += self.dtarget[d];
            last = d;
            if x < acc {
                return d;
            }
        }
        last
    }

    /// A random movable file of bucket `b`, at its most over-represented depth.
    fn pick_in_bucket(&mut self, b: usize) -> Option<u32> {
        let n = self.files_live;
        let d = argmax(
            (0..self.nd).filter(|&d| !self.sets[self.set_index(b, d)].is_empty()),
            |d| -self.depth_deficit(d, n),
        )?;
        let set = &self.sets[self.set_index(b, d)];
        Some(set[self.rng.gen_range(0..set.len())])
    }

    fn pick_any(&mut self) -> Option<u32> {
        if self.all.is_empty() {
            None
        } else {
            Some(self.all[self.rng.gen_range(0..self.all.len())])
        }
    }

    /// The most over-represented bucket with a movable file, among `range`.
    fn most_over(&self, range: std::ops::Range<usize>) -> Option<usize> {
        let n = self.files_live;
        argmax(range.filter(|&b| self.movable_in_bucket[b] > 0), |b| {
            -self.size_deficit(b, n)
        })
    }

    /// A parent directory at depth `depth`, made (with its parents) when there is none.
    fn parent_at(&mut self, depth: usize, sink: &mut dyn FnMut(NsOp)) -> u32 {
        if depth == 0 {
            return 0;
        }
        if !self.by_depth[depth].is_empty() {
            let v = &self.by_depth[depth];
            return v[self.rng.gen_range(0..v.len())];
        }
        let up = self.parent_at(depth - 1, sink);
        self.mkdir_in(up, sink)
    }

    fn mkdir_in(&mut self, parent: u32, sink: &mut dyn FnMut(NsOp)) -> u32 {
        let path = self.fresh_path(parent, 'h');
        let depth = self.dirs[parent as usize].depth + 1;
        self.add_entry(parent);
        let rec = DirRec {
            path: path.clone(),
            parent,
            depth,
            entries: 0,
            depth_pos: self.by_depth[depth as usize].len() as u32,
            empty_pos: NONE,
            removable: true,
        };
        let id = match self.free_dirs.pop() {
            Some(id) => {
                self.dirs[id as usize] = rec;
                id
            }
            None => {
                self.dirs.push(rec);
                (self.dirs.len() - 1) as u32
            }
        };
        self.by_depth[depth as usize].push(id);
        self.dirs[id as usize].empty_pos = self.empty.len() as u32;
        self.empty.push(id);
        self.dirs_live += 1;
        self.st.mkdirs += 1;
        self.st.operations += 1;
        sink(NsOp::Mkdir { path });
        id
    }

    // ----- operations -----

    fn create(&mut self, sink: &mut dyn FnMut(NsOp)) -> bool {
        // a drawn size waits until it fits: frees make room for it (dropping it would
        // favour small files whenever live data is near the target)
        let size = match self.pending.take() {
            Some(size) => size,
            None => {
                let b = self.create_bucket();
                self.pools[b].draw(&mut self.rng)
            }
        };
        if self.live_blocks + blocks_of(size) > self.target_blocks {
            self.pending = Some(size);
            return false;
        }
        let depth = self.create_depth();
        let dir = self.parent_at(depth - 1, sink);
        let path = self.fresh_path(dir, 'g');
        self.add_entry(dir);
        self.add_file(path.clone(), size, dir);
        self.count[bucket_of(size)] += 1;
        self.dcount[depth] += 1;
        self.files_live += 1;
        self.live_blocks += blocks_of(size);
        self.st.creates += 1;
        self.st.operations += 1;
        self.st.bytes_written += size;
        sink(NsOp::Create { path, bytes: size });
        true
    }

    /// Largest size file `id` may grow to without live data passing the target.
    fn max_fit(&self, id: u32) -> u64 {
        let size = self.files[id as usize].size;
        let room = self.target_blocks.saturating_sub(self.live_blocks);
        (blocks_of(size) + room) * BLOCK
    }

    fn extend(&mut self, sink: &mut dyn FnMut(NsOp)) -> bool {
        let (id, new_size) = if self.spec.steer {
            // a file of the most over-represented bucket grows into a bucket drawn from the
            // target above it (or within its own), by at most what a create would write: an
            // extend of a 1 GiB file is not a 1 GiB write, and extends must not outweigh
            // creates in the volume written
            let Some(o) = self.most_over(0..SIZE_BUCKETS - 1) else {
                return false;
            };
            let id = self.pick_in_bucket(o).expect("the bucket has a file");
            let size = self.files[id as usize].size;
            let b = self.create_bucket();
            let most = self.pools[b].draw(&mut self.rng).max(1);
            let up = match self.draw_bucket(o + 1, SIZE_BUCKETS - 1) {
                Some(u) if self.rng.gen::<f64>() < self.above_weight(o) => {
                    Some(self.pools[u].draw(&mut self.rng)).filter(|&n| n - size <= most)
                }
                _ => None,
            };
            let new = match up {
                Some(n) => n,
                None => {
                    let top = below(o) - 1;
                    if size >= top {
                        return false;
                    }
                    size + self.rng.gen_range(1..=most.min(top - size))
                }
            };
            (id, new)
        } else {
            let Some(id) = self.pick_any() else {
                return false;
            };
            let b = self.create_bucket();
            let more = self.pools[b].draw(&mut self.rng).max(1);
            (id, self.files[id as usize].size.saturating_add(more))
        };
        let size = self.files[id as usize].size;
        if new_size <= size || new_size > self.max_fit(id) {
            return false;
        }
        self.resize(id, new_size);
        self.st.extends += 1;
        self.st.operations += 1;
        self.st.bytes_written += new_size - size;
        sink(NsOp::Extend {
            path: self.files[id as usize].path.clone(),
            bytes: new_size - size,
        });
        true
    }

    /// Target weight of the buckets above `b`, given bucket `b` and above.
    fn above_weight(&self, b: usize) -> f64 {
        let above: f64 = self.target[b + 1..].iter().sum();
        let from: f64 = above + self.target[b];
        if from > 0.0 {
            above / from
        } else {
            1.0
        }
    }

    /// Target weight of the buckets below `b`, given bucket `b` and below.
    fn below_weight(&self, b: usize) -> f64 {
        let under: f64 = self.target[..b].iter().sum();
        let upto: f64 = under + self.target[b];
        if upto > 0.0 {
            under / upto
        } else {
            1.0
        }
    }

    fn truncate(&mut self, sink: &mut dyn FnMut(NsOp)) -> bool {
        let (id, new_size) = if self.spec.steer {
            // a file of the most over-represented bucket shrinks into a bucket drawn from
            // the target below it (or within its own)
            let Some(o) = self.most_over(1..SIZE_BUCKETS) else {
                return false;
            };
            let id = self.pick_in_bucket(o).expect("the bucket has a file");
            let size = self.files[id as usize].size;
            match self.draw_bucket(0, o - 1) {
                Some(u) if self.rng.gen::<f64>() < self.below_weight(o) => {
                    (id, self.pools[u].draw(&mut self.rng))
                }
                _ => {
                    let low = 1u64 << (o - 1);
                    if size <= low {
                        return false;
                    }
                    (id, self.rng.gen_range(low..size))
                }
            }
        } else {
            let Some(id) = self.pick_any() else {
                return false;
            };
            let size = self.files[id as usize].size;
            if size == 0 {
                return false;
            }
            (id, self.rng.gen_range(0..size))
        };
        if new_size >= self.files[id as usize].size {
            return false;
        }
        self.resize(id, new_size);
        self.st.truncates += 1;
        self.st.operations += 1;
        sink(NsOp::Truncate {
            path: self.files[id as usize].path.clone(),
            bytes: new_size,
        });
        true
    }

    fn unlink(&mut self, sink: &mut dyn FnMut(NsOp)) -> bool {
        let id = if self.spec.steer {
            let Some(o) = self.most_over(0..SIZE_BUCKETS) else {
                return false;
            };
            self.pick_in_bucket(o).expect("the bucket has a file")
        } else {
            let Some(id) = self.pick_any() else {
                return false;
            };
            id
        };
        self.unset(id);
        let f = &mut self.files[id as usize];
        let path = std::mem::take(&mut f.path);
        let (size, bucket, depth, dir, all_pos) = (
            f.size,
            f.bucket as usize,
            f.depth as usize,
            f.dir,
            f.all_pos,
        );
        let files = &mut self.files;
        set_remove(&mut self.all, all_pos, |moved, to| {
            files[moved as usize].all_pos = to
        });
        self.free_files.push(id);
        self.count[bucket] -= 1;
        self.dcount[depth] -= 1;
        self.files_live -= 1;
        self.live_blocks -= blocks_of(size);
        self.remove_entry(dir);
        self.st.unlinks += 1;
        self.st.operations += 1;
        sink(NsOp::Unlink { path });
        true
    }

    fn rename(&mut self, sink: &mut dyn FnMut(NsOp)) -> bool {
        if self.all.is_empty() {
            return false;
        }
        let n = self.files_live;
        let mut choice = None;
        if self.spec.steer {
            let over = argmax(
                (1..self.nd).filter(|&d| self.movable_at_depth[d] > 0),
                |d| -self.depth_deficit(d, n),
            );
            let under = argmax(
                (1..self.nd).filter(|&d| self.dtarget[d] > 0.0 && !self.by_depth[d - 1].is_empty()),
                |d| self.depth_deficit(d, n),
            );
            if let (Some(o), Some(u)) = (over, under) {
                if o != u && self.depth_deficit(u, n) >= 0.5 && self.depth_deficit(o, n) <= -0.5 {
                    let b = argmax(
                        (0..SIZE_BUCKETS).filter(|&b| !self.sets[self.set_index(b, o)].is_empty()),
                        |b| -self.size_deficit(b, n),
                    )
                    .expect("a file at that depth");
                    let set = &self.sets[self.set_index(b, o)];
                    let id = set[self.rng.gen_range(0..set.len())];
                    let v = &self.by_depth[u - 1];
                    let to_dir = v[self.rng.gen_range(0..v.len())];
                    choice = Some((id, to_dir));
                }
            }
        }
        let (id, to_dir) = match choice {
            Some(c) => c,
            None if self.spec.steer => {
                // balanced: a new name in the same directory
                let id = self.pick_any().expect("a file");
                (id, self.files[id as usize].dir)
            }
            None => {
                let id = self.pick_any().expect("a file");
                let to_dir = loop {
                    let d = self.rng.gen_range(0..self.dirs.len()) as u32;
                    let rec = &self.dirs[d as usize];
                    // a live directory (freed slots have no depth position) shallow enough
                    if (rec.depth as usize) + 1 < self.nd
                        && self.by_depth[rec.depth as usize]
                            .get(rec.depth_pos as usize)
                            .copied()
                            == Some(d)
                    {
                        break d;
                    }
                };
                (id, to_dir)
            }
        };
        let to = self.fresh_path(to_dir, 'g');
        self.unset(id);
        let from_dir = self.files[id as usize].dir;
        let old_depth = self.files[id as usize].depth as usize;
        let new_depth = self.dirs[to_dir as usize].depth as usize + 1;
        self.add_entry(to_dir);
        self.remove_entry(from_dir);
        let f = &mut self.files[id as usize];
        let from = std::mem::replace(&mut f.path, to.clone());
        f.dir = to_dir;
        f.depth = new_depth as u16;
        self.dcount[old_depth] -= 1;
        self.dcount[new_depth] += 1;
        self.reset(id);
        self.st.renames += 1;
        self.st.operations += 1;
        sink(NsOp::Rename { path: from, to });
        true
    }

    /// mkdir while there are no more directories than the tree had (a tree without any
    /// gets none), rmdir of an empty one while there are more: the count churns between
    /// the tree's and one more.
    fn dir_op(&mut self, sink: &mut dyn FnMut(NsOp)) -> bool {
        if self.dirs_live < self.dirs_goal
            || (self.dirs_live == self.dirs_goal && self.dirs_goal > 0)
        {
            let n = self.dirs_live + 1;
            let depth = if self.spec.steer {
                argmax(
                    (1..self.nd - 1).filter(|&d| !self.by_depth[d - 1].is_empty()),
                    |d| self.dir_target[d] * n as f64 - self.by_depth[d].len() as f64,
                )
            } else {
                let v: Vec<usize> = (1..self.nd - 1)
                    .filter(|&d| self.dir_target[d] > 0.0 && !self.by_depth[d - 1].is_empty())
                    .collect();
                (!v.is_empty()).then(|| v[self.rng.gen_range(0..v.len())])
            };
            let Some(depth) = depth else { return false };
            let v = &self.by_depth[depth - 1];
            let parent = v[self.rng.gen_range(0..v.len())];
            self.mkdir_in(parent, sink);
            return true;
        }
        if self.dirs_live > self.dirs_goal && !self.empty.is_empty() {
            let id = self.empty[self.rng.gen_range(0..self.empty.len())];
            let d = &mut self.dirs[id as usize];
            let path = std::mem::take(&mut d.path);
            let (depth, depth_pos, empty_pos, parent) =
                (d.depth as usize, d.depth_pos, d.empty_pos, d.parent);
            d.empty_pos = NONE;
            d.depth_pos = NONE;
            let dirs = &mut self.dirs;
            set_remove(&mut self.empty, empty_pos, |moved, to| {
                dirs[moved as usize].empty_pos = to
            });
            set_remove(&mut self.by_depth[depth], depth_pos, |moved, to| {
                dirs[moved as usize].depth_pos = to
            });
            self.remove_entry(parent);
            self.free_dirs.push(id);
            self.dirs_live -= 1;
            self.st.rmdirs += 1;
            self.st.operations += 1;
            sink(NsOp::Rmdir { path });
            return true;
        }
        false
    }

    pub(super) fn stats(&self) -> StreamStats {
        let mut s = self.st.clone();
        s.final_fullness = self.fullness();
        if !self.settled {
            s.lowest_fullness_after_settling = s.final_fullness;
            s.highest_fullness_after_settling = s.final_fullness;
        }
        s.files_final = self.files_live;
        s.directories_final = self.dirs_live;
        s.size_distance = tv(&self.count, &self.target);
        s.depth_distance = tv(&self.dcount, &self.dtarget);
        let dir_counts: Vec<u64> = (0..self.nd)
            .map(|d| {
                if d == 0 {
                    0
                } else {
                    self.by_depth[d].len() as u64
                }
            })
            .collect();
        s.dir_depth_distance = tv(&dir_counts, &self.dir_target);
        let total = |c: &[u64]| c.iter().sum::<u64>().max(1) as f64;
        let (ni, nf) = (total(&self.initial_hist), total(&self.count));
        s.size_histogram = (0..SIZE_BUCKETS)
            .filter(|&b| self.target[b] > 0.0 || self.initial_hist[b] > 0 || self.count[b] > 0)
            .map(|b| SizeRow {
                below_bytes: below(b),
                target_fraction: self.target[b],
                initial_fraction: self.initial_hist[b] as f64 / ni,
                final_fraction: self.count[b] as f64 / nf,
            })
            .collect();
        let nd = total(&self.dcount);
        s.depth_histogram = (1..self.nd)
            .filter(|&d| self.dtarget[d] > 0.0 || self.dcount[d] > 0)
            .map(|d| DepthRow {
                depth: d as u32,
                target_fraction: self.dtarget[d],
                final_fraction: self.dcount[d] as f64 / nd,
            })
            .collect();
        s
    }
}

/// The item with the largest key; ties go to the first.
fn argmax<I: Iterator<Item = usize>>(it: I, key: impl Fn(usize) -> f64) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for i in it {
        let k = key(i);
        if best.is_none_or(|(_, bk)| k > bk) {
            best = Some((i, k));
        }
    }
    best.map(|(i, _)| i)
}
