//! The SSD preset schema (`kind = "ssd"`): every parameter a `{ value, source }` pair, read into
//! [`SsdParams`].

use serde::Deserialize;

use super::{Precondition, Ssd, SsdParams};
use crate::cited::{check_kind, parse_toml, Cited};
use crate::DeviceError;

/// The same parameters as they appear in a preset: each with its source.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CitedSsdParams {
    capacity_bytes: Cited<u64>,
    physical_bytes: Cited<u64>,
    channels: Cited<u32>,
    dies_per_channel: Cited<u32>,
    planes_per_die: Cited<u32>,
    page_bytes: Cited<u64>,
    pages_per_block: Cited<u32>,
    read_us: Cited<f64>,
    program_us: Cited<f64>,
    erase_us: Cited<f64>,
    channel_mb_per_s: Cited<f64>,
    host_mb_per_s: Cited<f64>,
    host_overhead_us: Cited<f64>,
    queue_depth: Cited<u32>,
    write_buffer_bytes: Cited<u64>,
    precondition: Cited<Precondition>,
    independent_plane_reads: Cited<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SsdPresetFile {
    kind: String,
    name: String,
    #[allow(dead_code)]
    description: Option<String>,
    #[allow(dead_code)]
    model: Option<String>,
    params: CitedSsdParams,
}

impl Ssd {
    /// Parses a preset (`kind = "ssd"`, every parameter `{ value = ..., source = "..." }`).
    /// `path` names the file in errors.
    pub fn from_toml_str(text: &str, path: &str) -> Result<Ssd, DeviceError> {
        let f: SsdPresetFile = parse_toml(text, path)?;
        check_kind(&f.kind, "ssd", path)?;
        let c = f.params;
        let params = SsdParams {
            capacity_bytes: c.capacity_bytes.get("capacity_bytes", path)?,
            physical_bytes: c.physical_bytes.get("physical_bytes", path)?,
            channels: c.channels.get("channels", path)?,
            dies_per_channel: c.dies_per_channel.get("dies_per_channel", path)?,
            planes_per_die: c.planes_per_die.get("planes_per_die", path)?,
            page_bytes: c.page_bytes.get("page_bytes", path)?,
            pages_per_block: c.pages_per_block.get("pages_per_block", path)?,
            read_us: c.read_us.get("read_us", path)?,
            program_us: c.program_us.get("program_us", path)?,
            erase_us: c.erase_us.get("erase_us", path)?,
            channel_mb_per_s: c.channel_mb_per_s.get("channel_mb_per_s", path)?,
            host_mb_per_s: c.host_mb_per_s.get("host_mb_per_s", path)?,
            host_overhead_us: c.host_overhead_us.get("host_overhead_us", path)?,
            queue_depth: c.queue_depth.get("queue_depth", path)?,
            write_buffer_bytes: c.write_buffer_bytes.get("write_buffer_bytes", path)?,
            precondition: c.precondition.get("precondition", path)?,
            independent_plane_reads: c
                .independent_plane_reads
                .get("independent_plane_reads", path)?,
        };
        Ssd::new(&f.name, params)
    }
}
