//! Fuzzes detection and dispatch: whatever format the content suggests, reading it never
//! panics, and every writable format either writes the result or says why not.
#![no_main]

use layoutlab_trace::{detect, read_bytes, write_string, Format, ReadOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(format) = detect(data) {
        if let Ok(trace) = read_bytes(data, "fuzz", format, &ReadOptions::default()) {
            for f in [Format::Csv, Format::Blkparse, Format::DisksimAscii, Format::FioV3] {
                let _ = write_string(&trace, f);
            }
            let _ = trace.duration_ns();
            let _ = layoutlab_trace::stats::per_tag(&trace);
        }
    }
});
