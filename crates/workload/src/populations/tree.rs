//! Tree populations: a whole file-system tree (directories, files, symlinks, hard links, device
//! nodes, fifos, sockets) generated from exact counts and published distributions, written
//! as TOML (populations/*.toml), and created in the order `rsync -axH` creates it.
//!
//! Shape, from Agrawal et al., "A Five-Year Study of File-System Metadata" (FAST '07) as
//! Impressions (Agrawal et al., FAST '09) generates it:
//! - directories: the generative model — each new directory goes under an existing one
//!   chosen with probability proportional to its subdirectory count + `subdir_offset` (2);
//! - entries per directory: inverse polynomial of degree 2, P(k) ∝ (k + `files_offset`)^-2
//!   with offset 2.36, scaled to the exact number of names;
//! - file sizes by count: a lognormal body (μ, σ in ln bytes) with a Pareto tail (shape k,
//!   scale xm) taken with probability 1 − `lognormal_weight`.
//!
//! Creation order: `rsync -axH` (incremental recursion, rsync 3) makes a directory's entries
//! in name order — subdirectories with `mkdir` as they come — and then descends into its
//! subdirectories in name order; a hard link is made when its second name comes.

use crate::{Error, NodeKind, NsOp, Population};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Exact counts a tree population declares, as e2fsck reports them: what the generator must
/// make (the population file's `[counts]`). An image of the tree inspects to the same inode
/// kinds (`layoutlab_image::ImageCounts`, which counts from the image's inodes and adds mapping
/// blocks); large files are counted here only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreeCounts {
    /// Directories, the root and lost+found included (e2fsck's count).
    pub directories: u64,
    /// Regular files (inodes).
    pub regular_files: u64,
    /// Symlinks, fast and slow.
    pub symlinks: u64,
    /// Symlinks whose target fits the inode (≤ 59 bytes).
    pub fast_symlinks: u64,
    /// Names beyond an inode's first.
    pub hard_links: u64,
    /// Character devices.
    pub char_devices: u64,
    /// Block devices.
    pub block_devices: u64,
    /// Fifos.
    pub fifos: u64,
    /// Sockets.
    pub sockets: u64,
    /// Files of 2 GiB or more (e2fsck's "large files").
    pub large_files: u64,
}

/// The distributions of a tree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreeShape {
    /// Generative model: weight of a directory = subdirectories + this.
    pub subdir_offset: f64,
    /// Inverse polynomial (degree 2) offset of names per directory.
    pub files_offset: f64,
    /// Probability a file size comes from the lognormal body.
    pub lognormal_weight: f64,
    /// Lognormal μ (natural log of bytes).
    pub lognormal_mu: f64,
    /// Lognormal σ.
    pub lognormal_sigma: f64,
    /// Pareto tail shape k.
    pub pareto_k: f64,
    /// Pareto tail scale (bytes).
    pub pareto_xm_bytes: f64,
}

/// A tree population (one TOML file).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreePopulation {
    /// Population name.
    pub name: String,
    /// One line for humans.
    pub description: String,
    /// File-system size.
    pub fs_bytes: u64,
    /// Seed of every random choice.
    pub seed: u64,
    /// 4 KiB blocks of regular-file data in total (the sizes are scaled to it; the large
    /// files take what the others leave).
    pub file_data_blocks: u64,
    /// Exact counts.
    pub counts: TreeCounts,
    /// Distributions.
    pub shape: TreeShape,
}

/// Block size the data volume is counted in.
const BLOCK: u64 = 4096;
/// A large file (e2fsck): 2 GiB or more.
const LARGE: u64 = 2 << 30;

impl TreePopulation {
    /// Parses and checks a tree population; errors name `source_name`, the key and why.
    pub fn from_toml_str(text: &str, source_name: &str) -> Result<TreePopulation, Error> {
        let bad = |key: &str, reason: String| Error::BadPopulation {
            source_name: source_name.to_string(),
            key: key.to_string(),
            reason,
        };
        let p: TreePopulation = toml::from_str(text).map_err(|e| bad("(syntax)", e.to_string()))?;
        let c = &p.counts;
        if p.fs_bytes < crate::MIN_FS_BYTES {
            return Err(bad(
                "fs_bytes",
                format!(
                    "{} bytes: at least {} are needed for a file system with 4 KiB blocks and a journal",
                    p.fs_bytes,
                    crate::MIN_FS_BYTES
                ),
            ));
        }
        // mke2fs makes at most one inode per 1 KiB (its smallest inode_ratio)
        let inodes = c.directories
            + c.regular_files
            + c.symlinks
            + c.char_devices
            + c.block_devices
            + c.fifos
            + c.sockets;
        if inodes > p.fs_bytes / 1024 {
            return Err(bad(
                "counts",
                format!(
                    "{inodes} inodes: a {}-byte file system holds at most {} (one per KiB, mke2fs's smallest inode_ratio)",
                    p.fs_bytes,
                    p.fs_bytes / 1024
                ),
            ));
        }
        if p.file_data_blocks > p.fs_bytes / BLOCK {
            return Err(bad(
                "file_data_blocks",
                format!(
                    "{} blocks of 4 KiB do not fit in the {}-byte file system ({} blocks)",
                    p.file_data_blocks,
                    p.fs_bytes,
                    p.fs_bytes / BLOCK
                ),
            ));
        }
        if c.directories < 2 {
            return Err(bad(
                "counts.directories",
                format!("{}: the root and lost+found are two already", c.directories),
            ));
        }
        if c.fast_symlinks > c.symlinks {
            return Err(bad(
                "counts.fast_symlinks",
                format!("{} fast of {} symlinks", c.fast_symlinks, c.symlinks),
            ));
        }
        if c.hard_links > 0 && c.regular_files == 0 {
            return Err(bad(
                "counts.hard_links",
                format!("{} hard links but no regular file to link to", c.hard_links),
            ));
        }
        if c.large_files > c.regular_files {
            return Err(bad(
                "counts.large_files",
                format!("{} of {} regular files", c.large_files, c.regular_files),
            ));
        }
        let small_files = c.regular_files - c.large_files;
        let least = c.large_files * LARGE.div_ceil(BLOCK);
        if p.file_data_blocks < least {
            return Err(bad(
                "file_data_blocks",
                format!(
                    "{} blocks cannot hold {} large files of 2 GiB",
                    p.file_data_blocks, c.large_files
                ),
            ));
        }
        if c.large_files == 0 && small_files > 0 && p.file_data_blocks == 0 {
            return Err(bad("file_data_blocks", "0 blocks for the files".into()));
        }
        let s = &p.shape;
        for (key, v, ok) in [
            (
                "shape.subdir_offset",
                s.subdir_offset,
                s.subdir_offset > 0.0,
            ),
            ("shape.files_offset", s.files_offset, s.files_offset > 0.0),
            (
                "shape.lognormal_weight",
                s.lognormal_weight,
                (0.0..=1.0).contains(&s.lognormal_weight),
            ),
            (
                "shape.lognormal_sigma",
                s.lognormal_sigma,
                s.lognormal_sigma > 0.0,
            ),
            ("shape.pareto_k", s.pareto_k, s.pareto_k > 0.0),
            (
                "shape.pareto_xm_bytes",
                s.pareto_xm_bytes,
                s.pareto_xm_bytes >= 1.0,
            ),
        ] {
            if !ok || !v.is_finite() {
                return Err(bad(key, format!("{v} is out of range")));
            }
        }
        Ok(p)
    }

    /// The population, in `rsync -axH` order.
    /// The same tree shrunk by `factor` (0 < factor ≤ 1) in every count, in its file system
    /// and in its data: the same generator, shapes and creation order at a size that is
    /// quick to age and check. Counts keep at least one of each kind present (directories at
    /// least the root and lost+found); large files (2 GiB or more) are dropped below scale 1
    /// unless the data still holds them. Errors as [`Population::scale`] does.
    pub fn shrink(&self, factor: f64) -> Result<TreePopulation, Error> {
        if !factor.is_finite() || factor <= 0.0 || factor > 1.0 {
            return Err(Error::BadScale(factor));
        }
        let mut t = self.clone();
        let f = |n: u64| -> u64 {
            if n == 0 {
                0
            } else {
                ((n as f64 * factor).round() as u64).max(1)
            }
        };
        let c = &mut t.counts;
        c.directories = f(c.directories).max(2);
        c.regular_files = f(c.regular_files);
        c.symlinks = f(c.symlinks);
        c.fast_symlinks = f(c.fast_symlinks).min(c.symlinks);
        c.hard_links = f(c.hard_links);
        c.char_devices = f(c.char_devices);
        c.block_devices = f(c.block_devices);
        c.fifos = f(c.fifos);
        c.sockets = f(c.sockets);
        c.large_files = (c.large_files as f64 * factor) as u64;
        t.fs_bytes = (self.fs_bytes as f64 * factor) as u64;
        t.file_data_blocks = (self.file_data_blocks as f64 * factor) as u64;
        if t.fs_bytes < crate::MIN_FS_BYTES {
            return Err(Error::TooSmall {
                scale: factor,
                fs_bytes: t.fs_bytes,
                min_bytes: crate::MIN_FS_BYTES,
            });
        }
        if factor < 1.0 {
            t.name = format!("{}@{factor}", self.name);
        }
        Ok(t)
    }

    /// The tree's operations, drawn from `seed`: its directories, then each directory's
    /// names with their sizes, so that the counts come out exactly as declared. The same spec
    /// gives the same population.
    pub fn generate(&self) -> Population {
        let c = &self.counts;
        let s = &self.shape;
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        // 1. the directory tree (index 0 is the root; lost+found is mke2fs's)
        let dirs = (c.directories - 2) as usize;
        let mut parent: Vec<usize> = vec![0];
        for _ in 0..dirs {
            // weight of a directory = its subdirectories + offset; with n directories and
            // n - 1 parent links, pick "offset" mass uniformly over directories, the rest
            // through a uniform link's parent (exactly proportional, O(1) per pick)
            let n = parent.len() as f64;
            let links = n - 1.0;
            let x = rng.gen::<f64>() * (links + s.subdir_offset * n);
            let pick = if x < s.subdir_offset * n || parent.len() == 1 {
                rng.gen_range(0..parent.len())
            } else {
                parent[rng.gen_range(1..parent.len())]
            };
            parent.push(pick);
        }
        let ndirs = parent.len();
        // 2. how many non-directory names each directory holds: inverse polynomial
        let names = c.regular_files
            + c.symlinks
            + c.hard_links
            + c.char_devices
            + c.block_devices
            + c.fifos
            + c.sockets;
        let raw: Vec<f64> = (0..ndirs)
            .map(|_| {
                // inverse CDF of P(k) ∝ (k + a)^-2 on k >= 0 (continuous form): k = a/(1-u) - a
                let u: f64 = rng.gen::<f64>().min(0.999_999);
                s.files_offset / (1.0 - u) - s.files_offset
            })
            .collect();
        let per_dir = apportion(&raw, names);
        // 3. what each name is, shuffled over the names
        let mut kinds: Vec<Kind> = Vec::with_capacity(names as usize);
        kinds.extend(std::iter::repeat_n(Kind::Large, c.large_files as usize));
        kinds.extend(std::iter::repeat_n(
            Kind::File,
            (c.regular_files - c.large_files) as usize,
        ));
        kinds.extend(std::iter::repeat_n(
            Kind::FastLink,
            c.fast_symlinks as usize,
        ));
        kinds.extend(std::iter::repeat_n(
            Kind::SlowLink,
            (c.symlinks - c.fast_symlinks) as usize,
        ));
        kinds.extend(std::iter::repeat_n(Kind::Hard, c.hard_links as usize));
        kinds.extend(std::iter::repeat_n(
            Kind::Node(NodeKind::Char),
            c.char_devices as usize,
        ));
        kinds.extend(std::iter::repeat_n(
            Kind::Node(NodeKind::Block),
            c.block_devices as usize,
        ));
        kinds.extend(std::iter::repeat_n(
            Kind::Node(NodeKind::Fifo),
            c.fifos as usize,
        ));
        kinds.extend(std::iter::repeat_n(
            Kind::Node(NodeKind::Socket),
            c.sockets as usize,
        ));
        for i in (1..kinds.len()).rev() {
            let j = rng.gen_range(0..=i);
            kinds.swap(i, j);
        }
        // 4. sizes of the ordinary files: the published shape, scaled so the total is the
        // profile's data volume less what the large files need at least
        let small: Vec<f64> = kinds
            .iter()
            .filter(|k| **k == Kind::File)
            .map(|_| sample_size(&mut rng, s))
            .collect();
        let large_min = c.large_files * LARGE.div_ceil(BLOCK);
        let budget = self.file_data_blocks.saturating_sub(large_min);
        let mut small_bytes = fit_sizes(&small, budget);
        if c.large_files == 0 {
            // what one scale factor leaves over goes to the largest file, so the volume is
            // exact
            let used: u64 = small_bytes.iter().map(|b| b.div_ceil(BLOCK)).sum();
            if let Some(i) = (0..small_bytes.len()).max_by_key(|&i| (small_bytes[i], i)) {
                let room = (LARGE - 1 - small_bytes[i]) / BLOCK;
                small_bytes[i] += budget.saturating_sub(used).min(room) * BLOCK;
            }
        }
        let small_blocks: u64 = small_bytes.iter().map(|b| b.div_ceil(BLOCK)).sum();
        let large_left = self.file_data_blocks - small_blocks.min(self.file_data_blocks);
        let large_each = large_left
            .checked_div(c.large_files)
            .map_or(0, |each| each.max(LARGE.div_ceil(BLOCK)));
        // 5. entries per directory, named and sorted; then the rsync order
        let mut children: Vec<Vec<Entry>> = vec![Vec::new(); ndirs];
        for (d, &p) in parent.iter().enumerate().skip(1) {
            children[p].push(Entry {
                name: name(&mut rng, d as u64, 'd'),
                what: What::Dir(d),
            });
        }
        let mut next_kind = kinds.into_iter();
        let mut sizes = small_bytes.into_iter();
        let mut serial = 0u64;
        for (d, &n) in per_dir.iter().enumerate() {
            for _ in 0..n {
                serial += 1;
                let what = match next_kind.next().expect("one kind per name") {
                    Kind::File => What::File(sizes.next().expect("one size per file")),
                    Kind::Large => What::File(large_each * BLOCK),
                    Kind::FastLink => What::Link(rng.gen_range(3..=59)),
                    Kind::SlowLink => What::Link(rng.gen_range(60..=240)),
                    Kind::Hard => What::Hard,
                    Kind::Node(k) => What::Node(k),
                };
                children[d].push(Entry {
                    name: name(&mut rng, serial, 'f'),
                    what,
                });
            }
        }
        for list in &mut children {
            list.sort_by(|a, b| a.name.cmp(&b.name));
        }
        let mut ops = Vec::with_capacity((ndirs as u64 + names) as usize);
        let mut files_made: Vec<String> = Vec::new();
        // hard links met before any file exists wait for the first one
        let mut pending: Vec<String> = Vec::new();
        let mut stack = vec![(0usize, String::new())];
        while let Some((d, path)) = stack.pop() {
            let mut subs = Vec::new();
            for e in &children[d] {
                let p = if path.is_empty() {
                    e.name.clone()
                } else {
                    format!("{path}/{}", e.name)
                };
                match e.what {
                    What::Dir(sub) => {
                        ops.push(NsOp::Mkdir { path: p.clone() });
                        subs.push((sub, p));
                    }
                    What::File(bytes) => {
                        files_made.push(p.clone());
                        ops.push(NsOp::Create {
                            path: p.clone(),
                            bytes,
                        });
                        for link in pending.drain(..) {
                            ops.push(NsOp::Link {
                                path: link,
                                target: p.clone(),
                            });
                        }
                    }
                    What::Link(len) => {
                        let target: String =
                            "../".repeat(len / 3) + &"x".repeat(len - 3 * (len / 3));
                        ops.push(NsOp::Symlink { path: p, target });
                    }
                    // -H links the second name to a file made earlier
                    What::Hard if files_made.is_empty() => pending.push(p),
                    What::Hard => {
                        let t = files_made[rng.gen_range(0..files_made.len())].clone();
                        ops.push(NsOp::Link { path: p, target: t });
                    }
                    What::Node(node) => ops.push(NsOp::Mknod {
                        path: p,
                        node,
                        major: if node == NodeKind::Block { 8 } else { 1 },
                        minor: rng.gen_range(0..16),
                    }),
                }
            }
            // descend in name order: push in reverse so the first comes off the stack first
            for sub in subs.into_iter().rev() {
                stack.push(sub);
            }
        }
        Population {
            name: self.name.clone(),
            fs_bytes: self.fs_bytes,
            ops,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    File,
    Large,
    FastLink,
    SlowLink,
    Hard,
    Node(NodeKind),
}

#[derive(Clone, Debug)]
enum What {
    Dir(usize),
    File(u64),
    Link(usize),
    Hard,
    Node(NodeKind),
}

#[derive(Clone, Debug)]
struct Entry {
    name: String,
    what: What,
}

/// A unique name: a serial in base 36 (unique per tree) with a few random letters, 4 to 24
/// bytes.
fn name(rng: &mut ChaCha8Rng, serial: u64, tag: char) -> String {
    let mut s = String::new();
    let mut n = serial;
    loop {
        s.push(std::char::from_digit((n % 36) as u32, 36).expect("digit"));
        n /= 36;
        if n == 0 {
            break;
        }
    }
    s.push(tag);
    let extra = rng.gen_range(0..18);
    for _ in 0..extra {
        s.push((b'a' + rng.gen_range(0..26u8)) as char);
    }
    s
}

/// A size from the hybrid lognormal body / Pareto tail, below 2 GiB (the large files are
/// counted apart).
fn sample_size(rng: &mut ChaCha8Rng, s: &TreeShape) -> f64 {
    loop {
        let x = if rng.gen::<f64>() < s.lognormal_weight {
            // Box-Muller
            let (u1, u2): (f64, f64) = (rng.gen::<f64>().max(1e-300), rng.gen());
            let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
            (s.lognormal_mu + s.lognormal_sigma * z).exp()
        } else {
            let u: f64 = rng.gen::<f64>().max(1e-300);
            s.pareto_xm_bytes / u.powf(1.0 / s.pareto_k)
        };
        if x < LARGE as f64 {
            return x;
        }
    }
}

/// Scales sampled sizes by one factor so that their 4 KiB blocks sum to at most `budget`
/// (ln-space shift: the distribution's shape is kept), rounding to whole bytes.
fn fit_sizes(sizes: &[f64], budget: u64) -> Vec<u64> {
    let blocks = |f: f64| -> u64 {
        sizes
            .iter()
            .map(|&x| ((x * f) as u64).min(LARGE - 1).div_ceil(BLOCK))
            .sum()
    };
    if blocks(1.0) <= budget {
        return sizes.iter().map(|&x| x as u64).collect();
    }
    // bisection on the factor
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if blocks(mid) <= budget {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    sizes
        .iter()
        .map(|&x| ((x * lo) as u64).min(LARGE - 1))
        .collect()
}

/// Splits `total` into integers proportional to `weights` (largest remainder).
fn apportion(weights: &[f64], total: u64) -> Vec<u64> {
    let sum: f64 = weights.iter().sum();
    if !(sum > 0.0 && sum.is_finite()) {
        // no weight at all: spread evenly
        return apportion(&vec![1.0; weights.len()], total);
    }
    let exact: Vec<f64> = weights.iter().map(|w| w / sum * total as f64).collect();
    let mut out: Vec<u64> = exact.iter().map(|e| e.floor() as u64).collect();
    let mut left = total - out.iter().sum::<u64>();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| {
        let (ra, rb) = (exact[a] - exact[a].floor(), exact[b] - exact[b].floor());
        rb.partial_cmp(&ra)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.cmp(&b))
    });
    for &i in &order {
        if left == 0 {
            break;
        }
        out[i] += 1;
        left -= 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apportion_is_exact() {
        let v = apportion(&[1.0, 2.0, 3.0, 0.5], 101);
        assert_eq!(v.iter().sum::<u64>(), 101);
        assert!(v[2] > v[1] && v[1] > v[0]);
        assert_eq!(apportion(&[0.0, 0.0, 0.0], 7).iter().sum::<u64>(), 7);
    }

    const UBUNTU: &str = include_str!("../../../../populations/ubuntu-32g.toml");

    /// The error of ubuntu-32g's text with `from` replaced by `to`.
    fn error_of(from: &str, to: &str) -> String {
        assert!(UBUNTU.contains(from), "{from}");
        TreePopulation::from_toml_str(&UBUNTU.replacen(from, to, 1), "mine.toml")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn impossible_trees_name_the_file_the_key_and_why() {
        for (from, to, key, why) in [
            (
                "file_data_blocks = 4181653",
                "file_data_blocks = 9000000",
                "file_data_blocks",
                "do not fit",
            ),
            (
                "fs_bytes = 34359738368",
                "fs_bytes = 4096",
                "fs_bytes",
                "at least",
            ),
            (
                "fs_bytes = 34359738368",
                "fs_bytes = 200000000",
                "counts",
                "at most",
            ),
            (
                "fast_symlinks = 19450",
                "fast_symlinks = 20619",
                "counts.fast_symlinks",
                "fast of",
            ),
            (
                "directories = 28022",
                "directories = 1",
                "counts.directories",
                "lost+found",
            ),
            (
                "regular_files = 263549",
                "regular_files = 0",
                "counts.hard_links",
                "no regular file",
            ),
            (
                "lognormal_sigma = 2.46",
                "lognormal_sigma = -1",
                "shape.lognormal_sigma",
                "out of range",
            ),
            ("seed = 2009", "seed = \"x\"", "(syntax)", "seed"),
        ] {
            let e = error_of(from, to);
            assert!(
                e.starts_with("population mine.toml: ") && e.contains(key) && e.contains(why),
                "{from} -> {to}: {e}"
            );
        }
    }

    #[test]
    fn sizes_fit_their_budget() {
        let sizes = vec![10_000.0, 1e9, 5e5, 123.0];
        let fitted = fit_sizes(&sizes, 1000);
        let blocks: u64 = fitted.iter().map(|b| b.div_ceil(BLOCK)).sum();
        assert!(blocks <= 1000 && blocks > 990, "{blocks}");
    }
}
