//! The one large file random reads are made of, as random-read and cache-policies both
//! describe it (size at scale 1, file-system slack, number and size of the reads): its
//! parameters checked in one place, so the two experiments refuse the same bad values with
//! the same words.

use anyhow::{bail, Result};

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
