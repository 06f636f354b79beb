//! Format names, detection and dispatch: the one place that knows every reader and writer.

use std::fmt;
use std::path::Path;

use crate::error::TraceError;
pub use crate::read_options::{DevId, ReadOptions};
use crate::{blkparse, blktrace, csv, disksim, fio, tracefs, Trace};

/// A trace format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Text of `/sys/kernel/tracing/trace` with block events (read only).
    Tracefs,
    /// blktrace binary per-CPU files, `NAME.blktrace.CPU` (read only).
    Blktrace,
    /// blkparse default text output (read and write).
    Blkparse,
    /// DiskSim ascii input trace: `time_ms devno blkno bcount flags` (read and write).
    DisksimAscii,
    /// DiskSim validate trace with measured service times (read only).
    DisksimValidate,
    /// fio iolog version 2 (read only).
    FioV2,
    /// fio iolog version 3 (read and write).
    FioV3,
    /// CSV, one row per request (read and write; lossless).
    Csv,
}

/// Every format, in the order of [`Format::NAMES`].
pub const ALL_FORMATS: [Format; 8] = [
    Format::Tracefs,
    Format::Blktrace,
    Format::Blkparse,
    Format::DisksimAscii,
    Format::DisksimValidate,
    Format::FioV2,
    Format::FioV3,
    Format::Csv,
];

impl Format {
    /// The valid names, for error messages and `--help`.
    pub const NAMES: [&'static str; 8] = [
        "tracefs",
        "blktrace",
        "blkparse",
        "disksim",
        "disksim-validate",
        "fio-v2",
        "fio-v3",
        "csv",
    ];

    /// The name of this format (one of [`Format::NAMES`]).
    pub fn name(self) -> &'static str {
        let i = ALL_FORMATS.iter().position(|&f| f == self).unwrap_or(0);
        Format::NAMES[i]
    }

    /// The format called `name` (case-insensitive; `fio` means `fio-v3`, `disksim-ascii`
    /// means `disksim`), or an error listing the valid names.
    pub fn from_name(name: &str) -> Result<Format, TraceError> {
        let lower = name.trim().to_ascii_lowercase();
        let alias = match lower.as_str() {
            "fio" | "iolog" => "fio-v3",
            "disksim-ascii" | "ascii" => "disksim",
            "validate" => "disksim-validate",
            "ftrace" | "trace" => "tracefs",
            other => other,
        };
        Format::NAMES
            .iter()
            .position(|&n| n == alias)
            .map(|i| ALL_FORMATS[i])
            .ok_or_else(|| TraceError::UnknownFormat {
                name: name.to_string(),
                valid: Format::NAMES.join(", "),
            })
    }

    /// The format a file name suggests, if it suggests one: `.csv`, `.iolog`/`.fio` (fio v3),
    /// `.blktrace.N` or `.bin` (blktrace), `.blkparse`, `.tracefs`, `.disksim`, `.trace`
    /// (DiskSim validate, as in DiskSim's own validation set).
    pub fn from_extension(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        if blktrace::cpu_suffix(&name).is_some() {
            return Some(Format::Blktrace);
        }
        let ext = name.rsplit_once('.')?.1;
        match ext {
            "csv" => Some(Format::Csv),
            "iolog" | "fio" => Some(Format::FioV3),
            "bin" | "blktrace" => Some(Format::Blktrace),
            "blkparse" => Some(Format::Blkparse),
            "tracefs" | "ftrace" => Some(Format::Tracefs),
            "disksim" | "ascii" => Some(Format::DisksimAscii),
            "trace" => Some(Format::DisksimValidate),
            _ => None,
        }
    }

    /// Whether this crate can write the format.
    pub fn writable(self) -> bool {
        matches!(
            self,
            Format::Blkparse | Format::DisksimAscii | Format::FioV3 | Format::Csv
        )
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Guesses the format of `bytes` from its content (magic numbers, headers, the shape of the
/// first meaningful line). Returns None when nothing fits.
pub fn detect(bytes: &[u8]) -> Option<Format> {
    if blktrace::has_magic(bytes) {
        return Some(Format::Blktrace);
    }
    let head = &bytes[..bytes.len().min(64 * 1024)];
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        // A cut in the middle of a UTF-8 sequence at the 64 KiB mark is still text.
        Err(e) if e.valid_up_to() > 0 && e.error_len().is_none() => {
            std::str::from_utf8(&head[..e.valid_up_to()]).ok()?
        }
        Err(_) => return None,
    };
    if text.starts_with("# tracer:")
        || text.contains(": block_rq_")
        || text.contains(": block_bio_")
    {
        return Some(Format::Tracefs);
    }
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))?;
    if first.starts_with("fio version 2 iolog") {
        return Some(Format::FioV2);
    }
    if first.starts_with("fio version 3 iolog") {
        return Some(Format::FioV3);
    }
    if first.starts_with(csv::HEADER_START) {
        return Some(Format::Csv);
    }
    if tracefs::looks_like(first) {
        return Some(Format::Tracefs);
    }
    if blkparse::looks_like(first) {
        return Some(Format::Blkparse);
    }
    if disksim::looks_like_validate(first) {
        return Some(Format::DisksimValidate);
    }
    if disksim::looks_like_ascii(first) {
        return Some(Format::DisksimAscii);
    }
    None
}

fn read_file(path: &Path) -> Result<Vec<u8>, TraceError> {
    std::fs::read(path).map_err(|source| TraceError::Io {
        file: path.display().to_string(),
        source,
    })
}

fn as_text<'a>(bytes: &'a [u8], file: &str) -> Result<&'a str, TraceError> {
    std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        TraceError::at_line(
            file,
            line,
            format!(
                "not UTF-8 text (byte {}): is this the right format?",
                e.valid_up_to()
            ),
        )
    })
}

/// Reads a trace from `bytes` in `format`; `file` names the input in errors.
pub fn read_bytes(
    bytes: &[u8],
    file: &str,
    format: Format,
    opts: &ReadOptions,
) -> Result<Trace, TraceError> {
    match format {
        Format::Blktrace => blktrace::read(&[(file.to_string(), bytes.to_vec())], opts),
        Format::Tracefs => tracefs::read(as_text(bytes, file)?, file, opts),
        Format::Blkparse => blkparse::read(as_text(bytes, file)?, file, opts),
        Format::DisksimAscii => disksim::read_ascii(as_text(bytes, file)?, file, opts),
        Format::DisksimValidate => {
            let records = disksim::read_validate(as_text(bytes, file)?, file)?;
            Ok(disksim::validate_to_trace(&records))
        }
        Format::FioV2 | Format::FioV3 => fio::read(as_text(bytes, file)?, file),
        Format::Csv => csv::read(as_text(bytes, file)?, file),
    }
}

/// Reads the trace at `path`, detecting its format from its content (then its name).
/// A blktrace file `NAME.blktrace.N` brings in its sibling per-CPU files.
pub fn read_path(path: impl AsRef<Path>) -> Result<Trace, TraceError> {
    read_path_with(path, None, &ReadOptions::default())
}

/// Reads the trace at `path` as `format`.
pub fn read_as(path: impl AsRef<Path>, format: Format) -> Result<Trace, TraceError> {
    read_path_with(path, Some(format), &ReadOptions::default())
}

/// Reads the trace at `path` as `format` (detected when None) with `opts`.
pub fn read_path_with(
    path: impl AsRef<Path>,
    format: Option<Format>,
    opts: &ReadOptions,
) -> Result<Trace, TraceError> {
    let path = path.as_ref();
    let file = path.display().to_string();
    let bytes = read_file(path)?;
    let format = match format {
        Some(f) => f,
        None => detect(&bytes)
            .or_else(|| Format::from_extension(path))
            .ok_or_else(|| {
                TraceError::malformed(
                    &file,
                    crate::error::Location::File,
                    format!(
                        "cannot tell the trace format from the content or the name; name one of: {}",
                        Format::NAMES.join(", ")
                    ),
                )
            })?,
    };
    if format == Format::Blktrace {
        let files = blktrace::sibling_files(path)?;
        return blktrace::read(&files, opts);
    }
    read_bytes(&bytes, &file, format, opts)
}

/// Writes `trace` in `format` into a string, or says why the format cannot hold it.
pub fn write_string(trace: &Trace, format: Format) -> Result<String, TraceError> {
    match format {
        Format::Blkparse => blkparse::write(trace),
        Format::DisksimAscii => disksim::write_ascii(trace),
        Format::FioV3 => fio::write_v3(trace, fio::DEFAULT_FILE_NAME),
        Format::Csv => csv::write(trace),
        other => Err(TraceError::UnknownFormat {
            name: format!("{other} (not writable)"),
            valid: ALL_FORMATS
                .iter()
                .filter(|f| f.writable())
                .map(|f| f.name())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// Writes `trace` to `path` in `format`.
pub fn write_path(trace: &Trace, path: impl AsRef<Path>, format: Format) -> Result<(), TraceError> {
    let path = path.as_ref();
    let text = write_string(trace, format)?;
    std::fs::write(path, text).map_err(|source| TraceError::Io {
        file: path.display().to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for f in ALL_FORMATS {
            assert_eq!(Format::from_name(f.name()).unwrap(), f);
        }
        let e = Format::from_name("nope").unwrap_err().to_string();
        assert!(e.contains("tracefs") && e.contains("fio-v3"), "{e}");
    }

    #[test]
    fn extensions() {
        assert_eq!(
            Format::from_extension(Path::new("a/b.csv")),
            Some(Format::Csv)
        );
        assert_eq!(
            Format::from_extension(Path::new("sda.blktrace.3")),
            Some(Format::Blktrace)
        );
        assert_eq!(
            Format::from_extension(Path::new("x.iolog")),
            Some(Format::FioV3)
        );
        assert_eq!(Format::from_extension(Path::new("noext")), None);
    }
}
