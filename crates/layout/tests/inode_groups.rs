//! The table of docs/experiments/metacluster-fsck.md that explains the longer vanilla
//! inode-table sweep: in which groups bench5's 350 file inodes land at scale 1 (seed 2007, the
//! experiment's), and how many indirect blocks their files own. The test reads the table from
//! the page and recomputes it from the plans, so the page cannot drift from the allocators.

use layoutlab_layout::{policy, Geometry, InodeKind, MkfsProfile, PolicyParams};
use std::collections::BTreeMap;
use std::path::Path;

/// (group, files, indirect blocks) per group holding a file inode, from a page row like
/// `| ext3-2007 | 1 (224 / 79,144), 3 (26 / 3,146) |`.
fn documented(doc: &str, policy: &str) -> Vec<(u64, u64, u64)> {
    let row = doc
        .lines()
        .find(|l| l.starts_with(&format!("| {policy} | ")) && l.contains(" / "))
        .unwrap_or_else(|| panic!("metacluster-fsck.md has no inode-group row for {policy}"));
    let cell = row.split('|').nth(2).unwrap();
    cell.split("),")
        .map(|entry| {
            let entry = entry.trim().trim_end_matches(')');
            let (group, rest) = entry.split_once(" (").unwrap();
            let (files, indirect) = rest.split_once(" / ").unwrap();
            let n = |s: &str| s.trim().replace(',', "").parse::<u64>().unwrap();
            (n(group), n(files), n(indirect))
        })
        .collect()
}

#[test]
fn documented_inode_groups_are_the_plans() {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/experiments/metacluster-fsck.md"),
    )
    .unwrap();
    let pop = layoutlab_workload::population_by_name("bench5").unwrap();
    let profile = MkfsProfile::by_name("ext3-2007").unwrap();
    let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
    let ipg = u64::from(geo.inodes_per_group);
    // The jq command on the page divides by 16384.
    assert_eq!(ipg, 16384);
    for name in ["ext3-2007", "ext3-metacluster"] {
        let plan = policy::by_name(name, &PolicyParams::new())
            .unwrap()
            .plan(&geo, &pop, 2007)
            .unwrap();
        let mut by_group: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        for i in plan.inodes.iter().filter(|i| i.kind == InodeKind::File) {
            let e = by_group.entry((u64::from(i.ino) - 1) / ipg).or_default();
            e.0 += 1;
            e.1 += i.mapping.len() as u64;
        }
        let ours: Vec<(u64, u64, u64)> =
            by_group.into_iter().map(|(g, (f, n))| (g, f, n)).collect();
        assert_eq!(
            ours,
            documented(&doc, name),
            "{name}: update the page's table"
        );
    }
}
