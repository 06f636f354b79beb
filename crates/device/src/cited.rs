//! A preset's values and how they are read: every parameter a `{ value, source }` pair
//! ([`Cited`]), and TOML parsing whose errors name the file and line. The model schemas
//! (`hdd/spec_toml.rs`, `ssd/spec_toml.rs`, `composite.rs`) and the registry (`preset.rs`)
//! build on this; it knows none of them.

use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::DeviceError;

/// A preset value with the source it comes from (a data sheet, a review, a measurement).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cited<T> {
    /// The value.
    pub value: T,
    /// Where it comes from.
    pub source: String,
}

impl<T: Clone> Cited<T> {
    /// The value, or an error naming `key` if its source is empty.
    pub fn get(&self, key: &str, path: &str) -> Result<T, DeviceError> {
        if self.source.trim().is_empty() {
            return Err(DeviceError::Parse {
                path: path.to_string(),
                line: 0,
                reason: format!("parameter '{key}' has an empty source; every value must cite one"),
            });
        }
        Ok(self.value.clone())
    }
}

/// 1-based line of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Parses `text` as TOML into `T`, with errors carrying `path` and the line.
pub fn parse_toml<T: DeserializeOwned>(text: &str, path: &str) -> Result<T, DeviceError> {
    toml::from_str(text).map_err(|e| DeviceError::Parse {
        path: path.to_string(),
        line: e.span().map(|s| line_of(text, s.start)).unwrap_or(0),
        reason: e.message().to_string(),
    })
}

/// Refuses a preset whose `kind` is not `expected`: each reader takes one kind, and a preset
/// read by the wrong one would have its fields misread or refused one by one.
pub(crate) fn check_kind(kind: &str, expected: &str, path: &str) -> Result<(), DeviceError> {
    if kind != expected {
        return Err(DeviceError::Parse {
            path: path.to_string(),
            line: 1,
            reason: format!("kind is '{kind}', expected '{expected}'"),
        });
    }
    Ok(())
}
