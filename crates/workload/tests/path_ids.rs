//! Path ids (`CheckedTree::ops`, issue 28): the planners index by them instead of by the
//! paths, so each id must name exactly the path the operation names, at that point of the
//! stream. Held against a map from id to path string (the structure the planners had, keyed
//! the other way), over aged random trees (every operation kind: renames, hard links, rmdirs,
//! names made again) and bench5.

mod common;

use layoutlab_workload::aging::{self, AgingSpec};
use layoutlab_workload::{population_by_name, Checked, NsOp, Population, ROOT_PATH_ID};
use proptest::prelude::*;
use std::collections::HashMap;

fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

/// Replays `pop`'s ids beside the paths; panics (naming the operation) where an id names
/// another path than the operation's, or a new path gets the id of a living one. Returns the
/// most paths alive at once (the root included).
fn ids_name_the_paths(pop: &Population) -> usize {
    let checked = Checked::new(pop).expect("a possible tree");
    let tree = checked.tree();
    let mut live: HashMap<u32, &str> = HashMap::from([(ROOT_PATH_ID, "")]);
    let mut most = 1;
    let count = tree.path_ids();
    for (i, (op, ids)) in tree.ops().enumerate() {
        let path = op.path();
        let at = format!("ops[{i}] {} '{path}' as {ids:?}", op.verb());
        assert!(
            (ids.path as usize) < count && (ids.dir as usize) < count,
            "{at}"
        );
        assert_eq!(live.get(&ids.dir), Some(&dir_of(path)), "{at}: directory");
        let makes = matches!(
            op,
            NsOp::Mkdir { .. }
                | NsOp::Create { .. }
                | NsOp::Symlink { .. }
                | NsOp::Link { .. }
                | NsOp::Mknod { .. }
        );
        if makes {
            assert!(!live.contains_key(&ids.path), "{at}: an id in use");
            live.insert(ids.path, path);
        } else {
            assert_eq!(live.get(&ids.path), Some(&path), "{at}");
        }
        match op {
            NsOp::Link { target, .. } => {
                let (t, d) = ids.other.expect("a link's target");
                assert_eq!(live.get(&t), Some(&target.as_str()), "{at}: target");
                assert_eq!(live.get(&d), Some(&dir_of(target)), "{at}: its directory");
            }
            NsOp::Rename { to, .. } => {
                let (t, d) = ids.other.expect("a rename's new name");
                assert!(!live.contains_key(&t), "{at}: the new name's id in use");
                assert_eq!(live.get(&d), Some(&dir_of(to)), "{at}: its directory");
                live.remove(&ids.path);
                live.insert(t, to);
            }
            NsOp::Unlink { .. } | NsOp::Rmdir { .. } => {
                live.remove(&ids.path);
            }
            _ => assert_eq!(ids.other, None, "{at}"),
        }
        most = most.max(live.len());
    }
    // a removed path's id is reused: no more ids than paths alive at once (a rename holds
    // both names for a moment)
    assert!(
        count <= most + 1,
        "{count} ids for at most {most} paths alive"
    );
    most
}

/// A small tree of the ubuntu-32g shape: 64 MiB, a third of it file data.
fn small_tree(seed: u64, dirs: u64, files: u64, links: u64) -> Population {
    common::small_tree(seed, dirs, files, links, 64, 1.0 / 3.0)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn ids_name_the_paths_of_aged_trees(
        tree_seed in 0u64..1000,
        seed in any::<u64>(),
        dirs in 2u64..30,
        files in 1u64..120,
        links in 0u64..4,
        age_x in 0.5f64..3.0,
        rename_share in 0.0f64..0.3,
        dir_share in 0.0f64..0.3,
    ) {
        let pop = small_tree(tree_seed, dirs, files, links);
        // a tree a third full aged at the experiment's fullness: every tree here can be aged
        let spec = AgingSpec {
            fullness: Some(0.8),
            rename_share,
            dir_share,
            ..AgingSpec::new(age_x, seed)
        };
        let aged = aging::age(&pop, &spec, pop.fs_bytes / 20).unwrap();
        prop_assert!(aged.ops.len() > pop.ops.len());
        ids_name_the_paths(&aged);
    }
}

#[test]
fn ids_name_the_paths_of_bench5_aged() {
    let pop = population_by_name("bench5").unwrap().scale(0.01).unwrap();
    let aged = aging::age(&pop, &AgingSpec::new(3.0, 7), pop.fs_bytes / 20).unwrap();
    assert!(aged.ops.iter().any(|op| matches!(op, NsOp::Rename { .. })));
    ids_name_the_paths(&aged);
}

/// Names made again, hard links outliving their first name, appends through a link, a
/// directory removed and made again: the cases an aging stream may not draw.
#[test]
fn ids_follow_names_made_again() {
    let s = |p: &str| p.to_string();
    let ops = vec![
        NsOp::Mkdir { path: s("d") },
        NsOp::Create {
            path: s("d/a"),
            bytes: 10,
        },
        NsOp::Link {
            path: s("b"),
            target: s("d/a"),
        },
        NsOp::Append {
            path: s("b"),
            bytes: 5,
        },
        NsOp::Unlink { path: s("d/a") },
        NsOp::Create {
            path: s("d/a"),
            bytes: 1,
        },
        NsOp::Rename {
            path: s("b"),
            to: s("d/c"),
        },
        NsOp::Unlink { path: s("d/c") },
        NsOp::Unlink { path: s("d/a") },
        NsOp::Rmdir { path: s("d") },
        NsOp::Mkdir { path: s("d") },
        NsOp::Symlink {
            path: s("d/a"),
            target: s("x"),
        },
    ];
    let pop = Population {
        name: "again".into(),
        fs_bytes: 64 << 20,
        ops,
    };
    assert_eq!(ids_name_the_paths(&pop), 4);
    let checked = Checked::new(&pop).unwrap();
    // "d", "d/a", "b", then "d/c" beside "b": four ids past the root at most
    assert_eq!(checked.tree().path_ids(), 5);
}
