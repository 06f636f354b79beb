//! Files written in appends by two writers taking turns (`NsOp::Append`), planned by the ext3
//! policies: plan -> image through libext2fs -> e2fsck -fn clean -> inspect == plan. Each file
//! is still one inode whose runs interleave with the other's, with its indirect blocks.

use layoutlab_image::{fsck_check, inspect, materialize, mkfs_profile, normalize_plan};
use layoutlab_layout::{policy_by_name, Geometry, InodeKind, MkfsProfile, PolicyParams};
use layoutlab_workload::{NsOp, Population};

/// Two files created in the root (one empty, one with a partial block), then 12 turns each
/// of a little over 2 MiB — one of them through a hard link in a subdirectory — so both
/// reach double-indirect blocks and meet on disk (they start at their creators' pid
/// colours, some MiB apart).
fn two_writers() -> Population {
    let mut ops = vec![
        NsOp::Mkdir { path: "d".into() },
        NsOp::Create {
            path: "big".into(),
            bytes: 0,
        },
        NsOp::Create {
            path: "other".into(),
            bytes: 5000,
        },
        NsOp::Link {
            path: "d/other-link".into(),
            target: "other".into(),
        },
    ];
    for turn in 0..12u64 {
        ops.push(NsOp::Append {
            path: "big".into(),
            bytes: (2 << 20) + 123 * turn,
        });
        ops.push(NsOp::Append {
            path: if turn % 2 == 0 {
                "d/other-link"
            } else {
                "other"
            }
            .into(),
            bytes: (2 << 20) + 7,
        });
    }
    Population {
        name: "two-writers".into(),
        fs_bytes: 256 << 20,
        ops,
    }
}

#[test]
fn appended_files_round_trip_through_libext2fs_and_fsck() {
    let pop = two_writers();
    let profile = MkfsProfile::by_name("ext3-2007").unwrap();
    let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for policy in ["ext3-2007", "ext3-metacluster"] {
        let plan = policy_by_name(policy, &PolicyParams::new())
            .unwrap()
            .plan(&geo, &pop, 2007)
            .unwrap();
        plan.check(&geo).unwrap();
        let files: Vec<_> = plan
            .inodes
            .iter()
            .filter(|i| i.kind == InodeKind::File)
            .collect();
        assert_eq!(files.len(), 2, "{policy}");
        let sizes: Vec<u64> = pop.file_sizes().iter().map(|f| f.1).collect();
        assert_eq!(
            files.iter().map(|f| f.size_bytes).collect::<Vec<_>>(),
            sizes,
            "{policy}"
        );
        for f in &files {
            // beyond the 12 direct blocks and the first IND's 1024: a DIND and its INDs
            assert!(f.mapping.len() >= 4, "{policy}: {:?}", f.mapping);
            assert!(f.fragments() >= 4, "{policy}: {} fragments", f.fragments());
        }
        // the two files interleave: their last runs lie in the same stretch of disk
        let last_span = |f: &layoutlab_layout::PlannedInode| {
            let r = f.data.last().unwrap();
            (r.physical, r.physical + r.len)
        };
        let (a, b) = (last_span(files[0]), last_span(files[1]));
        assert!(
            a.0.max(b.0) - a.1.min(b.1) < 4096,
            "{policy}: {a:?} and {b:?} far apart"
        );
        let image = dir.path().join(format!("{policy}.img"));
        mkfs_profile(&image, pop.fs_bytes, &profile).unwrap();
        let stats = materialize(&image, &plan).unwrap_or_else(|e| panic!("{policy}: {e}"));
        assert_eq!(stats.mapping_blocks, plan.mapping_blocks(), "{policy}");
        let verdict = fsck_check(&image).unwrap();
        assert!(verdict.clean, "{policy}: e2fsck -fn:\n{}", verdict.output);
        let back = inspect(&image).unwrap();
        for p in &normalize_plan(&plan).inodes {
            let mut got = back
                .inode(p.ino)
                .unwrap_or_else(|| panic!("{policy}: inode {}", p.ino))
                .planned
                .clone();
            if plan.links.iter().any(|l| l.ino == p.ino) {
                // which of its names the image walk meets first is the walk's choice
                (got.parent, got.name) = (p.parent, p.name.clone());
            }
            assert_eq!(&got, p, "{policy}: inode {}", p.ino);
        }
    }
}
