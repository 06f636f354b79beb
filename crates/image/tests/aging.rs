//! Aged plans are real file systems: random trees aged by random streams (creates, extends,
//! truncates, unlinks, renames, hard links, mkdirs, rmdirs) under every policy, written
//! through libext2fs, pass the real `e2fsck -fn` and read back as planned. Prints how many
//! images were checked.

mod common;
#[path = "../../layout/tests/common/mod.rs"]
mod layout_common;

use layout_common::random_aging;
use layoutlab_image::{fsck_check, inspect, materialize, mkfs_profile, normalize_plan};
use layoutlab_layout::{policy, Geometry, MkfsProfile, PolicyParams};
use layoutlab_workload::{NsOp, Population};
use rand::{Rng, SeedableRng};

/// A tree of a few directories and files filling about a third of `fs_bytes`.
fn tree(seed: u64, fs_bytes: u64) -> Population {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut ops = Vec::new();
    let mut dirs = vec![String::new()];
    let mut bytes_left = fs_bytes / 3;
    for i in 0..300 {
        let d = dirs[rng.gen_range(0..dirs.len())].clone();
        let path = if d.is_empty() {
            format!("t{i}")
        } else {
            format!("{d}/t{i}")
        };
        if rng.gen_bool(0.15) {
            dirs.push(path.clone());
            ops.push(NsOp::Mkdir { path });
        } else {
            let shift = rng.gen_range(0..23);
            let bytes = rng.gen_range(0..=(1u64 << shift)).min(bytes_left);
            bytes_left -= bytes;
            ops.push(NsOp::Create { path, bytes });
        }
    }
    Population {
        name: format!("tree{seed}"),
        fs_bytes,
        ops,
    }
}

#[test]
fn aged_images_pass_e2fsck_and_read_back_as_planned() {
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for seed in 0..4u64 {
        let pop = random_aging(&tree(seed, 192 << 20), seed, 2500, 0.7);
        for name in policy::POLICY_NAMES {
            let profile =
                MkfsProfile::by_name(policy::default_mkfs_profile(name).unwrap()).unwrap();
            let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
            let plan = policy::by_name(name, &PolicyParams::new())
                .unwrap()
                .plan(&geo, &pop, seed)
                .unwrap_or_else(|e| panic!("{name} seed {seed}: {e}"));
            let image = dir.path().join(format!("{name}-{seed}.img"));
            mkfs_profile(&image, pop.fs_bytes, &profile).unwrap();
            materialize(&image, &plan).unwrap_or_else(|e| panic!("{name} seed {seed}: {e}"));
            let v = fsck_check(&image).unwrap();
            assert!(v.clean, "{name} seed {seed}: e2fsck:\n{}", v.output);
            let back = inspect(&image).unwrap();
            // which name of a hard-linked inode is its first is the directory walk's
            // choice: compare each inode's set of names, then the rest
            let names = |p: &layoutlab_layout::Plan| {
                let mut set: Vec<(u32, u32, String)> = p
                    .inodes
                    .iter()
                    .filter(|i| i.ino > 11)
                    .map(|i| (i.ino, i.parent, i.name.clone()))
                    .chain(p.links.iter().map(|l| (l.ino, l.parent, l.name.clone())))
                    .collect();
                set.sort();
                set
            };
            let (got, want) = (names(&back.plan(name)), names(&plan));
            let missing: Vec<_> = want.iter().filter(|n| !got.contains(n)).take(5).collect();
            let extra: Vec<_> = got.iter().filter(|n| !want.contains(n)).take(5).collect();
            assert!(
                missing.is_empty() && extra.is_empty(),
                "{name} seed {seed}: names planned, not in the image {missing:?}; in the image, not planned {extra:?}"
            );
            for p in &normalize_plan(&plan).inodes {
                let got = back
                    .inode(p.ino)
                    .unwrap_or_else(|| panic!("{name} seed {seed}: inode {}", p.ino));
                let mut want = p.clone();
                want.parent = got.planned.parent;
                want.name = got.planned.name.clone();
                assert_eq!(&got.planned, &want, "{name} seed {seed}: inode {}", p.ino);
            }
            std::fs::remove_file(&image).unwrap();
            checked += 1;
        }
    }
    // and the aging generator's own streams: ubuntu-32g at 1/100 and bench5 at 1/100 on a
    // disk a tenth larger, 2 capacities written at the generator's largest fullness
    use layoutlab_layout::mkfs::{max_fullness, metadata_margin_bytes};
    use layoutlab_workload::aging::{age, AgingSpec};
    let ubuntu = layoutlab_workload::population_shrunk("ubuntu-32g", 0.01).unwrap();
    let mut bench5 = layoutlab_workload::population_by_name("bench5")
        .unwrap()
        .scale(0.01)
        .unwrap();
    bench5.fs_bytes += bench5.fs_bytes / 10;
    for (seed, tree) in [ubuntu, bench5].iter().enumerate() {
        let spec = AgingSpec {
            fullness: Some(max_fullness(tree.fs_bytes).min(0.9)),
            ..AgingSpec::new(2.0, seed as u64)
        };
        let pop = age(tree, &spec, metadata_margin_bytes(tree.fs_bytes)).unwrap();
        for name in policy::POLICY_NAMES {
            let profile =
                MkfsProfile::by_name(policy::default_mkfs_profile(name).unwrap()).unwrap();
            let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
            let plan = policy::by_name(name, &PolicyParams::new())
                .unwrap()
                .plan(&geo, &pop, 1)
                .unwrap_or_else(|e| panic!("{name} {}: {e}", pop.name));
            let image = dir.path().join(format!("{name}-gen{seed}.img"));
            mkfs_profile(&image, pop.fs_bytes, &profile).unwrap();
            let fresh = fsck_check(&image)
                .unwrap()
                .vitals
                .expect("e2fsck -fnv summary");
            materialize(&image, &plan).unwrap_or_else(|e| panic!("{name} {}: {e}", pop.name));
            let v = fsck_check(&image).unwrap();
            assert!(v.clean, "{name} {}: e2fsck:\n{}", pop.name, v.output);
            // Aged layouts split files and grow extent trees: e2fsck -v's summary is still the
            // plan's, by e2fsck's rules.
            let vitals = v.vitals.as_ref().expect("e2fsck -fnv summary");
            let want = common::expected_vitals(&plan, geo.blocks_per_group, &fresh);
            println!(
                "{name} {}: e2fsck non-contiguous {}/{}, depths {:?}",
                pop.name,
                vitals.non_contiguous_files,
                vitals.non_contiguous_dirs,
                vitals.extent_depth_histogram
            );
            assert_eq!(
                (
                    vitals.non_contiguous_files,
                    vitals.non_contiguous_dirs,
                    vitals.extent_depth_histogram.clone()
                ),
                want,
                "{name} {}: e2fsck -v's summary against the plan's",
                pop.name
            );
            std::fs::remove_file(&image).unwrap();
            checked += 1;
        }
    }
    println!(
        "{checked} aged images e2fsck-clean (4 random streams and 2 generated ones x {} policies)",
        policy::POLICY_NAMES.len()
    );
}
