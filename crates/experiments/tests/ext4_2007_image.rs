//! The `ext4-2007` engine's images: its mkfs profile makes the file system the `ext4-2007`
//! kernel profile makes, and its plans of large-delete's writes go into that file system
//! through libext2fs as sparse images that e2fsck finds clean and that read back as planned.
//!
//! The mkfs profile against the kernel profile: the
//! real mke2fs run both ways on image files of large-delete's sizes, and their `dumpe2fs`
//! output (superblock, features, reserved GDT blocks, every group's bitmaps, inode table and
//! free ranges) and journal extents compared line for line, less what differs between any two
//! runs of mke2fs (UUIDs, hash seed, times). The ext4-2007 policy plans on the profile's
//! geometry and large-delete writes its plan into the profile's image, which the kernel then
//! mounts in place of one it made itself (issue 28). No root needed: mke2fs on files.

use layoutlab_experiments::{kernel_profile, large_delete, steps};
use layoutlab_layout::MkfsProfile;
use std::path::Path;
use std::process::Command;

/// `dumpe2fs` of `image` less the lines that differ between two runs of mke2fs with the same
/// options, and the journal inode's extents (`debugfs stat <8>`).
fn described(image: &Path) -> String {
    let out = Command::new("dumpe2fs")
        .arg(image)
        .output()
        .expect("dumpe2fs (e2fsprogs)");
    assert!(out.status.success(), "dumpe2fs {}", image.display());
    let text = String::from_utf8_lossy(&out.stdout);
    let volatile = [
        "Filesystem UUID",
        "Filesystem created",
        "Last mount time",
        "Last write time",
        "Last checked",
        "Directory Hash Seed",
        "Lifetime writes",
    ];
    let mut kept: Vec<&str> = text
        .lines()
        .filter(|l| !volatile.iter().any(|v| l.starts_with(v)))
        .collect();
    let journal = Command::new("debugfs")
        .args(["-R", "stat <8>"])
        .arg(image)
        .output()
        .expect("debugfs (e2fsprogs)");
    let journal = String::from_utf8_lossy(&journal.stdout).to_string();
    let extents = journal
        .lines()
        .skip_while(|l| !l.starts_with("EXTENTS:"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(!extents.is_empty(), "no journal extents read");
    kept.push(&extents);
    kept.join("\n")
}

#[test]
fn the_ext4_2007_mkfs_profile_makes_the_kernel_profiles_file_system() {
    let exp = layoutlab_experiments::experiment::load("large-delete").unwrap();
    let spec: large_delete::LargeDeleteSpec = exp.params().unwrap();
    let kernel = kernel_profile::by_name("ext4-2007").unwrap();
    let profile = MkfsProfile::by_name("ext4-2007").unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The default scale, the CLI test's, and scale 1's file system (2.5 x 100 GB: 1908 groups,
    // a 1 GiB journal; sparse but for the journal).
    for scale in [spec.default_scale, 0.002, 1.0] {
        let (_, fs_bytes) = large_delete::sizes(&spec, scale);
        // One image at a time: scale 1's journal (1 GiB, zeroed by mke2fs) is real data.
        let image = dir.path().join("fs.img");
        std::fs::File::create(&image)
            .unwrap()
            .set_len(fs_bytes)
            .unwrap();
        let args: Vec<&str> = kernel.mkfs_args.iter().map(String::as_str).collect();
        layoutlab_rig::mkfs(kernel.fs_kind().unwrap(), &image, &args).unwrap();
        let a = described(&image);
        std::fs::remove_file(&image).unwrap();
        layoutlab_image::mkfs_profile(&image, fs_bytes, &profile).unwrap();
        let b = described(&image);
        std::fs::remove_file(&image).unwrap();
        if a != b {
            let diff: Vec<String> = a
                .lines()
                .zip(b.lines())
                .filter(|(x, y)| x != y)
                .take(20)
                .map(|(x, y)| format!("kernel profile: {x}\nmkfs profile:   {y}"))
                .collect();
            panic!(
                "scale {scale} ({fs_bytes} bytes): the two file systems differ ({} and {} lines):\n{}",
                a.lines().count(),
                b.lines().count(),
                diff.join("\n")
            );
        }
        println!(
            "scale {scale}: {} lines of dumpe2fs the same",
            a.lines().count()
        );
    }
}

/// Both variants at the default scale (and the CLI test's): planned by ext4-2007, written into
/// a sparse image of its mkfs profile as large-delete writes it (`steps::image::write_plan`),
/// then `e2fsck -fn` clean, every planned inode read back as planned, and the image holding
/// no file data (sparse: a few MB of metadata for files of GBs).
#[test]
fn ext4_2007_plans_make_clean_sparse_images() {
    use std::os::unix::fs::MetadataExt;
    let exp = layoutlab_experiments::experiment::load("large-delete").unwrap();
    let spec: large_delete::LargeDeleteSpec = exp.params().unwrap();
    let dir = tempfile::tempdir().unwrap();
    for scale in [spec.default_scale, 0.002] {
        let (file_bytes, fs_bytes) = large_delete::sizes(&spec, scale);
        for variant in ["contiguous", "fragmented"] {
            let pop = large_delete::write_population(variant, fs_bytes, file_bytes, &spec);
            let made = steps::plan::policy_image("ext4-2007", &pop, exp.seed).unwrap();
            let image = dir.path().join("engine.img");
            steps::image::write_plan(&image, fs_bytes, &made.profile, &made.plan).unwrap();
            let v = layoutlab_image::fsck_check(&image).unwrap();
            assert!(v.clean, "{variant} at {scale}: e2fsck:\n{}", v.output);
            let back = layoutlab_image::inspect(&image).unwrap();
            for p in &layoutlab_image::normalize_plan(&made.plan).inodes {
                let got = back
                    .inode(p.ino)
                    .unwrap_or_else(|| panic!("inode {}", p.ino));
                assert_eq!(&got.planned, p, "{variant} at {scale}: inode {}", p.ino);
            }
            let held = std::fs::metadata(&image).unwrap().blocks() * 512;
            let big = made.plan.inodes.iter().find(|i| i.name == "big").unwrap();
            println!(
                "{variant} at scale {scale}: {} extents, {} tree blocks; image holds {} MiB of {} MiB",
                big.data.len(),
                big.mapping.len(),
                held >> 20,
                fs_bytes >> 20
            );
            // file data written would be at least the file: the image holds metadata only
            assert!(
                held < file_bytes / 2,
                "{variant}: the image holds {held} bytes"
            );
            std::fs::remove_file(&image).unwrap();
        }
    }
}
