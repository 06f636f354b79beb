//! Fuzzes the disksim_validate reader: any bytes give a trace or an error, never a panic; and a trace it
//! accepts survives a CSV round trip unchanged.
#![no_main]

use layoutlab_trace::{read_bytes, write_string, Format, ReadOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(trace) = read_bytes(data, "fuzz", Format::DisksimValidate, &ReadOptions::default()) {
        let csv = write_string(&trace, Format::Csv).expect("every reader's trace is writable as CSV");
        let back = read_bytes(csv.as_bytes(), "fuzz.csv", Format::Csv, &ReadOptions::default())
            .expect("CSV written by the writer reads back");
        assert_eq!(back.requests.len(), trace.requests.len());
    }
});
