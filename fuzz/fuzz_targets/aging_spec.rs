//! Fuzzes the `[aging]` section reader: any text gives a spec or an error that names the file,
//! never a panic; a spec it accepts, small enough to run, ages a tiny tree into a stream every
//! operation of which can be done in order, or is refused with an error naming a parameter.
#![no_main]

use layoutlab_workload::aging::{age, AgingSpec};
use layoutlab_workload::{Error, NsOp, Population};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match AgingSpec::from_toml_str(text, "fuzz.toml") {
        Err(e) => assert!(e.to_string().starts_with("fuzz.toml: [aging] "), "{e}"),
        Ok(spec) => {
            // keep each run short: volume is the unit tests' business (a 64 MiB disk aged
            // 0.001 × in 1-byte files is still 134,000 operations)
            let mut spec = spec;
            spec.age = spec.age.min(0.001);
            let mut ops = vec![NsOp::Mkdir { path: "d".into() }];
            for (i, bytes) in [0u64, 10, 5000, 70_000, 1 << 20].into_iter().enumerate() {
                ops.push(NsOp::Create {
                    path: format!("d/f{i}"),
                    bytes,
                });
            }
            let pop = Population {
                name: "fuzz".into(),
                fs_bytes: 64 << 20,
                ops,
            };
            match age(&pop, &spec) {
                Ok(aged) => aged.check_tree().expect("an aging stream is possible in order"),
                Err(Error::BadAging { .. }) => {}
                Err(e) => panic!("unexpected error {e}"),
            }
        }
    }
});
