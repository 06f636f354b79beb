//! The block queue a trace was captured through: the attributes of the traced device's queue
//! that change what the kernel issues (whether it is rotational, how far it reads ahead, how
//! large one request may be, the I/O scheduler, the block sizes), as read back from sysfs.
//!
//! A loop device inherits `rotational` from its backing file's device, and the kernel, btrfs
//! and ext4 may choose differently on a non-rotational queue; a trace therefore carries the
//! queue it came through (docs/rig.md, "The queue a capture presents"). In CSV it
//! is one comment line before the header:
//!
//! ```text
//! #queue rotational=1 read_ahead_kb=128 max_sectors_kb=512 scheduler=none logical_block_bytes=512 physical_block_bytes=512
//! ```

use serde::{Deserialize, Serialize};

/// A captured device's queue attributes (`/sys/block/DEV/queue/*`) while it was traced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceQueue {
    /// `queue/rotational`: whether the kernel treated the device as a spinning disk.
    pub rotational: bool,
    /// `queue/read_ahead_kb`.
    pub read_ahead_kb: u32,
    /// `queue/max_sectors_kb`: the largest request, KiB.
    pub max_sectors_kb: u32,
    /// `queue/scheduler`: the active one.
    pub scheduler: String,
    /// `queue/logical_block_size`, bytes.
    pub logical_block_bytes: u32,
    /// `queue/physical_block_size`, bytes.
    pub physical_block_bytes: u32,
}

/// How the CSV comment line starts.
pub const CSV_PREFIX: &str = "#queue ";

impl DeviceQueue {
    /// The `key=value` words of the CSV line (without [`CSV_PREFIX`]).
    pub fn to_words(&self) -> String {
        format!(
            "rotational={} read_ahead_kb={} max_sectors_kb={} scheduler={} logical_block_bytes={} physical_block_bytes={}",
            u8::from(self.rotational),
            self.read_ahead_kb,
            self.max_sectors_kb,
            self.scheduler,
            self.logical_block_bytes,
            self.physical_block_bytes
        )
    }

    /// Parses [`DeviceQueue::to_words`]'s text; every key exactly once, nothing else.
    pub fn from_words(text: &str) -> Result<DeviceQueue, String> {
        let mut fields: [Option<&str>; 6] = [None; 6];
        const KEYS: [&str; 6] = [
            "rotational",
            "read_ahead_kb",
            "max_sectors_kb",
            "scheduler",
            "logical_block_bytes",
            "physical_block_bytes",
        ];
        for word in text.split_whitespace() {
            let (key, value) = word
                .split_once('=')
                .ok_or_else(|| format!("queue attribute '{word}' is not key=value"))?;
            let i = KEYS.iter().position(|k| *k == key).ok_or_else(|| {
                format!(
                    "unknown queue attribute '{key}'; known: {}",
                    KEYS.join(", ")
                )
            })?;
            if fields[i].replace(value).is_some() {
                return Err(format!("queue attribute '{key}' given twice"));
            }
        }
        let get =
            |i: usize| fields[i].ok_or_else(|| format!("queue attribute '{}' missing", KEYS[i]));
        let num = |i: usize| -> Result<u32, String> {
            get(i)?
                .parse()
                .map_err(|_| format!("queue attribute '{}' is not a number", KEYS[i]))
        };
        let rotational = match get(0)? {
            "0" => false,
            "1" => true,
            other => return Err(format!("rotational is '{other}', not 0 or 1")),
        };
        Ok(DeviceQueue {
            rotational,
            read_ahead_kb: num(1)?,
            max_sectors_kb: num(2)?,
            scheduler: get(3)?.to_string(),
            logical_block_bytes: num(4)?,
            physical_block_bytes: num(5)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_and_bad_words_are_refused() {
        let q = DeviceQueue {
            rotational: true,
            read_ahead_kb: 128,
            max_sectors_kb: 512,
            scheduler: "none".into(),
            logical_block_bytes: 512,
            physical_block_bytes: 4096,
        };
        assert_eq!(DeviceQueue::from_words(&q.to_words()).unwrap(), q);
        let words = q.to_words();
        for (bad, why) in [
            (words.replace("rotational=1", "rotational=2"), "not 0 or 1"),
            (words.replace("rotational=1 ", ""), "'rotational' missing"),
            (format!("{words} rotational=1"), "given twice"),
            (format!("{words} nr_requests=4"), "unknown queue attribute"),
            (words.replace("=128", "=lots"), "not a number"),
        ] {
            let e = DeviceQueue::from_words(&bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
