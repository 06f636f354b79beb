//! Fuzzes the DiskSim parameter-file importer (`.parv`/`.diskspecs` syntax, `source`
//! includes, the disk block's keys): any file gives a spec or an error, never a panic; and a
//! spec it accepts builds a drive that serves a read and a write.
#![no_main]

use layoutlab_device::hdd::Hdd;
use layoutlab_device::{parv, Device, IoRequest};
use layoutlab_trace::Op;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The importer reads files (it follows `source` includes); one scratch file per process.
    let path = std::env::temp_dir().join(format!("ll-fuzz-parv-{}.parv", std::process::id()));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    if let Ok(spec) = parv::import_parv(&path) {
        if let Ok(mut d) = Hdd::new(spec) {
            let cap = d.capacity_sectors().max(1);
            let a = d.submit(
                0.0,
                &IoRequest {
                    op: Op::Read,
                    sector: cap / 2,
                    sectors: 16,
                    flags: Default::default(),
                },
            );
            let b = d.submit(
                a,
                &IoRequest {
                    op: Op::Write,
                    sector: cap / 3,
                    sectors: 8,
                    flags: Default::default(),
                },
            );
            assert!(a >= 0.0 && b >= a);
        }
    }
});
