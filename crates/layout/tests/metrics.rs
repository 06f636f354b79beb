//! Layout metrics on real policies' plans: the figures docs/metrics.md quotes (how the
//! mapping-block measures tell ext3-2007, ext3-metacluster and rext3 apart), and invariants
//! that hold for any plan (random populations × policies).

mod common;

use common::random_population;
use layoutlab_layout::metrics::LayoutMetrics;
use layoutlab_layout::{policy_by_name, Geometry, InodeKind, MkfsProfile, Plan, PolicyParams};
use proptest::prelude::*;

fn bench5_plan(policy: &str) -> (Geometry, Plan) {
    let profile = MkfsProfile::by_name("ext3-2007").unwrap();
    let pop = layoutlab_workload::population_by_name("bench5")
        .unwrap()
        .scale(0.01)
        .unwrap();
    let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
    let plan = policy_by_name(policy, &PolicyParams::new())
        .unwrap()
        .plan(&geo, &pop, 42)
        .unwrap();
    (geo, plan)
}

/// ext3-2007 puts each IND right before the 1024 data blocks it maps: in disk order they are
/// 1025 blocks apart and one block from their data. Metaclustering gathers them: mostly
/// adjacent (median gap 1), in a few runs per group, thousands of blocks from their data.
#[test]
fn mapping_dispersion_tells_the_ext3_policies_apart() {
    let (g1, vanilla) = bench5_plan("ext3-2007");
    let (g2, mc) = bench5_plan("ext3-metacluster");
    let (g3, r) = bench5_plan("rext3");
    let v = LayoutMetrics::of(&vanilla, &g1).mapping;
    let m = LayoutMetrics::of(&mc, &g2).mapping;
    let x = LayoutMetrics::of(&r, &g3).mapping;
    println!("ext3-2007 {v:?}\next3-metacluster {m:?}\nrext3 {x:?}");
    assert_eq!(v.disk.median_gap, 1025);
    assert_eq!(v.to_data_median, 1);
    assert_eq!(m.disk.median_gap, 1);
    assert_eq!(x.disk.median_gap, 1);
    // one sweep meets a run per IND for ext3-2007, a few per group for the others
    assert!(
        v.disk.runs > 10 * m.disk.runs,
        "{} vs {}",
        v.disk.runs,
        m.disk.runs
    );
    assert!(m.disk.runs <= 2 * g2.group_count());
    assert_eq!(x.disk.runs, x.disk.groups, "rext3: one region per group");
    assert!(m.to_data_median > 1000 && x.to_data_median > 1000);
    // e2fsck pass 1 travels less between mapping blocks when they are together
    assert!(m.fsck_order_mean_distance < v.fsck_order_mean_distance);
    assert!(x.fsck_order_mean_distance < v.fsck_order_mean_distance);
}

fn check_invariants(plan: &Plan, geo: &Geometry) -> Result<(), TestCaseError> {
    let m = LayoutMetrics::of(plan, geo);
    let f = &m.free_space;
    // free space: the geometry's free blocks less every block the plan adds
    let mut used_by_plan = 0;
    let root = geo.root_dir_block();
    for i in &plan.inodes {
        used_by_plan += i.data_blocks() + i.mapping.len() as u64;
        if i.ino == 2 && i.data.first().map(|r| r.physical) == Some(root) {
            used_by_plan -= 1; // mke2fs's block
        }
    }
    prop_assert_eq!(f.free_blocks, geo.free_map().total_free() - used_by_plan);
    prop_assert_eq!(
        f.histogram.iter().map(|b| b.blocks).sum::<u64>(),
        f.free_blocks
    );
    prop_assert_eq!(
        f.histogram.iter().map(|b| b.extents).sum::<u64>(),
        f.free_extents
    );
    for b in &f.histogram {
        prop_assert!(b.blocks >= b.extents * b.min_blocks);
        prop_assert!(b.blocks <= b.extents.saturating_mul(b.max_blocks));
    }
    prop_assert!(f.free_chunks * f.chunk_blocks <= f.free_blocks);
    // files
    let s = &m.layout_score;
    prop_assert!(s.contiguous_blocks <= s.scored_blocks);
    prop_assert!((0.0..=1.0).contains(&s.score));
    let files = plan.inodes.iter().filter(|i| i.kind == InodeKind::File);
    let scored: u64 = files
        .clone()
        .map(|i| i.data_blocks())
        .filter(|&b| b >= 2)
        .map(|b| b - 1)
        .sum();
    prop_assert_eq!(s.scored_blocks, scored);
    let fr = &m.fragments;
    prop_assert_eq!(
        fr.histogram.iter().map(|b| b.files).sum::<u64>(),
        fr.files - fr.empty_files
    );
    prop_assert!(fr.median <= fr.p90 && fr.p90 <= fr.p99 && fr.p99 <= fr.max);
    prop_assert_eq!(
        s.scored_blocks - s.contiguous_blocks,
        files
            .filter(|i| i.data_blocks() >= 2)
            .map(|i| i.fragments() - 1)
            .sum::<u64>()
    );
    // dispersion
    prop_assert_eq!(m.mapping.disk.blocks, plan.mapping_blocks());
    for d in [&m.mapping.disk, &m.directories] {
        prop_assert!(d.runs <= d.blocks && d.groups <= m.groups);
        prop_assert_eq!(d.span_blocks, d.blocks + d.skipped_blocks);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn metrics_invariants_on_random_plans(pop in random_population(), seed in any::<u64>()) {
        let profile = MkfsProfile::by_name("ext3-2007").unwrap();
        let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
        for policy in ["ext3-2007", "ext3-metacluster", "rext3"] {
            let plan = policy_by_name(policy, &PolicyParams::new())
                .unwrap()
                .plan(&geo, &pop, seed)
                .unwrap();
            check_invariants(&plan, &geo)?;
        }
    }
}
