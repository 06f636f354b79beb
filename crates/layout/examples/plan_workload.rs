//! Plans a named workload with a policy and prints what it used and how long it took:
//! `cargo run --release -p layoutlab-layout --example plan_workload -- ubuntu-32g ext4-2009 ext4-2009 [SEED]`
//! (workload, mkfs profile, policy).

use layoutlab_layout::{policy, Geometry, InodeKind, MapKind, MkfsProfile, PolicyParams};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (workload, profile, name) = (&args[1], &args[2], &args[3]);
    let seed: u64 = args.get(4).map_or(Ok(1), |s| s.parse())?;
    let t = Instant::now();
    let pop = layoutlab_workload::population_by_name(workload)?;
    let gen = t.elapsed().as_secs_f64();
    let geo = Geometry::new(&MkfsProfile::by_name(profile)?, pop.fs_bytes)?;
    let t = Instant::now();
    let plan = policy::by_name(name, &PolicyParams::new())?.plan(&geo, &pop, seed)?;
    let secs = t.elapsed().as_secs_f64();
    plan.check(&geo)?;
    let meta = geo.blocks_count - geo.free_map().total_free();
    let sum = |k: InodeKind| -> u64 {
        plan.inodes
            .iter()
            .filter(|i| i.kind == k)
            .map(|i| i.data_blocks())
            .sum()
    };
    let dir_blocks = sum(InodeKind::Dir) - 1; // the root's first block is mke2fs's
    let tree: usize = plan
        .inodes
        .iter()
        .flat_map(|i| &i.mapping)
        .filter(|m| matches!(m.kind, MapKind::Extent { .. }))
        .count();
    let used =
        meta + sum(InodeKind::File) + sum(InodeKind::Symlink) + dir_blocks + plan.mapping_blocks();
    println!(
        "{workload} on {profile} with {name}: generated in {gen:.2} s, planned in {secs:.2} s; \
         {} inodes planned; blocks: mkfs {meta}, file data {}, symlink {}, directory {dir_blocks}, \
         extent-tree {tree}, other mapping {}; used {used}",
        plan.inodes.len(),
        sum(InodeKind::File),
        sum(InodeKind::Symlink),
        plan.mapping_blocks() - tree as u64
    );
    Ok(())
}
