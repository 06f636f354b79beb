//! `ext4-meta-ssd` end to end: plan -> image (mke2fs with the ext4-meta-ssd profile, then
//! libext2fs) -> the real `e2fsck -fn` clean -> `inspect` reads back the plan -> the kernel's
//! ext4 mounts it and walks the tree. The split the policy promises is read from the image
//! itself: every group's inode table, every directory, extent-tree and slow-symlink block in
//! the region, every file data block past it — and, with a region too small for the
//! directories, the overflow past it, counted as the policy reports it. The kernel mount
//! needs root (loop device, mount): without it that step fails loudly, not silently.

use layoutlab_image::{fsck_check, inspect, materialize, mkfs_profile, normalize_plan};
use layoutlab_layout::policy::ext4_meta_ssd::{metadata_blocks, Ext4MetaSsd};
use layoutlab_layout::{policy_by_name, Geometry, InodeKind, MkfsProfile, Plan, PolicyParams};
use layoutlab_workload::Population;
use std::path::Path;

fn params(region: Option<&str>) -> PolicyParams {
    let mut p = PolicyParams::new();
    if let Some(r) = region {
        p.insert("region".into(), r.into());
    }
    p
}

/// Plans `pop` with `ext4-meta-ssd` (`region` if given), writes the image under `dir`, checks
/// it clean and read back as planned; returns the geometry, the plan and the image path.
fn round_trip(
    dir: &Path,
    pop: &Population,
    region: Option<&str>,
) -> (Geometry, Plan, std::path::PathBuf) {
    round_trip_of("ext4-meta-ssd", "ext4-meta-ssd", dir, pop, region)
}

/// [`round_trip`] of `policy` on the mkfs profile `profile`.
fn round_trip_of(
    policy: &str,
    profile: &str,
    dir: &Path,
    pop: &Population,
    region: Option<&str>,
) -> (Geometry, Plan, std::path::PathBuf) {
    let profile = MkfsProfile::by_name(profile).unwrap();
    let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
    let plan = policy_by_name(policy, &params(region))
        .unwrap()
        .plan(&geo, pop, 29)
        .unwrap();
    plan.check(&geo).unwrap();
    let image = dir.join("meta-ssd.img");
    mkfs_profile(&image, pop.fs_bytes, &profile).unwrap();
    // the real mke2fs packed the tables where the geometry says
    let fresh = inspect(&image).unwrap();
    assert_eq!(fresh.groups.len() as u64, geo.group_count());
    for (got, want) in fresh.groups.iter().zip(&geo.groups) {
        assert_eq!(
            got.inode_table_block, want.inode_table,
            "group {}",
            got.group
        );
    }
    materialize(&image, &plan).unwrap();
    let v = fsck_check(&image).unwrap();
    assert!(v.clean, "e2fsck:\n{}", v.output);
    let back = inspect(&image).unwrap();
    for p in &normalize_plan(&plan).inodes {
        let got = back.inode(p.ino).unwrap();
        assert_eq!(&got.planned, p, "inode {}", p.ino);
    }
    (geo, plan, image)
}

/// Every metadata block of `plan` read back from the image, and every file data block.
fn split_of(image: &Path) -> (Vec<u64>, Vec<u64>) {
    let back = inspect(image).unwrap();
    let plan = Plan {
        policy: "read back".into(),
        inodes: back.inodes.iter().map(|i| i.planned.clone()).collect(),
        links: Vec::new(),
    };
    let meta: Vec<u64> = metadata_blocks(&plan).collect();
    let data: Vec<u64> = plan
        .inodes
        .iter()
        .filter(|i| i.kind == InodeKind::File)
        .flat_map(|i| i.data.iter().flat_map(|r| r.physical..r.physical + r.len))
        .collect();
    (meta, data)
}

/// Mounts the image read-only under the kernel's `fstype` driver and counts what a walk finds:
/// (directories, regular files, bytes of regular files).
fn kernel_walk(image: &Path, fstype: &str) -> (u64, u64, u64) {
    assert!(
        layoutlab_rig::is_root(),
        "this test mounts the image under the kernel: run it as root"
    );
    let dev = layoutlab_rig::LoopDevice::attach(image, true).unwrap();
    let mnt = layoutlab_rig::Mount::new(dev.path(), None, fstype, true, "").unwrap();
    let (mut dirs, mut files, mut bytes) = (0, 0, 0);
    let mut stack = vec![mnt.target().to_path_buf()];
    while let Some(d) = stack.pop() {
        dirs += 1;
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else if m.is_file() {
                files += 1;
                bytes += m.len();
            }
        }
    }
    (dirs, files, bytes)
}

/// bench5-10tb (bench5's mix, 80% full) shrunk to `scale`.
fn bench5_10tb(scale: f64) -> Population {
    layoutlab_workload::population_by_name("bench5-10tb")
        .unwrap()
        .scale(scale)
        .unwrap()
}

/// bench5-10tb at 1/2500 (4 GB, 7000 files): tables, journal, directories and extent trees in the region,
/// file data past it, clean under e2fsck, and the kernel sees every file at its size.
#[test]
fn bench5_metadata_in_the_region_data_past_it() {
    let dir = tempfile::tempdir().unwrap();
    let pop = bench5_10tb(0.0004);
    let (geo, plan, image) = round_trip(dir.path(), &pop, None);
    let policy = Ext4MetaSsd::default();
    let end = policy.region_end_block(&geo);
    let fp = policy.footprint(&plan, &geo);
    assert_eq!((fp.overflow_blocks, fp.data_in_region_blocks), (0, 0));
    assert!(fp.in_region_blocks > 0, "no extent-tree or directory block");
    let (meta, data) = split_of(&image);
    assert!(meta.iter().all(|&b| b < end), "metadata past the region");
    assert!(
        !data.is_empty() && data.iter().all(|&b| b >= end),
        "data in the region"
    );
    for g in &geo.groups {
        assert!(g.inode_table + geo.inode_table_blocks <= end);
    }
    let files = plan
        .inodes
        .iter()
        .filter(|i| i.kind == InodeKind::File)
        .count() as u64;
    let file_bytes: u64 = plan
        .inodes
        .iter()
        .filter(|i| i.kind == InodeKind::File)
        .map(|i| i.size_bytes)
        .sum();
    let (_, kfiles, kbytes) = kernel_walk(&image, "ext4");
    assert_eq!((kfiles, kbytes), (files, file_bytes));
}

/// A tree of many directories in a region just larger than the tables and journal: the
/// directory blocks that do not fit overflow past the region, the policy counts exactly the
/// ones the image holds there, and the image is still clean.
#[test]
fn a_full_region_overflows_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let mut pop = bench5_10tb(0.0004);
    // 4000 directories of 20 empty files each, after bench5-10tb's files
    for d in 0..4000 {
        pop.ops.push(layoutlab_workload::NsOp::Mkdir {
            path: format!("d{d:04}"),
        });
        for f in 0..20 {
            pop.ops.push(layoutlab_workload::NsOp::Create {
                path: format!("d{d:04}/a-rather-long-file-name-to-fill-directory-blocks-{f:03}"),
                bytes: 0,
            });
        }
    }
    let profile = MkfsProfile::by_name("ext4-meta-ssd").unwrap();
    let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
    // the static metadata's end plus 1000 blocks, as a fraction
    let static_end = layoutlab_layout::policy::ext4_meta_ssd::static_metadata_end(&geo);
    let region = format!("{}/{}", static_end + 1000, geo.blocks_count);
    let (geo, plan, image) = round_trip(dir.path(), &pop, Some(&region));
    let policy = Ext4MetaSsd::from_params(&params(Some(&region))).unwrap();
    let end = policy.region_end_block(&geo);
    let fp = policy.footprint(&plan, &geo);
    let (meta, data) = split_of(&image);
    let past = meta.iter().filter(|&&b| b >= end).count() as u64;
    assert!(fp.overflow_blocks > 0, "{fp:?}");
    assert_eq!(past, fp.overflow_blocks);
    // the region is full: the image has no free block left below its end
    let used_in_region: u64 = inspect(&image)
        .unwrap()
        .used_runs
        .iter()
        .map(|&(s, n)| (s + n).min(end).saturating_sub(s.min(end)))
        .sum();
    assert_eq!(used_in_region, end - geo.first_data_block, "{fp:?}");
    assert!(data.iter().all(|&b| b >= end), "data in the region");
}

/// ext3-meta-ssd on the ext3-2007 profile: indirect and directory blocks in the region, file
/// data past it, clean under e2fsck and the kernel's ext3; the inode tables of every group
/// past the region stay there, so a check still seeks to them.
#[test]
fn ext3_indirect_and_directory_blocks_in_the_region_tables_in_their_groups() {
    let dir = tempfile::tempdir().unwrap();
    let pop = bench5_10tb(0.0004);
    let (geo, plan, image) = round_trip_of("ext3-meta-ssd", "ext3-2007", dir.path(), &pop, None);
    let policy = layoutlab_layout::policy::ext3_meta_ssd::Ext3MetaSsd::default();
    let end = policy.region_end_block(&geo);
    let fp = policy.footprint(&plan, &geo);
    assert_eq!(
        (fp.overflow_blocks, fp.data_in_region_blocks),
        (0, 0),
        "{fp:?}"
    );
    // every file of 0.2-4 MB has an indirect block: all in the region
    assert!(plan.mapping_blocks() >= 7000, "{}", plan.mapping_blocks());
    let (meta, data) = split_of(&image);
    assert!(meta.iter().all(|&b| b < end), "metadata past the region");
    assert!(
        !data.is_empty() && data.iter().all(|&b| b >= end),
        "data in the region"
    );
    let tables_past = geo.groups.iter().filter(|g| g.inode_table >= end).count();
    assert!(
        tables_past as u64 > geo.group_count() * 9 / 10,
        "{tables_past}"
    );
    let files = plan
        .inodes
        .iter()
        .filter(|i| i.kind == InodeKind::File)
        .count() as u64;
    let (_, kfiles, _) = kernel_walk(&image, "ext3");
    assert_eq!(kfiles, files);
}
