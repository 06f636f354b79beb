//! Helpers the layout tests share.
#![allow(dead_code)]

use layoutlab_workload::{NsOp, Population};
use proptest::prelude::*;

/// Random populations, often more than the file system holds: nested directories and files
/// small (direct blocks and the first IND), middling (DIND) and big.
pub fn random_population() -> impl Strategy<Value = Population> {
    let fs_mib = 64u64..1500;
    // (is_dir, parent choice, size)
    let ops = prop::collection::vec(
        (
            prop::bool::weighted(0.15),
            any::<prop::sample::Index>(),
            prop_oneof![
                3 => 0u64..60_000,                 // small: direct blocks and first IND
                3 => 60_000u64..8_000_000,         // needs DIND
                1 => 8_000_000u64..400_000_000,    // big
            ],
        ),
        1..80,
    );
    (fs_mib, ops).prop_map(|(mib, ops)| {
        let mut dirs = vec![String::new()];
        let mut out = Vec::new();
        for (i, (is_dir, parent, bytes)) in ops.into_iter().enumerate() {
            let parent = parent.get(&dirs).clone();
            let path = if parent.is_empty() {
                format!("r{i}")
            } else {
                format!("{parent}/r{i}")
            };
            if is_dir {
                dirs.push(path.clone());
                out.push(NsOp::Mkdir { path });
            } else {
                out.push(NsOp::Create { path, bytes });
            }
        }
        Population {
            name: "random".into(),
            fs_bytes: mib << 20,
            ops: out,
        }
    })
}
