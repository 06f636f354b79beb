//! One module per command group.

pub mod age_check;
pub mod age_kernel;
pub mod bench;
pub mod clean;
pub mod device;
pub mod fsck_predict;
pub mod image;
pub mod metrics;
pub mod overhead;
pub mod plan;
pub mod reproduce;
pub mod sweep;
pub mod trace;
pub mod workload;

pub use layoutlab_experiments::output::{emit, write_json, Human};
pub use layoutlab_experiments::support::parse_size;

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_are_binary_units() {
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("16g"), Ok(16 << 30));
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("1.5M"), Ok(1_572_864));
        assert_eq!(parse_size("256KiB"), Ok(256 << 10));
        assert!(parse_size("4q").is_err());
        assert!(parse_size("x").is_err());
        assert!(parse_size("-1k").is_err());
    }
}
