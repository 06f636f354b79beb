//! fio I/O logs ("trace file format" v2 and v3 of fio's HOWTO; v3 since fio 3.31).
//!
//! ```text
//! fio version 3 iolog              fio version 2 iolog
//! 0 /dev/sdb add                   /dev/sdb add
//! 0 /dev/sdb open                  /dev/sdb open
//! 12 /dev/sdb read 1048576 4096    /dev/sdb read 1048576 4096
//! 15 /dev/sdb write 0 65536        /dev/sdb wait 3000 0
//! 20 /dev/sdb close                /dev/sdb write 0 65536
//! ```
//!
//! v3 lines start with a timestamp in µs from the start of the run: fio's `log_io_u()` prints
//! `utime_since_now(&td->io_log_start_time)` and its replay takes differences of it as µs
//! delays (`delay_since_ttime()`); the HOWTO does not name the unit. v2 has none, and time advances only through `wait OFFSET_US` actions. Actions `read`,
//! `write`, `trim` become requests (offset and length in bytes, multiples of 512); `sync`,
//! `datasync` and `sync_file_range` become flushes; `add`, `open`, `close` are skipped. A log
//! that touches more than one file is an error (a trace is one device).
//!
//! The writer prints v3 with every I/O action's `offset length` (fio needs them even for
//! `sync`), times floored to whole µs. Replay with fio's `read_iolog=` and
//! `replay_redirect=/dev/DEVICE`.

use crate::error::{Location, TraceError};
use crate::text::{parse_decimal_ns, parse_u64};
use crate::{Flags, Op, Request, Trace};

/// The file name the writer puts on every line unless told otherwise.
pub const DEFAULT_FILE_NAME: &str = "/dev/layoutlab0";

/// Reads a v2 or v3 log (the header says which).
pub fn read(text: &str, file: &str) -> Result<Trace, TraceError> {
    let mut trace = Trace::default();
    let mut version = 0u8;
    let mut clock_ns = 0u64;
    let mut io_file: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        let err = |r: String| TraceError::at_line(file, line_no, r);
        if version == 0 {
            version = match trimmed {
                "fio version 2 iolog" => 2,
                "fio version 3 iolog" => 3,
                _ => {
                    return Err(err(format!(
                        "expected the header 'fio version 2 iolog' or 'fio version 3 iolog', found '{trimmed}'"
                    )))
                }
            };
            continue;
        }
        let mut f: Vec<&str> = trimmed.split_whitespace().collect();
        if version == 3 {
            if f.is_empty() {
                continue;
            }
            let ts = f.remove(0);
            clock_ns =
                parse_decimal_ns(ts, 1_000).map_err(|r| err(format!("timestamp (µs): {r}")))?;
        }
        let (name, action) = match f.as_slice() {
            [name, action, ..] => (*name, *action),
            _ => {
                return Err(err(format!(
                    "expected '{}FILENAME ACTION [OFFSET LENGTH]'",
                    if version == 3 { "TIMESTAMP " } else { "" }
                )))
            }
        };
        let numbers = || -> Result<(u64, u64), TraceError> {
            match f.as_slice() {
                [_, _, off, len] => Ok((
                    parse_u64(off, "offset").map_err(err)?,
                    parse_u64(len, "length").map_err(err)?,
                )),
                [_, _] => Ok((0, 0)),
                _ => Err(err(format!(
                    "action '{action}' takes 'OFFSET LENGTH', found {} fields",
                    f.len()
                ))),
            }
        };
        let op = match action {
            "add" | "open" | "close" => continue,
            "wait" if version == 2 => {
                let (wait_us, _) = numbers()?;
                clock_ns = clock_ns.saturating_add(wait_us.saturating_mul(1000));
                continue;
            }
            "wait" => return Err(err("action 'wait' is not allowed in a version 3 log".into())),
            "read" => Op::Read,
            "write" => Op::Write,
            "trim" => Op::Discard,
            "sync" | "datasync" | "sync_file_range" => Op::Flush,
            other => {
                return Err(err(format!(
                    "unknown action '{other}' (expected read, write, trim, sync, datasync, \
                     sync_file_range, wait, add, open or close)"
                )))
            }
        };
        match &io_file {
            None => io_file = Some(name.to_string()),
            Some(first) if first != name => {
                return Err(err(format!(
                    "I/O on '{name}' after I/O on '{first}': a trace holds one device"
                )))
            }
            _ => {}
        }
        let (offset, length) = numbers()?;
        let (sector, sectors) = if op == Op::Flush {
            (0, 0)
        } else {
            if offset % 512 != 0 || length % 512 != 0 {
                return Err(err(format!(
                    "offset {offset} or length {length} is not a multiple of 512 bytes"
                )));
            }
            let sectors = u32::try_from(length / 512)
                .map_err(|_| err(format!("length {length} is too large")))?;
            (offset / 512, sectors)
        };
        trace.requests.push(Request {
            issue_ns: clock_ns,
            complete_ns: None,
            op,
            sector,
            sectors,
            flags: Flags::NONE,
            tag: 0,
            cpu: None,
        });
    }
    if version == 0 {
        return Err(TraceError::malformed(
            file,
            Location::File,
            "empty: no 'fio version N iolog' header",
        ));
    }
    Ok(trace)
}

/// Writes `trace` as a v3 log on `file_name`.
pub fn write_v3(trace: &Trace, file_name: &str) -> Result<String, TraceError> {
    if file_name.is_empty() || file_name.contains(char::is_whitespace) {
        return Err(TraceError::malformed(
            "<fio writer>",
            Location::File,
            format!("file name {file_name:?} is empty or holds white space"),
        ));
    }
    let mut out = String::with_capacity(trace.requests.len() * 40 + 64);
    out.push_str("fio version 3 iolog\n");
    out.push_str(&format!("0 {file_name} add\n0 {file_name} open\n"));
    let mut last_us = 0;
    for (i, r) in trace.requests.iter().enumerate() {
        let offset_bytes = r.sector.checked_mul(512).ok_or_else(|| {
            TraceError::malformed(
                "<fio writer>",
                Location::Request(i),
                format!(
                    "sector {} is past the largest byte offset fio can log",
                    r.sector
                ),
            )
        })?;
        let us = r.issue_ns / 1_000;
        last_us = last_us.max(us);
        let (action, offset, length) = match r.op {
            Op::Read => ("read", offset_bytes, r.bytes()),
            Op::Write => ("write", offset_bytes, r.bytes()),
            Op::Discard => ("trim", offset_bytes, r.bytes()),
            Op::Flush => ("sync", 0, 0),
        };
        out.push_str(&format!("{us} {file_name} {action} {offset} {length}\n"));
    }
    out.push_str(&format!("{last_us} {file_name} close\n"));
    Ok(out)
}
