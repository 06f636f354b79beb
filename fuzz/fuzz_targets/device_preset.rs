//! Fuzzes the device preset loader (hdd, ssd and composite TOML): any text gives a device or
//! an error, never a panic; and a device it accepts serves a few requests without panicking
//! and with completion times that never run backwards.
#![no_main]

use layoutlab_device::preset::load_preset_str;
use layoutlab_device::IoRequest;
use layoutlab_trace::Op;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(mut dev) = load_preset_str(text, "fuzz.toml") {
        let cap = dev.capacity_sectors().max(1);
        let mut t = 0.0;
        for (i, op) in [Op::Read, Op::Write, Op::Read, Op::Read]
            .into_iter()
            .enumerate()
        {
            let req = IoRequest {
                op,
                sector: (i as u64 * 7919 * 1024) % cap,
                sectors: 8 << i,
                flags: Default::default(),
            };
            let done = dev.submit(t, &req);
            assert!(done >= t, "completion {done} before arrival {t}");
            t = done;
        }
    }
});
