//! Benchmarks of the two block-map writers (ignored by default; run with
//! `cargo test -p layoutlab-image --release --test speed -- --ignored --nocapture`).
//! Numbers are recorded in docs/image.md.

mod common;

use std::time::Instant;

use common::*;
use layoutlab_image::{fsck_check, materialize_with, MapWriter};

fn one_writer(writer: MapWriter, mib: u64, file_gib: u64) {
    let dir = tempfile::tempdir().unwrap();
    let image = fresh(dir.path(), "speed.img", mib, EXT3);
    let mut b = Builder::new(&image);
    b.dense(12, 2, "big", file_gib << 30, MapPlace::Inline);
    let plan = b.plan.clone();
    let blocks = plan.inodes[0].data_blocks();
    let t = Instant::now();
    let stats = materialize_with(&image, &plan, writer).unwrap();
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{writer:?}: {blocks} data blocks, {} mapping blocks: block maps {:.3} s, total {:.3} s \
         ({:.1} M blocks/s)",
        stats.mapping_blocks,
        stats.block_map_seconds,
        secs,
        blocks as f64 / stats.block_map_seconds / 1e6
    );
    let t = Instant::now();
    let v = fsck_check(&image).unwrap();
    println!(
        "e2fsck -fn: {:.2} s, clean {}",
        t.elapsed().as_secs_f64(),
        v.clean
    );
    assert!(v.clean, "{}", v.output);
}

#[test]
#[ignore]
fn speed_bmap_4gib() {
    one_writer(MapWriter::Bmap, 5 << 10, 4);
}

#[test]
#[ignore]
fn speed_iterate_4gib() {
    one_writer(MapWriter::Iterate, 5 << 10, 4);
}

/// The bench5 shape at full size (200x0.5 GB, 100x1 GB, 40x2.5 GB, 10x10 GB, GB = 10^9 bytes)
/// on a 400 GiB image, indirect blocks inline: the cost `reproduce` pays per image.
#[test]
#[ignore]
fn speed_iterate_bench5_full() {
    let dir = tempfile::tempdir_in(std::env::var("SPEED_DIR").unwrap_or("/tmp".into())).unwrap();
    let t = Instant::now();
    let image = fresh(dir.path(), "b5.img", 400 << 10, EXT3);
    println!("mkfs: {:.2} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let mut b = Builder::new(&image);
    // 350 names overflow the root's one block
    b.dir(2, 2, "", 2);
    let mut ino = 12;
    for (count, bytes) in [
        (200, 500_000_000u64),
        (100, 1_000_000_000),
        (40, 2_500_000_000),
        (10, 10_000_000_000),
    ] {
        for _ in 0..count {
            b.dense(ino, 2, &format!("f{ino}"), bytes, MapPlace::Inline);
            ino += 1;
        }
    }
    let plan = b.plan.clone();
    drop(b);
    let data: u64 = plan.inodes.iter().map(|i| i.data_blocks()).sum();
    println!(
        "test plan built: {:.2} s, {data} data blocks, {} mapping blocks",
        t.elapsed().as_secs_f64(),
        plan.mapping_blocks()
    );
    let t = Instant::now();
    let stats = materialize_with(&image, &plan, MapWriter::Iterate).unwrap();
    println!(
        "materialize: total {:.2} s (check {:.2} s, block maps {:.2} s), allocated {} MiB",
        t.elapsed().as_secs_f64(),
        stats.check_seconds,
        stats.block_map_seconds,
        layoutlab_image::allocated_bytes(&image).unwrap() >> 20
    );
    let t = Instant::now();
    let back = layoutlab_image::inspect(&image).unwrap();
    println!("inspect: {:.2} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let v = fsck_check(&image).unwrap();
    println!(
        "e2fsck -fn: {:.2} s, clean {}",
        t.elapsed().as_secs_f64(),
        v.clean
    );
    assert!(v.clean, "{}", v.output);
    let want = layoutlab_image::normalize_plan(&plan);
    for p in &want.inodes {
        assert_eq!(&back.inode(p.ino).unwrap().planned, p);
    }
}
