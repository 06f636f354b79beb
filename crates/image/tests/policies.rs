//! The layout engineer's policies at a small scale of bench5: plan -> image -> e2fsck clean ->
//! inspect == plan.

mod common;

use layoutlab_image::{fsck_check, inspect, materialize, mkfs, normalize_plan};
use layoutlab_layout::{policy_by_name, Geometry, MkfsProfile, PolicyParams};

fn policy_round_trip(policy: &str, scale: f64) {
    let profile = MkfsProfile::by_name("ext3-2007").unwrap();
    let pop = layoutlab_workload::population_by_name("bench5")
        .unwrap()
        .scale(scale)
        .unwrap();
    let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
    let plan = policy_by_name(policy, &PolicyParams::new())
        .unwrap()
        .plan(&geo, &pop, 42)
        .unwrap();
    assert!(
        plan.mapping_blocks() > 0,
        "{policy}: a plan with indirect blocks"
    );
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join(format!("{policy}.img"));
    let t = std::time::Instant::now();
    let made = mkfs(&image, pop.fs_bytes, &profile.mke2fs_args(pop.fs_bytes)).unwrap();
    println!(
        "{policy}: mkfs {:.1} s, {} MiB allocated",
        t.elapsed().as_secs_f64(),
        made.allocated_bytes >> 20
    );
    // the layout engineer's model of mke2fs agrees with the real one
    let fresh = inspect(&image).unwrap();
    assert_eq!(fresh.superblock.blocks_count, geo.blocks_count, "{policy}");
    let stats = materialize(&image, &plan).unwrap_or_else(|e| panic!("{policy}: {e}"));
    println!(
        "{policy}: materialize {:.1} s (check {:.1} s, block maps {:.1} s, close {:.1} s), \
         {} data + {} mapping blocks",
        stats.total_seconds,
        stats.check_seconds,
        stats.block_map_seconds,
        stats.close_seconds,
        stats.file_data_blocks,
        stats.mapping_blocks
    );
    let t = std::time::Instant::now();
    assert_eq!(stats.mapping_blocks, plan.mapping_blocks());
    let v = fsck_check(&image).unwrap();
    assert!(v.clean, "{policy}: e2fsck:\n{}", v.output);
    println!("{policy}: e2fsck -fn {:.1} s", t.elapsed().as_secs_f64());
    let t = std::time::Instant::now();
    let back = inspect(&image).unwrap();
    println!("{policy}: inspect {:.1} s", t.elapsed().as_secs_f64());
    for p in &normalize_plan(&plan).inodes {
        let got = back
            .inode(p.ino)
            .unwrap_or_else(|| panic!("{policy}: inode {}", p.ino));
        assert_eq!(&got.planned, p, "{policy}: inode {}", p.ino);
    }
}

#[test]
fn ext3_2007_bench5_small() {
    policy_round_trip("ext3-2007", 0.01);
}

#[test]
fn ext3_metacluster_bench5_small() {
    policy_round_trip("ext3-metacluster", 0.01);
}

/// Both policies at `IMAGE_TEST_SCALE` (default 1.0, the full 400 GB): a timing run, ignored
/// by default.
#[test]
#[ignore]
fn both_policies_at_env_scale() {
    let scale: f64 = std::env::var("IMAGE_TEST_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    for policy in ["ext3-2007", "ext3-metacluster"] {
        let t = std::time::Instant::now();
        policy_round_trip(policy, scale);
        println!(
            "{policy} at scale {scale}: {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
}

/// A random tree of every kind of object, made in order (directories before their
/// contents): directories, files of log-uniform sizes, fast and slow symlinks, hard links to
/// earlier files and symlinks, device nodes, fifos and sockets.
fn random_tree(seed: u64) -> layoutlab_workload::Population {
    use layoutlab_workload::{NodeKind, NsOp};
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut dirs = vec![String::new()];
    let mut others: Vec<String> = Vec::new();
    let mut ops = Vec::new();
    let join = |d: &str, n: String| if d.is_empty() { n } else { format!("{d}/{n}") };
    for i in 0..rng.gen_range(20..400) {
        let parent = dirs[rng.gen_range(0..dirs.len())].clone();
        let path = join(&parent, format!("n{i}{}", "y".repeat(rng.gen_range(0..30))));
        let op = match rng.gen_range(0..20) {
            0..=3 => {
                dirs.push(path.clone());
                NsOp::Mkdir { path: path.clone() }
            }
            4..=5 => NsOp::Symlink {
                path: path.clone(),
                target: "s".repeat(if rng.gen_bool(0.5) { 10 } else { 300 }),
            },
            6 if !others.is_empty() => NsOp::Link {
                path: path.clone(),
                target: others[rng.gen_range(0..others.len())].clone(),
            },
            7 => NsOp::Mknod {
                path: path.clone(),
                node: [
                    NodeKind::Char,
                    NodeKind::Block,
                    NodeKind::Fifo,
                    NodeKind::Socket,
                ][rng.gen_range(0..4)],
                major: rng.gen_range(0..300),
                minor: rng.gen_range(0..300),
            },
            _ => NsOp::Create {
                path: path.clone(),
                bytes: 2f64.powf(rng.gen_range(0.0..23.0)) as u64,
            },
        };
        if !matches!(op, NsOp::Mkdir { .. }) {
            others.push(path);
        }
        ops.push(op);
    }
    layoutlab_workload::Population {
        name: format!("random-{seed}"),
        fs_bytes: 256 << 20,
        ops,
    }
}

/// Property: random trees x every policy -> a plan that checks, an image e2fsck finds
/// clean, and an inspect that gives the plan back (names as sets: a hard-linked inode's
/// first name depends on the walk).
#[test]
fn random_trees_every_policy_round_trip() {
    let mut checked = 0;
    for seed in 0..8u64 {
        let pop = random_tree(seed);
        pop.check_tree().unwrap();
        for policy in layoutlab_layout::policy::POLICY_NAMES {
            let profile = MkfsProfile::by_name(
                layoutlab_layout::policy::default_mkfs_profile(policy).unwrap(),
            )
            .unwrap();
            let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
            let plan = policy_by_name(policy, &PolicyParams::new())
                .unwrap()
                .plan(&geo, &pop, seed)
                .unwrap();
            plan.check(&geo)
                .unwrap_or_else(|e| panic!("{policy} seed {seed}: {e}"));
            assert!(plan.short_files(&pop).is_empty(), "{policy} seed {seed}");
            let dir = tempfile::tempdir().unwrap();
            let image = dir.path().join("t.img");
            mkfs(&image, pop.fs_bytes, &profile.mke2fs_args(pop.fs_bytes)).unwrap();
            materialize(&image, &plan).unwrap_or_else(|e| panic!("{policy} seed {seed}: {e}"));
            let v = fsck_check(&image).unwrap();
            assert!(v.clean, "{policy} seed {seed}: e2fsck:\n{}", v.output);
            common::assert_round_trip(&image, &plan);
            checked += 1;
        }
    }
    println!("{checked} random trees x policies checked");
    assert_eq!(checked, 8 * layoutlab_layout::policy::POLICY_NAMES.len());
}
