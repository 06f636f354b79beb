//! The tree an aging stream starts from and what it steers toward: the tree as the
//! population's operations leave it, its measured size and depth distributions, the fullness
//! to hold (below the cap the caller's metadata margin sets), the target distributions and
//! where a new file's size is drawn from — the steps of building the engine, each checked in
//! turn.

use std::collections::{HashMap, HashSet};

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::spec::{AgingSpec, SizeShape, SizeWeight};
use super::{below, blocks_of, bucket_of, BLOCK, MAX_OPERATIONS, SIZE_BUCKETS};
use crate::{Error, NsOp, Population};

/// The largest fullness an aging stream may hold on a `fs_bytes` file system of which it
/// leaves `margin_bytes` to metadata (the planners do not model ENOSPC). What a file system
/// takes for metadata is mkfs knowledge, not the stream's: the caller gives the margin
/// (`layoutlab_layout::mkfs::metadata_margin_bytes`, docs/aging.md).
pub fn fullness_cap(fs_bytes: u64, margin_bytes: u64) -> f64 {
    if fs_bytes == 0 {
        return 0.0;
    }
    fs_bytes.saturating_sub(margin_bytes) as f64 / fs_bytes as f64
}

/// Where a bucket's sizes come from.
pub(super) enum Pool {
    /// Nothing (weight 0).
    Empty,
    /// The tree's own files of the bucket.
    Sample(Vec<u64>),
    /// Uniform over an inclusive range.
    Range(u64, u64),
}

impl Pool {
    pub(super) fn draw(&self, rng: &mut ChaCha8Rng) -> u64 {
        match self {
            Pool::Empty => unreachable!("no draw from an empty pool"),
            Pool::Sample(v) => v[rng.gen_range(0..v.len())],
            Pool::Range(lo, hi) => rng.gen_range(*lo..=*hi),
        }
    }
}

/// An error of the spec against the tree: the key and why.
fn bad(key: &str, reason: String) -> Error {
    Error::BadAging {
        source_name: "aging spec".into(),
        key: key.into(),
        reason,
    }
}

/// The directory part of a path (`""` for the root's entries).
pub(super) fn parent_of(p: &str) -> &str {
    p.rsplit_once('/').map_or("", |(d, _)| d)
}

/// A file of the tree: its size, its names, whether it has more than one.
pub(super) struct TreeFile<'a> {
    pub(super) size: u64,
    pub(super) names: Vec<&'a str>,
    pub(super) linked: bool,
}

/// A directory of the tree (index 0 is the root).
pub(super) struct TreeDir<'a> {
    pub(super) path: &'a str,
    pub(super) parent: u32,
    pub(super) depth: u32,
    pub(super) entries: u32,
    pub(super) alive: bool,
}

/// Step 1: the tree once the population's operations are done, and every name it ever had
/// (the stream makes names no earlier operation used).
pub(super) struct InitialTree<'a> {
    pub(super) dirs: Vec<TreeDir<'a>>,
    pub(super) files: Vec<TreeFile<'a>>,
    pub(super) names: HashSet<&'a str>,
}

impl<'a> InitialTree<'a> {
    /// Replays `pop`'s operations on names (the tree is checked: `Population::check_tree`).
    pub(super) fn read(pop: &'a Population) -> InitialTree<'a> {
        #[derive(Clone, Copy)]
        enum Node {
            Dir(u32),
            File(u32),
            Other,
        }
        let mut node: HashMap<&'a str, Node> = Default::default();
        let mut initial_names: HashSet<&'a str> = HashSet::new();
        let mut idirs: Vec<TreeDir<'a>> = vec![TreeDir {
            path: "",
            parent: 0,
            depth: 0,
            entries: 0,
            alive: true,
        }];
        let mut ifiles: Vec<TreeFile<'a>> = Vec::new();
        node.insert("", Node::Dir(0));
        let dir_id = |node: &HashMap<&'a str, Node>, p: &str| match node.get(p) {
            Some(Node::Dir(d)) => *d as usize,
            _ => unreachable!("check_tree: the parent is a directory"),
        };
        for op in &pop.ops {
            let path = op.path();
            match op {
                NsOp::Mkdir { .. } => {
                    let p = dir_id(&node, parent_of(path));
                    idirs[p].entries += 1;
                    let depth = idirs[p].depth + 1;
                    node.insert(path, Node::Dir(idirs.len() as u32));
                    idirs.push(TreeDir {
                        path,
                        parent: p as u32,
                        depth,
                        entries: 0,
                        alive: true,
                    });
                    initial_names.insert(path);
                }
                NsOp::Create { bytes, .. } => {
                    idirs[dir_id(&node, parent_of(path))].entries += 1;
                    node.insert(path, Node::File(ifiles.len() as u32));
                    ifiles.push(TreeFile {
                        size: *bytes,
                        names: vec![path],
                        linked: false,
                    });
                    initial_names.insert(path);
                }
                NsOp::Symlink { .. } | NsOp::Mknod { .. } => {
                    idirs[dir_id(&node, parent_of(path))].entries += 1;
                    node.insert(path, Node::Other);
                    initial_names.insert(path);
                }
                NsOp::Link { target, .. } => {
                    idirs[dir_id(&node, parent_of(path))].entries += 1;
                    let n = node[target.as_str()];
                    if let Node::File(f) = n {
                        ifiles[f as usize].names.push(path);
                        ifiles[f as usize].linked = true;
                    }
                    node.insert(path, n);
                    initial_names.insert(path);
                }
                NsOp::Append { bytes, .. } | NsOp::Extend { bytes, .. } => {
                    if let Node::File(f) = node[path] {
                        ifiles[f as usize].size += bytes;
                    }
                }
                NsOp::Truncate { bytes, .. } => {
                    if let Node::File(f) = node[path] {
                        ifiles[f as usize].size = *bytes;
                    }
                }
                NsOp::Unlink { .. } | NsOp::Rmdir { .. } => {
                    idirs[dir_id(&node, parent_of(path))].entries -= 1;
                    match node.remove(path) {
                        Some(Node::File(f)) => ifiles[f as usize].names.retain(|n| *n != path),
                        Some(Node::Dir(d)) => idirs[d as usize].alive = false,
                        _ => {}
                    }
                }
                NsOp::Rename { to, .. } => {
                    idirs[dir_id(&node, parent_of(path))].entries -= 1;
                    idirs[dir_id(&node, parent_of(to.as_str()))].entries += 1;
                    let n = node.remove(path).expect("check_tree: the name exists");
                    if let Node::File(f) = n {
                        for name in ifiles[f as usize].names.iter_mut() {
                            if *name == path {
                                *name = to.as_str();
                            }
                        }
                    }
                    node.insert(to.as_str(), n);
                    initial_names.insert(to.as_str());
                }
            }
        }
        InitialTree {
            dirs: idirs,
            files: ifiles,
            names: initial_names,
        }
    }
}

/// Step 2: the tree's measured distributions and data.
pub(super) struct Measured {
    /// Live regular files per size bucket (hard-linked ones too).
    pub(super) count: [u64; SIZE_BUCKETS],
    /// Deepest file or directory, at least 1.
    pub(super) max_depth: usize,
    /// Live regular files per depth.
    pub(super) file_depths: Vec<u64>,
    /// The sizes of the tree's files, per bucket.
    pub(super) sizes_by_bucket: Vec<Vec<u64>>,
    /// Live regular files.
    pub(super) files_live: u64,
    /// Data blocks of files and slow symlinks.
    pub(super) live_blocks: u64,
    /// What the stream cannot remove: hard-linked files, symlinks.
    pub(super) fixed_blocks: u64,
}

impl Measured {
    /// Measures `tree`, the tree of `pop`.
    pub(super) fn of(tree: &InitialTree, pop: &Population) -> Measured {
        let mut count = [0u64; SIZE_BUCKETS];
        let mut max_depth = 1usize;
        let mut file_depths: Vec<u64> = Vec::new();
        let mut sizes_by_bucket: Vec<Vec<u64>> = vec![Vec::new(); SIZE_BUCKETS];
        let depth_of = |p: &str| p.bytes().filter(|&c| c == b'/').count() + 1;
        let mut file_blocks = 0u64;
        let mut movable_blocks = 0u64;
        let mut files_live = 0u64;
        for f in tree.files.iter().filter(|f| !f.names.is_empty()) {
            let d = depth_of(f.names[0]);
            max_depth = max_depth.max(d);
            if file_depths.len() <= d {
                file_depths.resize(d + 1, 0);
            }
            file_depths[d] += 1;
            count[bucket_of(f.size)] += 1;
            sizes_by_bucket[bucket_of(f.size)].push(f.size);
            file_blocks += blocks_of(f.size);
            if !f.linked {
                movable_blocks += blocks_of(f.size);
            }
            files_live += 1;
        }
        for d in tree.dirs.iter().filter(|d| d.alive) {
            max_depth = max_depth.max(d.depth as usize);
        }
        let pst = pop.stats();
        // files' blocks, and slow symlinks' (pst.data_blocks counts both)
        debug_assert!(pst.data_blocks >= file_blocks);
        let live_blocks = pst.data_blocks;
        Measured {
            count,
            max_depth,
            file_depths,
            sizes_by_bucket,
            files_live,
            live_blocks,
            fixed_blocks: live_blocks - movable_blocks,
        }
    }
}

/// Step 3: the fullness to hold and the room it leaves the files the stream may touch.
pub(super) struct Room {
    /// Fullness held.
    pub(super) fullness: f64,
    /// Fullness of the tree.
    pub(super) initial_fullness: f64,
    /// Live data blocks the fullness holds.
    pub(super) target_blocks: u64,
    /// Of those, what the movable files may take.
    pub(super) room_blocks: u64,
    /// The same in bytes.
    pub(super) room_bytes: u64,
}

impl Room {
    /// The spec's fullness (default: the tree's, capped at [`fullness_cap`]) on a `fs`-byte
    /// file system that keeps `margin` bytes for metadata, checked against the margin and
    /// what the stream cannot remove.
    pub(super) fn choose(
        spec: &AgingSpec,
        fs: u64,
        margin: u64,
        m: &Measured,
    ) -> Result<Room, Error> {
        let live_blocks = m.live_blocks;
        let fixed_blocks = m.fixed_blocks;
        let cap = fullness_cap(fs, margin);
        let initial_fullness = (live_blocks * BLOCK) as f64 / fs as f64;
        let fullness = match spec.fullness {
            Some(f) if f > cap => {
                return Err(bad(
                    "fullness",
                    format!(
                        "{f} is above what fits: a {fs}-byte file system keeps {} bytes for metadata (inode tables, journal, bitmaps, mapping blocks, directories), so at most {cap:.4} of it can hold file data",
                        margin
                    ),
                ))
            }
            Some(f) => f,
            None if live_blocks == 0 => {
                return Err(bad(
                    "fullness",
                    "the tree holds no data, so it has no fullness to keep; give one".into(),
                ))
            }
            None => initial_fullness.min(cap),
        };
        let target_blocks = (fullness * fs as f64 / BLOCK as f64).floor() as u64;
        if fixed_blocks >= target_blocks {
            return Err(bad(
                "fullness",
                format!(
                    "{fullness} holds {target_blocks} blocks of 4 KiB, but what the stream cannot remove (hard-linked files, symlinks) takes {fixed_blocks}"
                ),
            ));
        }
        let room_blocks = target_blocks - fixed_blocks;
        let room_bytes = room_blocks * BLOCK;
        Ok(Room {
            fullness,
            initial_fullness,
            target_blocks,
            room_blocks,
            room_bytes,
        })
    }
}

/// Step 4: the target size distribution (`[f64; buckets]`) and where each bucket's sizes come
/// from; takes the tree's sizes out of `m`. Checks that a stream of such files takes at most
/// [`MAX_OPERATIONS`] on a `fs`-byte file system.
pub(super) fn size_targets(
    spec: &AgingSpec,
    fs: u64,
    m: &mut Measured,
    room: &Room,
) -> Result<([f64; SIZE_BUCKETS], Vec<Pool>), Error> {
    let (count, files_live) = (m.count, m.files_live);
    let sizes_by_bucket = &mut m.sizes_by_bucket;
    let (fullness, room_blocks, room_bytes) = (room.fullness, room.room_blocks, room.room_bytes);
    let mut target = [0f64; SIZE_BUCKETS];
    let mut pools: Vec<Pool> = (0..SIZE_BUCKETS).map(|_| Pool::Empty).collect();
    let shaped = match spec.size_shape {
        SizeShape::Tree => None,
        SizeShape::AgrawalFast07 => Some(agrawal_fast07_sizes(room_bytes)),
    };
    match shaped.as_ref().or(spec.sizes.as_ref()) {
        None => {
            if files_live == 0 {
                return Err(bad(
                    "sizes",
                    "the tree has no regular file to measure a size distribution from; give one"
                        .into(),
                ));
            }
            if count[1..].iter().all(|&c| c == 0) {
                return Err(bad(
                    "sizes",
                    "the tree's files are all empty: a stream of them writes nothing; give a distribution".into(),
                ));
            }
            for b in 0..SIZE_BUCKETS {
                if count[b] == 0 {
                    continue;
                }
                target[b] = count[b] as f64 / files_live as f64;
                let mut v = std::mem::take(&mut sizes_by_bucket[b]);
                let smallest = v.iter().copied().min().unwrap_or(0);
                v.retain(|&s| blocks_of(s) <= room_blocks);
                if v.is_empty() {
                    return Err(bad(
                        "fullness",
                        format!(
                            "{fullness} leaves {room_bytes} bytes for the files the stream may touch, but the tree's size distribution has files of {} bytes (bucket below {} bytes) that would not fit; ask for more fullness or give [aging] sizes",
                            smallest,
                            below(b)
                        ),
                    ));
                }
                pools[b] = Pool::Sample(v);
            }
        }
        Some(sizes) => {
            let sum: f64 = sizes.iter().map(|s| s.weight).sum();
            for (i, s) in sizes.iter().enumerate() {
                if s.weight == 0.0 {
                    continue;
                }
                let b = bucket_of(s.below_bytes - 1);
                let lo = if b == 0 { 0 } else { 1u64 << (b - 1) };
                let hi = (s.below_bytes - 1).min(room_bytes);
                if lo > hi {
                    return Err(bad(
                        &format!("sizes[{i}].below_bytes"),
                        format!(
                            "files of {lo} bytes or more do not fit in the {room_bytes} bytes fullness {fullness} leaves for the files the stream may touch"
                        ),
                    ));
                }
                target[b] = s.weight / sum;
                pools[b] = Pool::Range(lo, hi);
            }
        }
    }

    // a volume that tiny files would take billions of operations to write
    let mean_create: f64 = (0..SIZE_BUCKETS)
        .map(|b| {
            target[b]
                * match &pools[b] {
                    Pool::Empty => 0.0,
                    Pool::Sample(v) => v.iter().sum::<u64>() as f64 / v.len() as f64,
                    Pool::Range(lo, hi) => (*lo as f64 + *hi as f64) / 2.0,
                }
        })
        .sum();
    let goal = spec.age * fs as f64;
    let expected_ops = 2.0 * goal / mean_create.max(1.0);
    if expected_ops > MAX_OPERATIONS {
        return Err(bad(
            "age",
            format!(
                "{} × capacity in files of {mean_create:.0} bytes on average takes about {expected_ops:.1e} operations (a create and an unlink each); at most {MAX_OPERATIONS:.0e}: ask for less age or larger files",
                spec.age
            ),
        ));
    }
    Ok((target, pools))
}

/// Step 5: the target depth distribution and the number of depths the engine tracks.
pub(super) fn depth_targets(spec: &AgingSpec, m: &Measured) -> Result<(usize, Vec<f64>), Error> {
    let (max_depth, files_live) = (m.max_depth, m.files_live);
    let file_depths = &m.file_depths;
    let nd = match &spec.depths {
        Some(d) => d
            .iter()
            .map(|d| d.depth as usize)
            .max()
            .unwrap_or(1)
            .max(max_depth),
        None => max_depth,
    } + 2;
    let mut dtarget = vec![0f64; nd];
    match &spec.depths {
        None => {
            if files_live == 0 {
                return Err(bad(
                    "depths",
                    "the tree has no regular file to measure a depth distribution from; give one"
                        .into(),
                ));
            }
            for (d, &c) in file_depths.iter().enumerate() {
                dtarget[d] = c as f64 / files_live as f64;
            }
        }
        Some(depths) => {
            let sum: f64 = depths.iter().map(|d| d.weight).sum();
            for d in depths {
                dtarget[d.depth as usize] = d.weight / sum;
            }
        }
    }
    Ok((nd, dtarget))
}

/// The Agrawal et al. (FAST '07) size distribution by count, per power-of-two bucket, as
/// [`SizeWeight`]s: the hybrid of populations/ubuntu-32g.toml's `[shape]` (Impressions,
/// FAST '09, Table 2) below 2 GiB, sizes rounded down to whole bytes as the tree generator
/// does; buckets whose smallest file is over `room_bytes` are left out (the tail is cut
/// where the tree generator cuts it at 2 GiB).
pub fn agrawal_fast07_sizes(room_bytes: u64) -> Vec<SizeWeight> {
    let shape = crate::populations::tree::TreePopulation::from_toml_str(
        crate::UBUNTU_32G_TOML,
        "embedded ubuntu-32g",
    )
    .expect("the embedded population is valid")
    .shape;
    let cdf = |x: f64| -> f64 {
        let lognormal = if x <= 0.0 {
            0.0
        } else {
            0.5 * (1.0 + erf((x.ln() - shape.lognormal_mu) / (shape.lognormal_sigma * 2f64.sqrt())))
        };
        let pareto = if x <= shape.pareto_xm_bytes {
            0.0
        } else {
            1.0 - (shape.pareto_xm_bytes / x).powf(shape.pareto_k)
        };
        shape.lognormal_weight * lognormal + (1.0 - shape.lognormal_weight) * pareto
    };
    // sizes in [0, 1) round down to 0 (bucket 0); bucket k holds [2^(k-1), 2^k)
    (0..=31usize)
        .filter(|&b| b == 0 || (1u64 << (b - 1)) <= room_bytes)
        .map(|b| SizeWeight {
            below_bytes: 1u64 << b,
            weight: cdf((1u64 << b) as f64)
                - if b == 0 {
                    0.0
                } else {
                    cdf((1u64 << (b - 1)) as f64)
                },
        })
        .filter(|w| w.weight > 0.0)
        .collect()
}

/// The error function (Abramowitz and Stegun 7.1.26: absolute error below 1.5e-7).
fn erf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let y = 1.0
        - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t
            + 0.254_829_592)
            * t
            * (-x * x).exp();
    if x >= 0.0 {
        y
    } else {
        -y
    }
}
