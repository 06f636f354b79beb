//! One module per command group.

pub mod bench;
pub mod clean;
pub mod device;
pub mod image;
pub mod plan;
pub mod reproduce;
pub mod trace;
pub mod workload;

use anyhow::{Context, Result};
use std::path::Path;

/// Write `value` as pretty JSON to `path` ("-" = stdout).
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    if path == Path::new("-") {
        emit(&(text + "\n"), false);
        return Ok(());
    }
    std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))
}

/// Where human-readable output goes: stdout, unless `--json -` claims stdout for the JSON,
/// in which case tables and notes go to stderr so the JSON stays parseable.
pub struct Human {
    to_stderr: bool,
}

impl Human {
    /// For a command whose `--json` argument is `json`.
    pub fn new(json: Option<&Path>) -> Human {
        Human {
            to_stderr: json == Some(Path::new("-")),
        }
    }

    /// Print `text` as is.
    pub fn say(&self, text: &str) {
        emit(text, self.to_stderr);
    }
}

/// Write `text` to stdout (or stderr). A reader that went away (`layoutlab ... | head`) ends
/// the program quietly, after the rig's cleanup, instead of a panic.
pub fn emit(text: &str, to_stderr: bool) {
    use std::io::Write;
    let result = if to_stderr {
        std::io::stderr().write_all(text.as_bytes())
    } else {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes()).and_then(|()| out.flush())
    };
    if let Err(e) = result {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            layoutlab_rig::cleanup::exit(0);
        }
    }
}

/// Parse a size such as `4k`, `16g`, `512`, `1.5M` (binary units), for clap: the device
/// crate's fio-style parser with its error as text.
pub fn parse_size(s: &str) -> Result<u64, String> {
    layoutlab_device::job::parse_size_bytes(s).map_err(|e| e.to_string())
}

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
