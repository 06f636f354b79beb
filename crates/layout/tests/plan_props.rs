//! Properties every plan must have, over bench5 and over seeded random workloads:
//! no block used twice, no mke2fs block overwritten, every file block mapped exactly once,
//! mapping blocks exactly those the tree needs (`Plan::check`); ext3-2007 puts each
//! indirect chain right before the data block it leads to unless that block was taken;
//! ext3-metacluster keeps data out of the metaclusters and indirect blocks in them unless
//! the metacluster was full.

mod common;

use common::random_population;
use layoutlab_layout::alloc::ext3_alloc::MAX_RESERVE_BLOCKS;
use layoutlab_layout::policy::ext3_metacluster::Ext3Metacluster;
use layoutlab_layout::{policy, Geometry, InodeKind, MkfsProfile, Plan, PolicyParams};
use layoutlab_workload::{NsOp, Population};
use proptest::prelude::*;

/// Benchmark 5 at scale 0.003 on the 2007 mkfs profile: a few seconds of planning.
fn small_bench5() -> (Geometry, Population) {
    let profile = MkfsProfile::by_name("ext3-2007").unwrap();
    let pop = layoutlab_workload::population_by_name("bench5")
        .unwrap()
        .scale(0.003)
        .unwrap();
    (Geometry::new(&profile, pop.fs_bytes).unwrap(), pop)
}

fn plan(name: &str, geo: &Geometry, pop: &Population, seed: u64) -> Plan {
    let p = policy::by_name(name, &PolicyParams::new()).unwrap();
    let plan = p.plan(geo, pop, seed).unwrap();
    if let Err(e) = plan.check(geo) {
        panic!("{name} seed {seed}: {e}");
    }
    plan
}

/// Who owns each block: (inode index in the plan, allocation rank within the inode).
fn owners(plan: &Plan, blocks: u64) -> Vec<(u32, u64)> {
    let mut own = vec![(u32::MAX, 0u64); blocks as usize];
    for (i, inode) in plan.inodes.iter().enumerate() {
        for r in &inode.data {
            for k in 0..r.len {
                own[(r.physical + k) as usize] = (i as u32, 2 * (r.logical + k) + 1);
            }
        }
        for m in &inode.mapping {
            own[m.physical as usize] = (i as u32, 2 * m.logical);
        }
    }
    own
}

/// ext3-2007: every indirect chain (IND, or DIND+IND, ...) sits in consecutive blocks right
/// before its first data block, unless the next block had been taken before (by mke2fs, an
/// earlier file, or this file's earlier blocks).
fn assert_inline_chains(plan: &Plan, geo: &Geometry) {
    let own = owners(plan, geo.blocks_count);
    let mut adjacent = 0;
    let mut chains = 0;
    for (idx, inode) in plan.inodes.iter().enumerate() {
        let maps = &inode.mapping;
        let mut i = 0;
        while i < maps.len() {
            let l = maps[i].logical;
            let mut j = i;
            while j + 1 < maps.len() && maps[j + 1].logical == l {
                j += 1;
            }
            let mut chain: Vec<u64> = maps[i..=j].iter().map(|m| m.physical).collect();
            chain.push(inode.physical_of(l).unwrap());
            chains += 1;
            let mut ok = true;
            for w in chain.windows(2) {
                if w[1] != w[0] + 1 {
                    ok = false;
                    let next = w[0] + 1;
                    let taken_before = geo.is_meta(next)
                        || next >= geo.blocks_count
                        || match own.get(next as usize) {
                            Some(&(o, rank)) if o == idx as u32 => rank < 2 * l,
                            Some(&(o, _)) => o < idx as u32 || o == u32::MAX,
                            None => true,
                        };
                    assert!(
                        taken_before,
                        "ino {} chain at logical {l} {chain:?}: block {next} was free but skipped",
                        inode.ino
                    );
                }
            }
            adjacent += usize::from(ok);
            i = j + 1;
        }
    }
    assert!(
        chains == 0 || adjacent * 10 >= chains * 9,
        "{adjacent} of {chains} chains adjacent"
    );
}

/// ext3-metacluster: data never in a metacluster; each indirect block in the metacluster
/// of its data block's group unless that metacluster is full (blocks are never freed here,
/// so "full then" means "full at the end").
fn assert_metacluster(plan: &Plan, geo: &Geometry, mc: &Ext3Metacluster) {
    let mut used = geo.free_map();
    for inode in &plan.inodes {
        for r in &inode.data {
            if !(inode.ino == 2 && r.physical == geo.root_dir_block()) {
                used.mark_used(r.physical, r.len);
            }
        }
        for m in &inode.mapping {
            used.mark_used(m.physical, 1);
        }
    }
    let region = |block: u64| {
        let g = &geo.groups[geo.group_of(block) as usize];
        mc.region(g.first_block, g.blocks)
    };
    for inode in &plan.inodes {
        for r in &inode.data {
            // A run may span groups: test it against every group's metacluster it touches.
            for g in geo.group_of(r.physical)..=geo.group_of(r.physical + r.len - 1) {
                let grp = &geo.groups[g as usize];
                let (s, e) = mc.region(grp.first_block, grp.blocks);
                assert!(
                    r.physical + r.len <= s || r.physical >= e,
                    "ino {} data run {r:?} enters metacluster [{s}, {e})",
                    inode.ino
                );
            }
        }
        for m in &inode.mapping {
            let data = inode.physical_of(m.logical).unwrap();
            let (s, e) = region(data);
            let inside = m.physical >= s && m.physical < e;
            let full = used.next_free(s, e).is_none();
            assert!(
                inside || full,
                "ino {} {:?} at {} outside a non-full metacluster [{s}, {e})",
                inode.ino,
                m.kind,
                m.physical
            );
        }
    }
}

/// Blocks still free after the plan in each group, outside metaclusters when `mc` is given.
fn left_free_per_group(plan: &Plan, geo: &Geometry, mc: Option<&Ext3Metacluster>) -> Vec<u64> {
    let mut used = geo.free_map();
    for inode in &plan.inodes {
        for r in &inode.data {
            if !(inode.ino == 2 && r.physical == geo.root_dir_block()) {
                used.mark_used(r.physical, r.len);
            }
        }
        for m in &inode.mapping {
            used.mark_used(m.physical, 1);
        }
    }
    let mut out = Vec::new();
    for (i, g) in geo.groups.iter().enumerate() {
        let mut free = used.group_free(i as u64);
        if let Some(mc) = mc {
            let (s, e) = mc.region(g.first_block, g.blocks);
            let mut at = s;
            while let Some(b) = used.next_free(at, e) {
                let stop = used.next_used(b, e);
                free -= stop - b;
                at = stop;
            }
        }
        out.push(free);
    }
    out
}

#[test]
fn check_catches_broken_plans() {
    let (geo, pop) = small_bench5();
    let good = plan("ext3-2007", &geo, &pop, 5);
    // A block used twice.
    let mut bad = good.clone();
    bad.inodes[2].mapping[0].physical = bad.inodes[1].mapping[0].physical;
    assert!(bad.check(&geo).unwrap_err().contains("another inode"));
    // A data block on an inode table.
    let mut bad = good.clone();
    bad.inodes[1].data[0].physical = geo.groups[1].inode_table;
    assert!(bad.check(&geo).unwrap_err().contains("metadata"));
    // A missing indirect block.
    let mut bad = good.clone();
    bad.inodes[3].mapping.pop();
    assert!(bad.check(&geo).unwrap_err().contains("tree needs"));
    // A hole in the logical blocks.
    let mut bad = good.clone();
    bad.inodes[4].data[1].logical += 1;
    assert!(bad.check(&geo).unwrap_err().contains("does not continue"));
    // The fixture itself is a vanilla plan: its first IND precedes its data.
    let ino = &good.inodes[1];
    assert_eq!(
        ino.physical_of(ino.mapping[0].logical).unwrap(),
        ino.mapping[0].physical + 1
    );
}

#[test]
fn bench5_scaled_both_policies() {
    let profile = MkfsProfile::by_name("ext3-2007").unwrap();
    for scale in [0.003, 0.01, 0.03] {
        let pop = layoutlab_workload::population_by_name("bench5")
            .unwrap()
            .scale(scale)
            .unwrap();
        let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
        let vanilla = plan("ext3-2007", &geo, &pop, 7);
        assert_inline_chains(&vanilla, &geo);
        let mc = plan("ext3-metacluster", &geo, &pop, 7);
        assert_metacluster(&mc, &geo, &Ext3Metacluster::default());
        // Same files, same order; the root grew by two blocks at the 338th name.
        assert_eq!(vanilla.inodes.len(), 351);
        assert_eq!(vanilla.inodes[0].kind, InodeKind::Dir);
        assert_eq!(vanilla.inodes[0].data_blocks(), 3);
        // Nearly full: at most a few thousand blocks left.
        let free =
            geo.free_map().total_free() - vanilla.file_data_blocks() - vanilla.mapping_blocks() - 2;
        assert!(
            free < geo.blocks_count / 100,
            "scale {scale}: {free} blocks left free"
        );
    }
}

#[test]
fn plans_are_deterministic_and_seed_matters() {
    let (geo, pop) = small_bench5();
    // the ext3-family policies (the ext4 ones need an ext4 profile: tests/ext4_policies.rs)
    for name in policy::POLICY_NAMES
        .iter()
        .filter(|n| !n.starts_with("ext4"))
    {
        assert_eq!(plan(name, &geo, &pop, 3), plan(name, &geo, &pop, 3));
        assert_ne!(
            plan(name, &geo, &pop, 3),
            plan(name, &geo, &pop, 4),
            "{name}"
        );
    }
}

#[test]
fn wrap_overflow_plans_check() {
    let (geo, pop) = small_bench5();
    let mut params = PolicyParams::new();
    params.insert("overflow".into(), "wrap".into());
    params.insert("size".into(), "1/1024".into());
    let p = policy::by_name("ext3-metacluster", &params).unwrap();
    let plan = p.plan(&geo, &pop, 1).unwrap();
    plan.check(&geo).unwrap();
    let mc = Ext3Metacluster::from_params(&params).unwrap();
    assert_metacluster(&plan, &geo, &mc);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_workloads_plan_soundly(pop in random_population(), seed in any::<u64>()) {
        let profile = MkfsProfile::by_name("ext3-2007").unwrap();
        let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
        let vanilla = plan("ext3-2007", &geo, &pop, seed);
        assert_inline_chains(&vanilla, &geo);
        let mc = plan("ext3-metacluster", &geo, &pop, seed);
        assert_metacluster(&mc, &geo, &Ext3Metacluster::default());
        for p in [&vanilla, &mc] {
            // Files come out in creation order and short ones are short only on ENOSPC.
            let short = p.short_files(&pop);
            if let Some(first) = short.first() {
                let after: u64 = p.inodes.iter().filter(|i| i.ino != first.ino).count() as u64;
                prop_assert!(after > 0);
            }
            let requested: u64 = pop
                .ops
                .iter()
                .map(|op| match op {
                    NsOp::Create { bytes, .. } => bytes.div_ceil(4096),
                    _ => 0,
                })
                .sum();
            prop_assert!(p.file_data_blocks() <= requested);
        }
        // ENOSPC only when no group has more than half the largest window free: 2.6.23
        // skips groups with at most windowsz/2 free blocks and, when the goal group is too
        // poor for a window, does not retry without one (a bogus ENOSPC the model keeps).
        for (p, mc) in [(&vanilla, None), (&mc, Some(Ext3Metacluster::default()))] {
            if !p.short_files(&pop).is_empty() {
                let worst = left_free_per_group(p, &geo, mc.as_ref()).into_iter().max().unwrap_or(0);
                prop_assert!(worst <= MAX_RESERVE_BLOCKS / 2, "{} ran out with a group of {} free blocks", p.policy, worst);
            }
        }
    }
}
