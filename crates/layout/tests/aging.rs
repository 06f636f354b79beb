//! Aging streams through every policy: after creates, extends, truncates, unlinks, renames,
//! hard links, mkdirs and rmdirs, the plan is sound (`Plan::check`: no block used twice, none
//! leaked into two inodes, trees exactly what the data needs, parents before children), holds
//! exactly the files the stream leaves with their sizes, and freed space is used again.

mod common;

use common::{random_aging, random_population};
use layoutlab_layout::{policy, Geometry, InodeKind, MkfsProfile, Plan, PolicyParams};
use layoutlab_workload::{NsOp, Population};
use proptest::prelude::*;
use std::collections::BTreeMap;

fn plan(name: &str, pop: &Population, seed: u64) -> (Geometry, Plan) {
    let profile = MkfsProfile::by_name(policy::default_mkfs_profile(name).unwrap()).unwrap();
    let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
    let p = policy::by_name(name, &PolicyParams::new()).unwrap();
    let plan = p
        .plan(&geo, pop, seed)
        .unwrap_or_else(|e| panic!("{name} seed {seed}: {e}"));
    if let Err(e) = plan.check(&geo) {
        panic!("{name} seed {seed}: {e}");
    }
    (geo, plan)
}

/// Path of every name in the plan.
fn paths(plan: &Plan) -> BTreeMap<String, u32> {
    plan.name_paths()
        .into_iter()
        .map(|(ino, p)| (p, ino))
        .collect()
}

/// Every path the population leaves, from a replay of its operations.
fn expected_paths(pop: &Population) -> Vec<String> {
    let mut live: std::collections::BTreeSet<String> = Default::default();
    for op in &pop.ops {
        match op {
            NsOp::Unlink { path } | NsOp::Rmdir { path } => {
                live.remove(path);
            }
            NsOp::Rename { path, to } => {
                live.remove(path);
                live.insert(to.clone());
            }
            NsOp::Append { .. } | NsOp::Extend { .. } | NsOp::Truncate { .. } => {}
            other => {
                live.insert(other.path().to_string());
            }
        }
    }
    live.into_iter().collect()
}

fn assert_tree(name: &str, pop: &Population, plan: &Plan) {
    let have = paths(plan);
    let want = expected_paths(pop);
    assert_eq!(
        have.keys().cloned().collect::<Vec<_>>(),
        want,
        "{name}: the plan's names are the stream's"
    );
    let stats = pop.stats();
    let files = plan
        .inodes
        .iter()
        .filter(|i| i.kind == InodeKind::File)
        .count() as u64;
    assert_eq!(files, stats.regular_files, "{name}: regular files");
    assert_eq!(
        plan.links.len() as u64,
        stats.hard_links,
        "{name}: hard links"
    );
    let short = plan.short_files(pop);
    assert!(
        short.is_empty(),
        "{name}: short files {:?}",
        &short[..short.len().min(3)]
    );
}

#[test]
fn every_policy_plans_an_aging_stream_soundly() {
    // a tree at about half of a 256 MiB file system, then 3,000 random aging operations
    let base = Population {
        name: "base".into(),
        fs_bytes: 256 << 20,
        ops: Vec::new(),
    };
    for seed in 0..3u64 {
        let pop = random_aging(&base, seed, 3000, 0.6);
        assert!(pop.check_tree().is_ok());
        for name in policy::POLICY_NAMES {
            let (_, plan) = plan(name, &pop, seed);
            assert_tree(name, &pop, &plan);
        }
    }
}

#[test]
fn freed_space_is_used_again() {
    // write 8 times the file system's size in files of 1 MiB, keeping at most 40 alive: a
    // policy that did not reuse freed blocks would run out after an eighth of the stream
    let mut ops = Vec::new();
    for i in 0..2048 {
        ops.push(NsOp::Create {
            path: format!("f{i}"),
            bytes: 1 << 20,
        });
        if i >= 40 {
            ops.push(NsOp::Unlink {
                path: format!("f{}", i - 40),
            });
        }
    }
    let pop = Population {
        name: "churn".into(),
        fs_bytes: 256 << 20,
        ops,
    };
    for name in policy::POLICY_NAMES {
        let (geo, plan) = plan(name, &pop, 1);
        assert_tree(name, &pop, &plan);
        assert_eq!(plan.inodes.len(), 41, "{name}");
        // and the inodes are reused: no inode number beyond what 41 files and the reserved
        // ones need in one group... at most a few groups' worth
        let max_ino = plan.inodes.iter().map(|i| i.ino).max().unwrap();
        assert!(
            max_ino < 3 * geo.inodes_per_group,
            "{name}: inode {max_ino} after freeing 2,000"
        );
    }
}

#[test]
fn truncate_then_extend_keeps_the_tree_exact() {
    // a file through DIND, cut back into IND range, grown again
    let ops = vec![
        NsOp::Create {
            path: "big".into(),
            bytes: 30 << 20,
        },
        NsOp::Create {
            path: "other".into(),
            bytes: 5 << 20,
        },
        NsOp::Truncate {
            path: "big".into(),
            bytes: 2 << 20,
        },
        NsOp::Extend {
            path: "big".into(),
            bytes: 10 << 20,
        },
        NsOp::Truncate {
            path: "big".into(),
            bytes: 0,
        },
        NsOp::Extend {
            path: "big".into(),
            bytes: 100_000,
        },
    ];
    let pop = Population {
        name: "cut".into(),
        fs_bytes: 128 << 20,
        ops,
    };
    for name in policy::POLICY_NAMES {
        let (_, plan) = plan(name, &pop, 7);
        let big = plan.inodes.iter().find(|i| i.name == "big").unwrap();
        assert_eq!(big.size_bytes, 100_000, "{name}");
        assert_eq!(big.data_blocks(), 25, "{name}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random trees (often more than the file system holds) aged by random streams: every
    /// policy's plan passes `Plan::check`, and the ext4 policies, which never run out here,
    /// hold exactly the stream's tree.
    #[test]
    fn random_trees_and_streams_plan_soundly(pop in random_population(), seed in any::<u64>()) {
        let aged = random_aging(&pop, seed, 400, 0.5);
        for name in policy::POLICY_NAMES {
            let profile = MkfsProfile::by_name(policy::default_mkfs_profile(name).unwrap()).unwrap();
            let geo = Geometry::new(&profile, aged.fs_bytes).unwrap();
            let p = policy::by_name(name, &PolicyParams::new()).unwrap();
            match p.plan(&geo, &aged, seed) {
                Ok(plan) => prop_assert!(plan.check(&geo).is_ok(), "{}: {:?}", name, plan.check(&geo)),
                // the ext4 policies do not model ENOSPC: a tree larger than the file system
                // is refused with that said
                Err(e) => prop_assert!(e.to_string().contains("running out of space"), "{}: {}", name, e),
            }
        }
    }
}

/// The aging generator's own streams (`layoutlab_workload::aging`) through every policy:
/// ubuntu-32g shrunk to 1/100 at its largest fullness and bench5 at 1/100 on a disk a tenth
/// larger (as the generator's margin was checked), a few seeds each — every plan sound,
/// exactly the stream's tree, no file short. Prints how many were checked.
#[test]
fn generated_streams_plan_soundly_under_every_policy() {
    use layoutlab_layout::mkfs::{max_fullness, metadata_margin_bytes};
    use layoutlab_workload::aging::{age, AgingSpec};
    let ubuntu = layoutlab_workload::population_shrunk("ubuntu-32g", 0.01).unwrap();
    let mut bench5 = layoutlab_workload::population_by_name("bench5")
        .unwrap()
        .scale(0.01)
        .unwrap();
    bench5.fs_bytes += bench5.fs_bytes / 10;
    let mut checked = 0;
    for (tree, seeds) in [(&ubuntu, 0..2u64), (&bench5, 0..3u64)] {
        for seed in seeds {
            let spec = AgingSpec {
                fullness: Some(max_fullness(tree.fs_bytes).min(0.9)),
                ..AgingSpec::new(2.0, seed)
            };
            let pop = age(tree, &spec, metadata_margin_bytes(tree.fs_bytes)).unwrap();
            for name in policy::POLICY_NAMES {
                let (_, plan) = plan(name, &pop, seed);
                assert_tree(name, &pop, &plan);
                checked += 1;
            }
        }
    }
    println!("{checked} plans of generated aging streams checked");
}

/// ext3 models ENOSPC: on a full file system a rename whose new entry needs a new directory
/// block fails, and the plan drops the file (docs/policies.md, "ENOSPC (ext3)"); once space
/// is freed the same renames go through and the directory grows.
#[test]
fn an_ext3_rename_that_finds_no_room_drops_the_file() {
    // d's first block holds 19 entries of 200-byte names (24 + 19 * 208 = 3,976 of 4,096
    // bytes): the 20th needs a new block. The r files are empty, so dropping one frees no
    // block a later rename could use.
    let long = |c: char, i: usize| format!("d/{}{i}", c.to_string().repeat(199));
    let mut ops = vec![NsOp::Mkdir { path: "d".into() }];
    ops.extend((0..10).map(|i| NsOp::Create {
        path: format!("r{i}"),
        bytes: 0,
    }));
    ops.extend((0..19).map(|i| NsOp::Create {
        path: format!("d/{i:0>200}"),
        bytes: 0,
    }));
    // more than the file system holds: it ends full
    ops.push(NsOp::Create {
        path: "fill".into(),
        bytes: 1 << 30,
    });
    ops.extend((0..5).map(|i| NsOp::Rename {
        path: format!("r{i}"),
        to: long('x', i),
    }));
    ops.push(NsOp::Unlink {
        path: "fill".into(),
    });
    ops.extend((5..10).map(|i| NsOp::Rename {
        path: format!("r{i}"),
        to: long('y', i),
    }));
    let pop = Population {
        name: "full-rename".into(),
        fs_bytes: 64 << 20,
        ops,
    };
    for name in ["ext3-2007", "ext3-metacluster", "rext3"] {
        let (_, plan) = plan(name, &pop, 3);
        let have = paths(&plan);
        let names: Vec<&str> = have.keys().map(|p| p.as_str()).collect();
        for i in 0..5 {
            let (old, new) = (format!("r{i}"), long('x', i));
            assert!(
                !have.contains_key(&old) && !have.contains_key(&new),
                "{name}: r{i}'s rename found no room, the file is dropped: {names:?}"
            );
        }
        for i in 5..10 {
            assert!(
                have.contains_key(&long('y', i)) && !have.contains_key(&format!("r{i}")),
                "{name}: r{i} renamed once space was freed"
            );
        }
        let d = plan.inodes.iter().find(|n| n.name == "d").unwrap();
        assert!(d.data_blocks() > 1, "{name}: d grew for the later renames");
    }
}
