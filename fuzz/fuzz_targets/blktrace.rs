//! Fuzzes the blktrace binary reader: the input is split in two per-CPU files at a point the
//! first byte chooses, so the merge by time is exercised too. Never a panic.
#![no_main]

use layoutlab_trace::{blktrace, write_string, Format, ReadOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else { return };
    let at = (split as usize * 48).min(rest.len());
    let files = vec![
        ("f.blktrace.0".to_string(), rest[..at].to_vec()),
        ("f.blktrace.1".to_string(), rest[at..].to_vec()),
    ];
    if let Ok(trace) = blktrace::read(&files, &ReadOptions::default()) {
        write_string(&trace, Format::Csv).expect("writable as CSV");
        write_string(&trace, Format::Blkparse).expect("writable as blkparse");
    }
});
