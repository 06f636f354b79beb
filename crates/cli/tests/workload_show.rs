//! `layoutlab workload show`: the ubuntu-32g statistics match Ts'o's file system exactly,
//! in the JSON keys the issue names; an unknown workload is an error listing the valid ones.

mod common;

use common::layoutlab;

#[test]
fn ubuntu_32g_show_json_has_the_vital_statistics() {
    let out = layoutlab(&["workload", "show", "ubuntu-32g", "--json", "-"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    for (key, want) in [
        ("regular_files", 263_549),
        ("directories", 28_022),
        ("symlinks", 20_618),
        ("fast_symlinks", 19_450),
        ("hard_links", 615),
        ("inodes_used", 312_214),
        // ext4-2009 on the ext4-2009 mkfs profile: mkfs metadata + every planned block
        ("blocks_used", 4_388_697),
    ] {
        assert_eq!(v[key].as_u64(), Some(want), "{key}");
    }
    let hist = v["size_histogram"].as_array().expect("size histogram");
    let files: u64 = hist.iter().map(|b| b["files"].as_u64().unwrap()).sum();
    assert_eq!(files, 263_549);
}

#[test]
fn unknown_workload_lists_the_valid_ones() {
    let out = layoutlab(&["workload", "show", "ubuntu-64g"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ubuntu-64g") && err.contains("ubuntu-32g") && err.contains("bench5"),
        "{err}"
    );
}
