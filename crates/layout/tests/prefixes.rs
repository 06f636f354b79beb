//! `Policy::plan_prefixes` in one pass (issue 28's cut of metacluster-aging: every age of a
//! policy planned in one pass over the oldest stream) gives, for every prefix, exactly the
//! plan that planning that prefix alone gives: the same inodes, blocks, mapping blocks and
//! links, in the same order, or the same error at the same prefix. Every policy, over random
//! trees and random aging streams (hard links, renames, rmdirs, ENOSPC) and over the aging
//! generator's own streams, whose younger ages are prefixes of the oldest.

mod common;

use common::{random_aging, random_population};
use layoutlab_layout::{policy, Geometry, LayoutError, MkfsProfile, Plan, Policy, PolicyParams};
use layoutlab_workload::aging::{age_prefixes, AgingSpec};
use layoutlab_workload::{population_shrunk, Checked, CheckedPopulation, NsOp, Population};
use proptest::prelude::*;
use std::ops::ControlFlow;

/// The metadata margin the aging streams leave on `pop`'s file system.
fn margin(pop: &Population) -> u64 {
    layoutlab_layout::mkfs::metadata_margin_bytes(pop.fs_bytes)
}

fn geometry(name: &str, pop: &Population) -> Geometry {
    let profile = MkfsProfile::by_name(policy::default_mkfs_profile(name).unwrap()).unwrap();
    Geometry::new(&profile, pop.fs_bytes).unwrap()
}

/// Each prefix planned alone, up to the first that fails (every longer one fails the same way,
/// at the same operation).
fn alone(name: &str, geo: &Geometry, pop: &Population, seed: u64, ends: &[usize]) -> Outcome {
    let p = policy::by_name(name, &PolicyParams::new()).unwrap();
    let mut plans = Vec::new();
    for &end in ends {
        let prefix = Population {
            ops: pop.ops[..end].to_vec(),
            ..pop.clone()
        };
        match p.plan(geo, &prefix, seed) {
            Ok(plan) => plans.push(plan),
            Err(e) => return (plans, Some(e)),
        }
    }
    (plans, None)
}

/// The plans one pass gave, and its error.
type Outcome = (Vec<Plan>, Option<LayoutError>);

/// The prefix plans one call of `plan` (a policy's `plan_prefixes` or
/// `plan_prefixes_checked`) hands its sink, and its error.
fn collect(
    name: &str,
    plan: impl FnOnce(
        &dyn Policy,
        &mut dyn FnMut(usize, Plan) -> ControlFlow<()>,
    ) -> Result<(), LayoutError>,
) -> Outcome {
    let p = policy::by_name(name, &PolicyParams::new()).unwrap();
    let mut plans = Vec::new();
    let r = plan(p.as_ref(), &mut |i, plan| {
        assert_eq!(i, plans.len(), "{name}: prefixes in order");
        plans.push(plan);
        ControlFlow::Continue(())
    });
    (plans, r.err())
}

fn one_pass(name: &str, geo: &Geometry, pop: &Population, seed: u64, ends: &[usize]) -> Outcome {
    collect(name, |p, sink| p.plan_prefixes(geo, pop, seed, ends, sink))
}

/// [`one_pass`] of a population checked once by the caller (`plan_prefixes_checked`: the
/// planners do not check it again; issue 28).
fn one_pass_checked(
    name: &str,
    geo: &Geometry,
    pop: &Population,
    seed: u64,
    ends: &[usize],
) -> Outcome {
    // owned and checked, as metacluster-aging makes each workload's stream
    let checked = CheckedPopulation::new(pop.clone()).expect("the tests' streams are possible");
    collect(name, |p, sink| {
        p.plan_prefixes_checked(geo, checked.tree(), seed, ends, sink)
    })
}

fn assert_same(name: &str, seed: u64, got: Outcome, want: &Outcome) {
    assert_eq!(got.0.len(), want.0.len(), "{name} seed {seed}: plans made");
    for (i, (g, w)) in got.0.iter().zip(&want.0).enumerate() {
        assert!(g == w, "{name} seed {seed}: prefix {i} differs");
    }
    assert_eq!(got.1, want.1, "{name} seed {seed}: error");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn one_pass_equals_each_prefix_alone(
        pop in random_population(),
        seed in any::<u64>(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 1..5),
    ) {
        let aged = random_aging(&pop, seed, 300, 0.5);
        let n = aged.ops.len();
        let mut ends: Vec<usize> = cuts.iter().map(|c| c.index(n + 1)).collect();
        ends.push(n);
        ends.sort();
        for &name in policy::POLICY_NAMES {
            let geo = geometry(name, &aged);
            let want = alone(name, &geo, &aged, seed, &ends);
            assert_same(name, seed, one_pass(name, &geo, &aged, seed, &ends), &want);
            assert_same(name, seed, one_pass_checked(name, &geo, &aged, seed, &ends), &want);
        }
    }
}

/// A tree checked once is refused as the planners refuse it: `Checked` and
/// `CheckedPopulation` (the owned one, checked on the thread that made it) are the only ways
/// to skip their check, and both refuse it with the planners' error.
#[test]
fn an_impossible_tree_is_not_checked() {
    let bad = Population {
        name: "bad".into(),
        fs_bytes: 64 << 20,
        ops: vec![NsOp::Unlink {
            path: "nothing".into(),
        }],
    };
    let refused = Checked::new(&bad).unwrap_err();
    let p = policy::by_name("ext3-2007", &PolicyParams::new()).unwrap();
    let planned = p.plan(&geometry("ext3-2007", &bad), &bad, 1).unwrap_err();
    assert_eq!(planned, LayoutError::BadPopulation(refused.to_string()));
    let owned = CheckedPopulation::new(bad.clone()).unwrap_err();
    assert_eq!(owned, refused);
}

/// metacluster-aging's own case: the aging generator's streams of ages 0, 1, 2 and 3 over a
/// small tree of the ubuntu-32g shape and over bench5 (trimmed below its fullness), every
/// policy the experiment compares and the ext4 ones with writeback (`ext4-kernel`, whose
/// files wait for writeback across a prefix's end) and a metadata region.
#[test]
fn the_aging_generators_ages_plan_as_alone() {
    let ubuntu = population_shrunk("ubuntu-32g", 0.002).unwrap();
    let bench5 = population_shrunk("bench5", 0.005).unwrap();
    let bench5 = Population {
        ops: bench5.ops[..bench5.ops.len() * 3 / 4].to_vec(),
        ..bench5
    };
    for tree in [ubuntu, bench5] {
        let spec = AgingSpec {
            fullness: Some(0.8),
            ..AgingSpec::new(1.0, 2007)
        };
        let (aged, ends) =
            age_prefixes(&tree, &spec, margin(&tree), &[0.0, 1.0, 2.0, 3.0]).unwrap();
        assert!(ends.windows(2).all(|w| w[0] < w[1]), "{ends:?}");
        for name in [
            "ext3-2007",
            "ext3-metacluster",
            "rext3",
            "ext4-2009",
            "ext4-kernel",
            "ext4-meta-ssd",
        ] {
            let geo = geometry(name, &aged);
            let got = one_pass(name, &geo, &aged, 2007, &ends);
            assert!(got.1.is_none(), "{name} on {}: {:?}", tree.name, got.1);
            let want = alone(name, &geo, &aged, 2007, &ends);
            assert_same(name, 2007, got, &want);
            let checked = one_pass_checked(name, &geo, &aged, 2007, &ends);
            assert_same(name, 2007, checked, &want);
        }
    }
}

/// A sink that breaks stops the pass: no later prefix is planned or given.
#[test]
fn a_sink_that_breaks_stops_the_pass() {
    let tree = population_shrunk("ubuntu-32g", 0.002).unwrap();
    let (aged, ends) = age_prefixes(
        &tree,
        &AgingSpec::new(1.0, 1),
        margin(&tree),
        &[0.0, 0.5, 1.0],
    )
    .unwrap();
    for name in ["ext3-2007", "ext4-2009"] {
        let geo = geometry(name, &aged);
        let p = policy::by_name(name, &PolicyParams::new()).unwrap();
        let mut given = Vec::new();
        p.plan_prefixes(&geo, &aged, 1, &ends, &mut |i, _| {
            given.push(i);
            if i == 1 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
        assert_eq!(given, [0, 1], "{name}");
    }
}

/// Bad ends are refused before any planning, and an ext3 prefix that ends while a file is
/// still open for appends (its writer closes it at its last write, after the end) is refused
/// with that reason rather than planned unlike the prefix alone.
#[test]
fn bad_ends_and_open_files_are_refused() {
    let pop = Population {
        name: "t".into(),
        fs_bytes: 64 << 20,
        ops: vec![
            NsOp::Create {
                path: "f".into(),
                bytes: 8192,
            },
            NsOp::Append {
                path: "f".into(),
                bytes: 8192,
            },
        ],
    };
    let geo = geometry("ext3-2007", &pop);
    let p = policy::by_name("ext3-2007", &PolicyParams::new()).unwrap();
    let mut sink = |_: usize, _: Plan| -> ControlFlow<()> { panic!("no plan is given") };
    for (ends, why) in [
        (&[2usize, 1][..], "must not decrease"),
        (&[3][..], "a prefix of 3 operations of a population of 2"),
        (&[1][..], "open for appends"),
    ] {
        let e = p
            .plan_prefixes(&geo, &pop, 1, ends, &mut sink)
            .unwrap_err()
            .to_string();
        assert!(e.contains(why), "{ends:?}: {e}");
    }
    // the prefix's own plan, made alone, is what the default path gives
    let (plans, err) = alone("ext3-2007", &geo, &pop, 1, &[1, 2]);
    assert!(err.is_none() && plans.len() == 2);
}
