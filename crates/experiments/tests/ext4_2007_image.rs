//! The `ext4-2007` mkfs profile makes the file system the `ext4-2007` kernel profile makes: the
//! real mke2fs run both ways on image files of large-delete's sizes, and their `dumpe2fs`
//! output (superblock, features, reserved GDT blocks, every group's bitmaps, inode table and
//! free ranges) and journal extents compared line for line, less what differs between any two
//! runs of mke2fs (UUIDs, hash seed, times). The ext4-2007 policy plans on the profile's
//! geometry and large-delete writes its plan into the profile's image, which the kernel then
//! mounts in place of one it made itself (issue 28). No root needed: mke2fs on files.

use layoutlab_experiments::{kernel_profile, large_delete};
use layoutlab_layout::MkfsProfile;
use std::path::Path;
use std::process::Command;

/// `dumpe2fs` of `image` less the lines that differ between two runs of mke2fs with the same
/// options, and the journal inode's extents (`debugfs stat <8>`).
fn described(image: &Path) -> String {
    let out = Command::new("dumpe2fs").arg(image).output().expect("dumpe2fs (e2fsprogs)");
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
        std::fs::File::create(&image).unwrap().set_len(fs_bytes).unwrap();
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
        println!("scale {scale}: {} lines of dumpe2fs the same", a.lines().count());
    }
}
