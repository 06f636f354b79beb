//! Fuzzes the tree-population (workload TOML) reader: any text gives a profile or an error that
//! names the file and a key, never a panic; a small profile it accepts generates a tree that
//! every operation of which can be done in order, with exactly the counts asked for.
#![no_main]

use layoutlab_workload::populations::tree::TreePopulation;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match TreePopulation::from_toml_str(text, "fuzz.toml") {
        Err(e) => assert!(e.to_string().contains("fuzz.toml")),
        Ok(p) => {
            let c = &p.counts;
            let names = c.regular_files + c.symlinks + c.hard_links + c.char_devices
                + c.block_devices + c.fifos + c.sockets;
            // keep each run short: big trees are the unit tests' business
            if c.directories > 2000 || names > 5000 || p.file_data_blocks > 1 << 24 {
                return;
            }
            let pop = p.generate();
            pop.check_tree().expect("a generated tree is possible in order");
            let st = pop.stats();
            assert_eq!(st.regular_files, c.regular_files);
            assert_eq!(st.directories, c.directories);
            assert_eq!(st.hard_links, c.hard_links);
        }
    }
});
