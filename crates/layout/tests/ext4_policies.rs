//! The ext4 policies on a tree of directories and files: plans that check, are
//! deterministic, and show the difference commit a4912123 made — directories spread over
//! flex groups and their blocks clustered in the first group of each flex group (2009),
//! against everything packed near the parent with pid-coloured goals (2008).

use layoutlab_layout::{policy, Geometry, InodeKind, MkfsProfile, Plan, PolicyParams};
use layoutlab_workload::{NsOp, Population};

/// 40 top-level directories of 5 subdirectories, each with 150 small files and a 1 MiB
/// one, on 16 GiB (128 groups of 8192 inodes, 8 flex groups): 30,441 inodes, more than three
/// groups hold.
fn tree() -> Population {
    let mut ops = Vec::new();
    for t in 0..40 {
        ops.push(NsOp::Mkdir {
            path: format!("top{t:02}"),
        });
        for s in 0..5 {
            let dir = format!("top{t:02}/sub{s}");
            ops.push(NsOp::Mkdir { path: dir.clone() });
            for f in 0..150 {
                ops.push(NsOp::Create {
                    path: format!("{dir}/file{f:02}"),
                    bytes: 1000 + 200 * f,
                });
            }
            ops.push(NsOp::Create {
                path: format!("{dir}/big"),
                bytes: 1 << 20,
            });
        }
    }
    Population {
        name: "tree".into(),
        fs_bytes: 16 << 30,
        ops,
    }
}

fn plan(name: &str, seed: u64) -> (Geometry, Plan) {
    let profile = MkfsProfile::by_name(policy::default_mkfs_profile(name).unwrap()).unwrap();
    let pop = tree();
    let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
    let plan = policy::by_name(name, &PolicyParams::new())
        .unwrap()
        .plan(&geo, &pop, seed)
        .unwrap();
    plan.check(&geo).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(plan.short_files(&pop).is_empty());
    (geo, plan)
}

/// Share of directory blocks (data, kind Dir) in the first group of a flex group.
fn dir_blocks_in_first_groups(geo: &Geometry, plan: &Plan) -> f64 {
    let flex = geo.flex_bg_size;
    let s = plan.group_summary(geo);
    let total: u64 = s.iter().map(|g| g.dir_blocks).sum();
    let first: u64 = s
        .iter()
        .filter(|g| g.group % flex == 0)
        .map(|g| g.dir_blocks)
        .sum();
    first as f64 / total as f64
}

fn flex_groups_of_top_dirs(geo: &Geometry, plan: &Plan) -> std::collections::BTreeSet<u64> {
    plan.inodes
        .iter()
        .filter(|i| i.kind == InodeKind::Dir && i.parent == 2 && i.ino != 2)
        .map(|i| u64::from(i.ino - 1) / u64::from(geo.inodes_per_group) / geo.flex_bg_size)
        .collect()
}

#[test]
fn ext4_2009_clusters_directory_blocks_and_spreads_directories() {
    let (geo, new) = plan("ext4-2009", 1);
    let (_, old) = plan("ext4-2008", 1);
    let new_share = dir_blocks_in_first_groups(&geo, &new);
    let old_share = dir_blocks_in_first_groups(&geo, &old);
    println!(
        "directory blocks in first groups of flex groups: 2008 {old_share:.3}, 2009 {new_share:.3}"
    );
    assert!(new_share > 0.99, "{new_share}");
    assert!(old_share < 0.5, "{old_share}");
    // top-level directories: spread over flex groups (2009), kept in the root's (2008)
    let new_flex = flex_groups_of_top_dirs(&geo, &new);
    let old_flex = flex_groups_of_top_dirs(&geo, &old);
    assert!(new_flex.len() >= 6, "{new_flex:?}");
    assert_eq!(old_flex.len(), 1, "{old_flex:?}");
    // regular-file data is biased away from the first group of each flex group (2009)
    let s = new.group_summary(&geo);
    let data_first: u64 = s
        .iter()
        .filter(|g| g.group % geo.flex_bg_size == 0)
        .map(|g| g.data_blocks)
        .sum();
    let data: u64 = s.iter().map(|g| g.data_blocks).sum();
    assert!(data_first * 20 < data, "{data_first} of {data}");
}

#[test]
fn ext4_plans_are_extent_mapped_and_deterministic() {
    for name in ["ext4-2008", "ext4-2009", "ext4-kernel"] {
        let (_, a) = plan(name, 3);
        let (_, b) = plan(name, 3);
        assert_eq!(a, b, "{name}");
        assert!(a
            .inodes
            .iter()
            .filter(|i| i.kind == InodeKind::File && i.size_bytes > 0)
            .all(|i| i.format == layoutlab_layout::MapFormat::Extents));
        // small files share a preallocation: most are contiguous with the previous file
        let files: Vec<_> = a
            .inodes
            .iter()
            .filter(|i| i.kind == InodeKind::File && i.data_blocks() < 16)
            .collect();
        let packed = files
            .windows(2)
            .filter(|w| {
                let prev = w[0].data.last().unwrap();
                prev.physical + prev.len == w[1].data[0].physical
            })
            .count();
        assert!(
            packed * 10 > files.len() * 8,
            "{name}: {packed} of {}",
            files.len()
        );
    }
    // the 2008 goals carry the writer's pid colour: the seed matters
    assert_ne!(plan("ext4-2008", 3).1, plan("ext4-2008", 4).1);
}

#[test]
fn ext4_policies_refuse_an_ext3_profile() {
    let profile = MkfsProfile::by_name("ext3-2007").unwrap();
    let geo = Geometry::new(&profile, 1 << 30).unwrap();
    let pop = Population {
        name: "t".into(),
        fs_bytes: 1 << 30,
        ops: vec![],
    };
    let e = policy::by_name("ext4-2009", &PolicyParams::new())
        .unwrap()
        .plan(&geo, &pop, 1)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("ext4-2009") && e.contains("--mkfs-profile"),
        "{e}"
    );
}

/// Today's allocator on the same tree: directory blocks in the first group of each flex
/// group, data away from it, top-level directories spread, small files packed in 512-block
/// preallocations that start at multiples of 512 in their group, larger closed files in
/// best-fitting holes — and every file in as few extents as its 2048-block writeback
/// requests allow.
#[test]
fn ext4_kernel_on_a_tree() {
    let (geo, p) = plan("ext4-kernel", 1);
    assert_eq!(geo.profile, "ext4-kernel");
    assert!(geo.has_feature("metadata_csum") && geo.has_feature("64bit"));
    let share = dir_blocks_in_first_groups(&geo, &p);
    println!("ext4-kernel: directory blocks in first groups of flex groups {share:.3}");
    assert!(share > 0.99, "{share}");
    assert!(flex_groups_of_top_dirs(&geo, &p).len() >= 6);
    let s = p.group_summary(&geo);
    let data_first: u64 = s
        .iter()
        .filter(|g| g.group % geo.flex_bg_size == 0)
        .map(|g| g.data_blocks)
        .sum();
    let data: u64 = s.iter().map(|g| g.data_blocks).sum();
    assert!(data_first * 20 < data, "{data_first} of {data}");
    // the 1 MiB files (256 blocks: an aligned power-of-two request) are one extent each
    let big: Vec<_> = p
        .inodes
        .iter()
        .filter(|i| i.kind == InodeKind::File && i.name == "big")
        .collect();
    assert_eq!(big.len(), 200);
    assert!(
        big.iter().all(|i| i.data.len() == 1),
        "a big file in pieces"
    );
    // every file of the tree is in one extent: nothing here is fragmented
    let files = p.inodes.iter().filter(|i| i.kind == InodeKind::File);
    assert!(files.clone().all(|i| i.data.len() == 1));
    // the first small file of a preallocation starts at a multiple of 512 in its group
    let first = files.clone().next().unwrap();
    assert_eq!(
        (first.data[0].physical - geo.first_data_block) % geo.blocks_per_group % 512,
        0
    );
}

/// Directory leaf blocks keep 12 bytes for metadata_csum's tail: a directory of entries
/// that just fill one 4096-byte block without it needs a second block with it.
#[test]
fn ext4_kernel_directories_keep_room_for_the_checksum_tail() {
    // "." and ".." take 24 bytes; 254 entries of 16 bytes (names of 5-8 bytes) fill 4088
    let mut ops = vec![NsOp::Mkdir { path: "d".into() }];
    for i in 0..254 {
        ops.push(NsOp::Create {
            path: format!("d/f{i:04}"),
            bytes: 0,
        });
    }
    let pop = Population {
        name: "dir".into(),
        fs_bytes: 1 << 30,
        ops,
    };
    let blocks = |policy: &str, profile: &str| {
        let geo = Geometry::new(&MkfsProfile::by_name(profile).unwrap(), pop.fs_bytes).unwrap();
        let p = policy::by_name(policy, &PolicyParams::new())
            .unwrap()
            .plan(&geo, &pop, 1)
            .unwrap();
        p.check(&geo).unwrap();
        p.inodes
            .iter()
            .find(|i| i.name == "d")
            .unwrap()
            .data_blocks()
    };
    assert_eq!(blocks("ext4-2009", "ext4-2009"), 1);
    // the entries no longer fit: dir_index converts the directory (root + 2 leaves)
    assert_eq!(blocks("ext4-kernel", "ext4-kernel"), 3);
}

mod random {
    use super::*;
    use layoutlab_layout::MapFormat;
    use proptest::prelude::*;

    /// A random tree: directories, files of sizes 0 to 64 MiB, symlinks, hard links, on a
    /// file system large enough to hold them.
    fn tree() -> impl Strategy<Value = Population> {
        let ops = prop::collection::vec(
            (
                0u8..10,
                any::<prop::sample::Index>(),
                prop_oneof![
                    4 => 0u64..70_000,
                    2 => 70_000u64..3_000_000,
                    1 => 3_000_000u64..64_000_000,
                ],
            ),
            1..120,
        );
        ops.prop_map(|ops| {
            let mut dirs = vec![String::new()];
            let mut files: Vec<String> = Vec::new();
            let mut out = Vec::new();
            for (i, (kind, parent, bytes)) in ops.into_iter().enumerate() {
                let parent = parent.get(&dirs).clone();
                let path = if parent.is_empty() {
                    format!("r{i}")
                } else {
                    format!("{parent}/r{i}")
                };
                match kind {
                    0 | 1 => {
                        dirs.push(path.clone());
                        out.push(NsOp::Mkdir { path });
                    }
                    2 => out.push(NsOp::Symlink {
                        path,
                        target: "t".repeat((bytes % 200) as usize + 1),
                    }),
                    3 if !files.is_empty() => out.push(NsOp::Link {
                        path,
                        target: files[bytes as usize % files.len()].clone(),
                    }),
                    _ => {
                        files.push(path.clone());
                        out.push(NsOp::Create { path, bytes });
                    }
                }
            }
            Population {
                name: "random".into(),
                fs_bytes: 16 << 30,
                ops: out,
            }
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

        /// Every random tree: a plan that checks (extent trees the mapping requires, no
        /// block twice), is deterministic, maps every file in full by extents in logical
        /// order, and puts every directory block in the first group of a flex group.
        #[test]
        fn ext4_kernel_random_trees(pop in tree(), seed in any::<u64>()) {
            let profile = MkfsProfile::by_name("ext4-kernel").unwrap();
            let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
            let pol = policy::by_name("ext4-kernel", &PolicyParams::new()).unwrap();
            let p = pol.plan(&geo, &pop, seed).unwrap();
            p.check(&geo).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&p, &pol.plan(&geo, &pop, seed).unwrap());
            prop_assert!(p.short_files(&pop).is_empty());
            let bs = u64::from(geo.block_size_bytes);
            let want: u64 = pop.ops.iter().map(|op| match op {
                NsOp::Create { bytes, .. } => bytes.div_ceil(bs),
                _ => 0,
            }).sum();
            prop_assert_eq!(p.file_data_blocks(), want);
            for i in &p.inodes {
                if i.kind == InodeKind::File && i.size_bytes > 0 {
                    prop_assert_eq!(i.format, MapFormat::Extents);
                }
                let mut logical = 0;
                for r in &i.data {
                    prop_assert_eq!(r.logical, logical);
                    logical += r.len;
                }
                if i.kind == InodeKind::Dir {
                    for r in &i.data {
                        prop_assert_eq!(geo.group_of(r.physical) % geo.flex_bg_size, 0);
                    }
                }
            }
        }
    }
}
