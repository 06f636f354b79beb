//! metacluster-io against the real kernel: on small images of both layouts, the blocks of
//! the benchmark file that today's kernel reads for each access pattern are exactly the data
//! and indirect blocks the layout predicts (root: loop devices, mount, tracefs).

mod common;

use layoutlab_experiments::metacluster_io::run::{
    accesses, file_blocks_read, file_inode, mount_image, plan_image, predicted_blocks, traced_reads,
};
use layoutlab_experiments::metacluster_io::MetaclusterIoSpec;

fn spec() -> MetaclusterIoSpec {
    let exp = layoutlab_experiments::experiment::load("metacluster-io").unwrap();
    exp.params().unwrap()
}

#[test]
fn kernel_reads_cover_exactly_the_predicted_blocks() {
    if !common::root_or_skip(
        "kernel_reads_cover_exactly_the_predicted_blocks",
        "loop devices, mount, tracefs",
    ) {
        return;
    }
    let mut spec = spec();
    // Enough 512 KiB reads on a small file to cross many indirect blocks.
    spec.large_fraction = 0.1;
    let fs_bytes = 2_000_000_000;
    let file_bytes = 300_000_000;
    let workdir = std::env::temp_dir();
    for policy in ["ext3-2007", "ext3-metacluster"] {
        let (profile, geometry, plan) =
            plan_image("ext3-2007", policy, fs_bytes, file_bytes, 11).unwrap();
        let inode = file_inode(&plan).unwrap().clone();
        assert!(
            inode.mapping.len() > 60,
            "{policy}: a file with a DIND tree"
        );
        let bs = u64::from(geometry.block_size_bytes);
        let queue = layoutlab_rig::QueueSpec {
            rotational: Some(true),
            read_ahead_kb: Some(128),
            max_sectors_kb: Some(512),
            logical_block_bytes: None,
        };
        let mut kfs = mount_image(&profile, &geometry, &plan, &workdir, &queue).unwrap();
        for b in [2u32, 3, 4] {
            let acc = accesses(b, file_bytes, &spec, 0.05, 11);
            assert!(acc.len() >= 20, "b{b}: {} reads", acc.len());
            let (trace, _) = traced_reads(&mut kfs, &format!("b{b}"), &acc, b != 2).unwrap();
            let (want_data, want_map) = predicted_blocks(&inode, bs, &acc);
            let (got_data, got_map) = file_blocks_read(&inode, bs, &trace);
            assert!(!want_map.is_empty());
            assert_eq!(
                got_data.len(),
                want_data.len(),
                "{policy} b{b}: data blocks read {} vs predicted {}",
                got_data.len(),
                want_data.len()
            );
            assert_eq!(got_data, want_data, "{policy} b{b}: data blocks");
            assert_eq!(got_map, want_map, "{policy} b{b}: indirect blocks");
            // Each indirect block is read once: the kernel keeps it in memory after.
            let spb = bs / 512;
            let map_reads = trace
                .requests
                .iter()
                .filter(|r| r.op == layoutlab_trace::Op::Read)
                .filter(|r| {
                    let (f, l) = (
                        r.sector / spb,
                        (r.sector + u64::from(r.sectors)).div_ceil(spb),
                    );
                    (f..l).any(|x| want_map.contains(&x))
                })
                .count();
            assert_eq!(map_reads, want_map.len(), "{policy} b{b}: one read each");
        }
    }
}
