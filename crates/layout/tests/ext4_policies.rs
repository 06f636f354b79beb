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
    let profile = MkfsProfile::by_name("ext4-2009").unwrap();
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
    for name in ["ext4-2008", "ext4-2009"] {
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
