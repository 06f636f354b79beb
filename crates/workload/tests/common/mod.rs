//! Helpers shared by the workload crate's integration tests.

use layoutlab_workload::populations::tree::{TreeCounts, TreePopulation, TreeShape};
use layoutlab_workload::Population;

/// A small tree of the ubuntu-32g shape with the given counts.
pub fn small_tree(
    seed: u64,
    dirs: u64,
    files: u64,
    links: u64,
    fs_mib: u64,
    fill: f64,
) -> Population {
    let fs_bytes = fs_mib << 20;
    TreePopulation {
        name: "small".into(),
        description: "test".into(),
        fs_bytes,
        seed,
        file_data_blocks: ((fs_bytes / 4096) as f64 * fill) as u64,
        counts: TreeCounts {
            directories: dirs,
            regular_files: files,
            symlinks: 3,
            fast_symlinks: 2,
            hard_links: links,
            char_devices: 1,
            block_devices: 0,
            fifos: 1,
            sockets: 0,
            large_files: 0,
        },
        shape: TreeShape {
            subdir_offset: 2.0,
            files_offset: 2.36,
            lognormal_weight: 0.99994,
            lognormal_mu: 9.48,
            lognormal_sigma: 2.46,
            pareto_k: 0.91,
            pareto_xm_bytes: 512.0,
        },
    }
    .generate()
}
