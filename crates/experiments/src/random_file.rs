//! The one large file random reads are made of, as random-read and cache-policies both
//! describe it (size at scale 1, file-system slack, number and size of the reads): its
//! parameters checked in one place, so the two experiments refuse the same bad values with
//! the same words; its sizes at a scale, the seeded offsets of its reads, who lays it out
//! (random-read and large-delete), and the check that the kernel wrote every block of it.
//! Owned by none of those operations, so that none of them calls another.

use anyhow::{bail, Context, Result};
use std::path::Path;

const MIB: u64 = 1 << 20;

/// Valid values of an experiment's `layout`: who lays out a file today's kernel would write
/// ("engine": a policy proven to place it as the kernel does; "kernel": the kernel, with `dd`).
pub const LAYOUTS: [&str; 2] = ["engine", "kernel"];

/// Refuses a `layout` not in [`LAYOUTS`], listing them.
pub fn check_layout(layout: &str) -> Result<()> {
    if !LAYOUTS.contains(&layout) {
        bail!("unknown layout '{layout}'; valid: {}", LAYOUTS.join(", "));
    }
    Ok(())
}

/// Sizes of the file of `file_gb` GB at scale 1 in a file system `fs_per_file` times it, at
/// `scale`: (file bytes, file-system bytes), whole MiB.
pub fn sizes(file_gb: f64, fs_per_file: f64, scale: f64) -> (u64, u64) {
    let file = ((file_gb * 1e9 * scale) as u64 / MIB).max(16) * MIB;
    // Plus 256 MiB: the journal (128 MiB in 2007's mke2fs) and slack, which at small scales
    // are more than the fraction covers.
    let fs = ((file as f64 * fs_per_file) as u64 / MIB + 256) * MIB;
    (file, fs)
}

/// SplitMix64 (Steele, Lea & Flood 2014): one seeded stream of offsets, the same for every
/// target and mode.
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A stream from `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// `n` offsets, multiples of `read_bytes`, uniformly in `[0, file_bytes - read_bytes]`.
pub fn offsets(seed: u64, n: u64, file_bytes: u64, read_bytes: u64) -> Vec<u64> {
    let slots = file_bytes / read_bytes;
    let mut r = SplitMix64::new(seed);
    // Multiply-shift to a slot (Lemire): unbiased enough for 2^64 / slots ≫ 1.
    (0..n)
        .map(|_| ((u128::from(r.next_u64()) * u128::from(slots)) >> 64) as u64 * read_bytes)
        .collect()
}

/// Every block of `file` is allocated and written (FIEMAP via `filefrag -v`: extents cover
/// the whole file, none is `unwritten`), so every read of it reaches the device.
pub fn check_fully_written(file: &Path, bytes: u64) -> Result<()> {
    let out = std::process::Command::new("filefrag")
        .arg("-v")
        .arg(file)
        .output()
        .context("running filefrag (Debian package e2fsprogs)")?;
    if !out.status.success() {
        bail!("filefrag -v {} failed", file.display());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let size = std::fs::metadata(file)
        .with_context(|| format!("stat {}", file.display()))?
        .len();
    if size != bytes {
        bail!(
            "{} is {size} bytes, not the {bytes} asked (the layout did not fit?)",
            file.display()
        );
    }
    let (covered, block) = fiemap_coverage(&text)?;
    if covered * block < bytes {
        bail!(
            "{}: extents cover {} of {bytes} bytes: a hole would be answered from memory",
            file.display(),
            covered * block
        );
    }
    Ok(())
}

/// (blocks covered by written extents, block size) of `filefrag -v` output; an `unwritten`
/// extent is an error (the kernel answers its reads with zeros without reading).
pub fn fiemap_coverage(text: &str) -> Result<(u64, u64)> {
    let mut block = 0u64;
    let mut covered = 0u64;
    for line in text.lines() {
        if let Some(i) = line.find("blocks of ") {
            block = line[i + "blocks of ".len()..]
                .split_whitespace()
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
        }
        let fields: Vec<&str> = line.split(':').map(str::trim).collect();
        if fields.len() < 4 || fields[0].parse::<u64>().is_err() {
            continue;
        }
        if line.contains("unwritten") {
            bail!("the file has an unwritten (preallocated) extent: {line}");
        }
        covered += fields[3].parse::<u64>().context("filefrag length")?;
    }
    if block == 0 {
        bail!("filefrag printed no block size");
    }
    Ok((covered, block))
}

/// Checks the file and reads of an experiment's spec (its `default_scale` is checked at load,
/// as every experiment's is: [`crate::experiment::check_scale`]): a file of `file_gb` > 0 in a file system `fs_per_file` ≥ 1.01 times it, at least one read, and
/// `read_bytes` a multiple of 512 up to `max_read_bytes` (`max_read_name` says it in the
/// message: "1 MiB", "4096 (one page)").
pub fn check(
    file_gb: f64,
    fs_per_file: f64,
    reads: u64,
    read_bytes: u64,
    max_read_bytes: u64,
    max_read_name: &str,
) -> Result<()> {
    if !(file_gb > 0.0 && fs_per_file >= 1.01) {
        bail!("file_gb must be > 0 and fs_per_file at least 1.01");
    }
    if reads == 0
        || read_bytes == 0
        || !read_bytes.is_multiple_of(512)
        || read_bytes > max_read_bytes
    {
        bail!("reads must be ≥ 1 and read_bytes a multiple of 512 up to {max_read_name}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_seeded_aligned_and_in_range() {
        let a = offsets(7, 1000, 1 << 30, 512);
        assert_eq!(a, offsets(7, 1000, 1 << 30, 512));
        assert_ne!(a, offsets(8, 1000, 1 << 30, 512));
        assert!(a.iter().all(|o| o % 512 == 0 && *o + 512 <= 1 << 30));
        // Spread over the whole file: every eighth of it gets some.
        for k in 0..8u64 {
            let lo = k << 27;
            assert!(a.iter().any(|o| (lo..lo + (1 << 27)).contains(o)), "{k}");
        }
    }

    #[test]
    fn fiemap_coverage_counts_written_extents_and_refuses_unwritten() {
        let ok = "Filesystem type is: ef53
File size of m/big is 20971520 (5120 blocks of 4096 bytes)
 ext:     logical_offset:        physical_offset: length:   expected: flags:
   0:        0..    4095:        297..      4392:   4096:
   1:     4096..    5119:      10000..     11023:   1024:       4393: last,eof
";
        assert_eq!(fiemap_coverage(ok).unwrap(), (5120, 4096));
        let bad = ok.replace("last,eof", "last,unwritten,eof");
        assert!(fiemap_coverage(&bad)
            .unwrap_err()
            .to_string()
            .contains("unwritten"));
    }

    #[test]
    fn refuses_each_bad_value_and_names_it() {
        let ok = |g, f, n, b| check(g, f, n, b, 4096, "4096 (one page)");
        assert!(ok(1900.0, 1.03, 100_000, 512).is_ok());
        let e = |r: Result<()>| r.unwrap_err().to_string();
        assert!(e(ok(0.0, 1.03, 1, 512)).contains("file_gb"));
        assert!(e(ok(10.0, 1.0, 1, 512)).contains("fs_per_file"));
        assert!(e(ok(10.0, 1.03, 0, 512)).contains("reads must be"));
        assert!(e(ok(10.0, 1.03, 1, 700)).contains("multiple of 512"));
        assert!(e(ok(10.0, 1.03, 1, 8192)).contains("up to 4096 (one page)"));
    }
}
