//! The one error type of the layout crate.

/// Why a geometry, profile or plan could not be made.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum LayoutError {
    /// A mkfs profile file or text could not be parsed.
    #[error("mkfs profile {source_name}: {reason}")]
    BadProfile {
        /// File name (or "embedded NAME").
        source_name: String,
        /// What is wrong, with the line when the parser gives one.
        reason: String,
    },
    /// No mkfs profile has this name.
    #[error("unknown mkfs profile '{name}'; valid profiles: {}", valid.join(", "))]
    UnknownProfile {
        /// Name asked for.
        name: String,
        /// Valid names.
        valid: Vec<String>,
    },
    /// No policy has this name.
    #[error("unknown layout policy '{name}'; valid policies: {}", valid.join(", "))]
    UnknownPolicy {
        /// Name asked for.
        name: String,
        /// Valid names.
        valid: Vec<&'static str>,
    },
    /// A policy parameter is unknown or out of range.
    #[error("policy {policy}: bad parameter '{param}': {reason}")]
    BadParam {
        /// Policy name.
        policy: String,
        /// Parameter name.
        param: String,
        /// Why.
        reason: String,
    },
    /// The file system is too small (or too large) for the profile.
    #[error("cannot lay out a {fs_bytes}-byte file system: {reason}")]
    BadSize {
        /// Size asked for.
        fs_bytes: u64,
        /// Why.
        reason: String,
    },
    /// Something the model does not cover (said plainly rather than guessed).
    #[error("not modelled: {0}")]
    Unsupported(String),
    /// The population cannot be laid out as written (missing parent, duplicate name, ...).
    #[error("bad population: {0}")]
    BadPopulation(String),
    /// The population needs more inodes than the file system has.
    #[error("out of inodes after {created} files")]
    NoInodes {
        /// Inodes created before running out.
        created: u64,
    },
}
