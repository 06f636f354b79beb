//! Helpers the layout tests share.
#![allow(dead_code)]

use layoutlab_workload::{NsOp, Population};
use proptest::prelude::*;

/// Random populations, often more than the file system holds: nested directories and files
/// small (direct blocks and the first IND), middling (DIND) and big.
pub fn random_population() -> impl Strategy<Value = Population> {
    let fs_mib = 64u64..1500;
    // (is_dir, parent choice, size)
    let ops = prop::collection::vec(
        (
            prop::bool::weighted(0.15),
            any::<prop::sample::Index>(),
            prop_oneof![
                3 => 0u64..60_000,                 // small: direct blocks and first IND
                3 => 60_000u64..8_000_000,         // needs DIND
                1 => 8_000_000u64..400_000_000,    // big
            ],
        ),
        1..80,
    );
    (fs_mib, ops).prop_map(|(mib, ops)| {
        let mut dirs = vec![String::new()];
        let mut out = Vec::new();
        for (i, (is_dir, parent, bytes)) in ops.into_iter().enumerate() {
            let parent = parent.get(&dirs).clone();
            let path = if parent.is_empty() {
                format!("r{i}")
            } else {
                format!("{parent}/r{i}")
            };
            if is_dir {
                dirs.push(path.clone());
                out.push(NsOp::Mkdir { path });
            } else {
                out.push(NsOp::Create { path, bytes });
            }
        }
        Population {
            name: "random".into(),
            fs_bytes: mib << 20,
            ops: out,
        }
    })
}

/// `pop` followed by `n` random aging operations (creates, extends, truncates, unlinks,
/// renames, mkdirs, rmdirs, hard links and their unlinks), seeded, every one valid, with the
/// live data held below `fill` of the file system. Independent of the aging-stream
/// generator on purpose: it makes the odd cases (a hard link outliving its first name, a
/// renamed link, a directory emptied and removed) a tuned generator may avoid.
pub fn random_aging(pop: &Population, seed: u64, n: usize, fill: f64) -> Population {
    use rand::{Rng, SeedableRng};
    use std::collections::HashMap;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    // every regular file's names and size; directories and their entry counts
    let mut files: Vec<(Vec<String>, u64)> = Vec::new();
    let mut file_of: HashMap<String, usize> = HashMap::new();
    let mut dirs: Vec<String> = vec![String::new()];
    let mut entries: HashMap<String, usize> = HashMap::new();
    let parent_of = |p: &str| {
        p.rsplit_once('/')
            .map_or(String::new(), |(d, _)| d.to_string())
    };
    for op in &pop.ops {
        *entries.entry(parent_of(op.path())).or_default() += 1;
        match op {
            NsOp::Mkdir { path } => dirs.push(path.clone()),
            NsOp::Create { path, bytes } => {
                file_of.insert(path.clone(), files.len());
                files.push((vec![path.clone()], *bytes));
            }
            NsOp::Append { path, bytes } => files[file_of[path]].1 += bytes,
            NsOp::Link { path, target } => {
                if let Some(&f) = file_of.get(target) {
                    file_of.insert(path.clone(), f);
                    files[f].0.push(path.clone());
                }
            }
            _ => {}
        }
    }
    let budget = (pop.fs_bytes as f64 * fill) as u64;
    let mut live: u64 = files.iter().map(|f| f.1).sum();
    let mut ops = pop.ops.clone();
    for i in 0..n {
        let name = |rng: &mut rand_chacha::ChaCha8Rng, dirs: &[String]| {
            let d = &dirs[rng.gen_range(0..dirs.len())];
            let n = format!("a{i}x{}", "n".repeat(rng.gen_range(0..30)));
            if d.is_empty() {
                n
            } else {
                format!("{d}/{n}")
            }
        };
        let living: Vec<usize> = (0..files.len())
            .filter(|&f| !files[f].0.is_empty())
            .collect();
        let pick = rng.gen_range(0..100);
        let op = match pick {
            0..=29 => {
                let bytes = 1u64 << rng.gen_range(0..24);
                let bytes = rng.gen_range(0..=bytes);
                if live + bytes > budget {
                    continue;
                }
                let path = name(&mut rng, &dirs);
                live += bytes;
                *entries.entry(parent_of(&path)).or_default() += 1;
                file_of.insert(path.clone(), files.len());
                files.push((vec![path.clone()], bytes));
                NsOp::Create { path, bytes }
            }
            30..=39 if !living.is_empty() => {
                let f = living[rng.gen_range(0..living.len())];
                let shift = rng.gen_range(0..22);
                let bytes = rng.gen_range(0..=1u64 << shift);
                if live + bytes > budget {
                    continue;
                }
                live += bytes;
                files[f].1 += bytes;
                let path = files[f].0[rng.gen_range(0..files[f].0.len())].clone();
                NsOp::Extend { path, bytes }
            }
            40..=49 if !living.is_empty() => {
                let f = living[rng.gen_range(0..living.len())];
                let bytes = rng.gen_range(0..=files[f].1);
                live -= files[f].1 - bytes;
                files[f].1 = bytes;
                let path = files[f].0[0].clone();
                NsOp::Truncate { path, bytes }
            }
            50..=74 if !living.is_empty() => {
                let f = living[rng.gen_range(0..living.len())];
                let k = rng.gen_range(0..files[f].0.len());
                let path = files[f].0.remove(k);
                file_of.remove(&path);
                *entries.get_mut(&parent_of(&path)).unwrap() -= 1;
                if files[f].0.is_empty() {
                    live -= files[f].1;
                }
                NsOp::Unlink { path }
            }
            75..=82 if !living.is_empty() => {
                let f = living[rng.gen_range(0..living.len())];
                let k = rng.gen_range(0..files[f].0.len());
                let to = name(&mut rng, &dirs);
                let path = std::mem::replace(&mut files[f].0[k], to.clone());
                file_of.remove(&path);
                file_of.insert(to.clone(), f);
                *entries.get_mut(&parent_of(&path)).unwrap() -= 1;
                *entries.entry(parent_of(&to)).or_default() += 1;
                NsOp::Rename { path, to }
            }
            83..=86 if !living.is_empty() => {
                let f = living[rng.gen_range(0..living.len())];
                let target = files[f].0[0].clone();
                let path = name(&mut rng, &dirs);
                files[f].0.push(path.clone());
                file_of.insert(path.clone(), f);
                *entries.entry(parent_of(&path)).or_default() += 1;
                NsOp::Link { path, target }
            }
            87..=93 => {
                let path = name(&mut rng, &dirs);
                *entries.entry(parent_of(&path)).or_default() += 1;
                dirs.push(path.clone());
                NsOp::Mkdir { path }
            }
            _ => {
                // an empty directory, if there is one
                let empty: Vec<usize> = (1..dirs.len())
                    .filter(|&d| entries.get(&dirs[d]).copied().unwrap_or(0) == 0)
                    .collect();
                if empty.is_empty() {
                    continue;
                }
                let path = dirs.remove(empty[rng.gen_range(0..empty.len())]);
                entries.remove(&path);
                *entries.get_mut(&parent_of(&path)).unwrap() -= 1;
                NsOp::Rmdir { path }
            }
        };
        ops.push(op);
    }
    Population {
        name: format!("{}+aging{seed}", pop.name),
        fs_bytes: pop.fs_bytes,
        ops,
    }
}
