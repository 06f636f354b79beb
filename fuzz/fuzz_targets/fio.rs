//! Fuzzes the fio iolog reader (v2 and v3: the header picks): never a panic; accepted traces
//! survive a CSV round trip.
#![no_main]

use layoutlab_trace::{read_bytes, write_string, Format, ReadOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(trace) = read_bytes(data, "fuzz", Format::FioV3, &ReadOptions::default()) {
        let csv = write_string(&trace, Format::Csv).expect("writable as CSV");
        let back = read_bytes(csv.as_bytes(), "fuzz.csv", Format::Csv, &ReadOptions::default())
            .expect("CSV reads back");
        assert_eq!(back.requests.len(), trace.requests.len());
    }
});
