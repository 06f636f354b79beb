//! `bench5`: the population of "Benchmark 5" of the ext3 metaclustering post (Abhishek
//! Rai, LKML, November 2007): 200×0.5 GB, 100×1 GB, 40×2.5 GB and 10×10 GB files created in
//! that order in the root directory of a fresh 400 GB file system.
//!
//! How the units are read (see docs/workloads.md for the reasoning):
//! - the disk is a "400 GB" drive as drive makers count it: the IDEMA LBA1-02 capacity
//!   formula gives 97,696,368 + 1,953,504 × (400 − 50) = 781,422,768 sectors of 512 bytes
//!   = 400,088,457,216 bytes, and the file system spans the whole drive;
//! - file sizes are decimal too (1 GB = 10^9 bytes), so the files total 400×10^9 bytes.
//!
//! That is more than ext3 can hold on that drive (inode tables, journal and indirect blocks
//! take ~1.6%), so the last 10 GB files run out of space: the file system ends full, which
//! is what "near-full" describes. Whoever lays the population out decides what a write
//! that meets ENOSPC leaves behind (the ext3 policies keep what was written, as `dd` does).

use crate::{NsOp, Population};

/// Sectors of a 400 GB drive (IDEMA LBA1-02: 97,696,368 + 1,953,504 × (GB − 50)).
pub const DRIVE_SECTORS: u64 = 97_696_368 + 1_953_504 * (400 - 50);

/// Bytes of one decimal gigabyte.
pub const GB: u64 = 1_000_000_000;

/// (count, bytes) of each file class, in creation order.
pub const CLASSES: [(u32, u64); 4] = [(200, GB / 2), (100, GB), (40, GB * 5 / 2), (10, GB * 10)];

/// The full-scale bench5 population. File names are `f000` ... `f349` in creation order,
/// so every name has the same length (directory entry size does not vary with the index).
pub fn bench5() -> Population {
    classes_times("bench5", DRIVE_SECTORS * 512, 1, 3)
}

/// [`CLASSES`] `times` over, each class in turn, on a `fs_bytes` file system: files named
/// `f` and their creation index in `name_digits` digits, so every name has the same length.
fn classes_times(name: &str, fs_bytes: u64, times: u32, name_digits: usize) -> Population {
    let mut ops = Vec::new();
    let mut index = 0u32;
    for (count, bytes) in CLASSES {
        for _ in 0..count * times {
            ops.push(NsOp::Create {
                path: format!("f{index:0name_digits$}"),
                bytes,
            });
            index += 1;
        }
    }
    Population {
        name: name.to_string(),
        fs_bytes,
        ops,
    }
}

/// Sectors of a 10 TB drive by the same IDEMA formula (10 TB = 10,000 GB).
pub const DRIVE_10TB_SECTORS: u64 = 97_696_368 + 1_953_504 * (10_000 - 50);

/// `bench5-10tb`: bench5's size mix twenty times over (4000×0.5 GB, 2000×1 GB, 800×2.5 GB,
/// 200×10 GB, 8 TB) on a 10 TB file system: 80% full, the file system Coly Li asked about at
/// CLSF 2010 (issue 29). Names `f0000` ... `f6999`, each class in turn as in bench5.
pub fn bench5_10tb() -> Population {
    classes_times("bench5-10tb", DRIVE_10TB_SECTORS * 512, 20, 4)
}

#[cfg(test)]
mod tests {
    #[test]
    fn bench5_10tb_is_80_percent_of_10_tb() {
        let pop = bench5_10tb();
        assert_eq!(pop.ops.len(), 7000);
        assert_eq!(pop.file_bytes(), 8000 * GB);
        let full = pop.file_bytes() as f64 / pop.fs_bytes as f64;
        assert!((0.799..0.800).contains(&full), "{full}");
        // the names the header promises: one width, in creation order
        match (&pop.ops[0], &pop.ops[6999]) {
            (NsOp::Create { path: first, .. }, NsOp::Create { path: last, bytes }) => {
                assert_eq!((first.as_str(), last.as_str()), ("f0000", "f6999"));
                assert_eq!(*bytes, 10 * GB);
            }
            _ => panic!("bench5-10tb must only create files"),
        }
    }

    use super::*;

    #[test]
    fn shape_matches_the_post() {
        let pop = bench5();
        assert_eq!(pop.ops.len(), 350);
        assert_eq!(pop.file_bytes(), 400 * GB);
        assert_eq!(pop.fs_bytes, 400_088_457_216);
        match (&pop.ops[0], &pop.ops[349]) {
            (NsOp::Create { bytes: a, .. }, NsOp::Create { path, bytes: b }) => {
                assert_eq!(*a, GB / 2);
                assert_eq!(*b, 10 * GB);
                assert_eq!(path, "f349");
            }
            _ => panic!("bench5 must only create files"),
        }
    }

    #[test]
    fn deterministic() {
        assert_eq!(bench5(), bench5());
    }
}
