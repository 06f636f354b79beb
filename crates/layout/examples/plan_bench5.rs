//! Plans bench5 with every policy and prints timing and metrics:
//! `cargo run --release -p layoutlab-layout --example plan_bench5 -- [SCALE] [SEED]`.

use layoutlab_layout::{policy, Geometry, MkfsProfile, PolicyParams};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let scale: f64 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(1.0);
    let seed: u64 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(1);
    let dump: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(0);
    let pop = layoutlab_workload::population_by_name("bench5")?.scale(scale)?;
    let profile = MkfsProfile::by_name("ext3-2007")?;
    let geo = Geometry::new(&profile, pop.fs_bytes)?;
    println!(
        "bench5 scale {scale}: {} blocks, {} groups, journal {} blocks",
        geo.blocks_count,
        geo.group_count(),
        geo.journal_total_blocks
    );
    for name in policy::POLICY_NAMES
        .iter()
        .filter(|n| n.starts_with("ext3"))
    {
        let p = policy::by_name(name, &PolicyParams::new())?;
        let t = Instant::now();
        let plan = p.plan(&geo, &pop, seed)?;
        let secs = t.elapsed().as_secs_f64();
        let t = Instant::now();
        plan.check(&geo)?;
        let check_secs = t.elapsed().as_secs_f64();
        let frags: u64 = plan.fragments_per_file().iter().map(|f| f.1).sum();
        let short = plan.short_files(&pop);
        let groups_with_map = plan
            .group_summary(&geo)
            .iter()
            .filter(|g| g.mapping_blocks > 0)
            .count();
        println!(
            "{name}: planned in {secs:.2} s (check {check_secs:.2} s); {} data blocks, {} mapping blocks in {groups_with_map} groups, {frags} fragments over {} files, {} short files",
            plan.file_data_blocks(),
            plan.mapping_blocks(),
            plan.fragments_per_file().len(),
            short.len()
        );
        for inode in plan.inodes.iter().take(dump) {
            println!(
                "  ino {} {:?} {} bytes, {} runs, first runs {:?}, first mapping {:?}",
                inode.ino,
                inode.kind,
                inode.size_bytes,
                inode.data.len(),
                &inode.data[..inode.data.len().min(3)],
                &inode.mapping[..inode.mapping.len().min(3)]
            );
        }
        if *name == "ext3-metacluster" {
            let mc = policy::ext3_metacluster::Ext3Metacluster::default();
            println!(
                "  mapping blocks outside their metacluster: {}",
                mc.overflowed_mapping_blocks(&plan, &geo)
            );
        }
        if let Some(s) = short.first() {
            println!(
                "  first short file: {} ({} of {} bytes)",
                s.name, s.planned_bytes, s.requested_bytes
            );
        }
    }
    Ok(())
}
