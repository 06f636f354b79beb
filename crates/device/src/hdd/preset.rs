//! Preset files (TOML) for the hard-disk model: read and write.
