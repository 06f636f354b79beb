//! `layoutlab overhead` and `layoutlab reproduce mkfs-overhead` as a user runs them: the JSON
//! contract, the advice, refusals in mke2fs's words. (The numbers themselves are held against
//! the real mke2fs by crates/layout/tests/oracle_overhead.rs.)

mod common;

use common::layoutlab;

fn json(args: &[&str]) -> serde_json::Value {
    let mut a = args.to_vec();
    a.extend(["--json", "-"]);
    let out = layoutlab(&a);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn overhead_json_has_every_key_and_they_add_up() {
    let v = json(&[
        "overhead",
        "--size",
        "78654240K",
        "--profile",
        "e2fsprogs-1.41.14",
        "-t",
        "ext3",
    ]);
    let n = |k: &str| {
        v[k].as_u64()
            .unwrap_or_else(|| panic!("{k} missing in {v}"))
    };
    for k in [
        "block_size",
        "blocks_total",
        "groups",
        "inodes_total",
        "inode_table_blocks",
        "bitmap_blocks",
        "gdt_blocks",
        "reserved_gdt_blocks",
        "journal_blocks",
        "reserved_blocks",
        "overhead_blocks",
        "df_size_kb",
        "df_used_kb",
        "df_avail_kb",
    ] {
        n(k);
    }
    // Coly Li's partition under 2010's defaults (the same figures the experiment prints).
    assert_eq!(
        (
            n("blocks_total"),
            n("groups"),
            n("inodes_total"),
            n("reserved_blocks")
        ),
        (19_663_560, 601, 601 * 8192, 983_178)
    );
    assert_eq!(n("inode_table_blocks"), 601 * 512);
    assert_eq!(n("bitmap_blocks"), 2 * 601);
    assert_eq!(n("journal_blocks"), 32768);
    // Every used block is one of the structures (4K blocks: no block before group 0).
    let parts = n("superblock_blocks")
        + n("gdt_blocks")
        + n("reserved_gdt_blocks")
        + n("bitmap_blocks")
        + n("inode_table_blocks")
        + n("journal_blocks")
        + n("journal_mapping_blocks")
        + n("other_blocks");
    assert_eq!(parts, n("overhead_blocks"));
    assert_eq!(n("free_blocks") + n("overhead_blocks"), n("blocks_total"));
    assert_eq!(n("df_size_kb") - n("df_used_kb"), n("free_blocks") * 4);
}

#[test]
fn use_proposes_options_with_reasons_and_never_too_few_inodes() {
    let v = json(&[
        "overhead",
        "--size",
        "80G",
        "-t",
        "ext4",
        "--use",
        "many-small-files",
        "--files",
        "9000000",
    ]);
    let p = &v["proposal"];
    assert!(
        p["overhead"]["inodes_total"].as_u64().unwrap() >= 9_000_000,
        "{p}"
    );
    let opts = p["options"].as_array().unwrap();
    assert!(!opts.is_empty());
    for o in opts {
        assert!(o["option"].as_str().unwrap().starts_with('-'));
        assert!(o["why"].as_str().unwrap().len() > 20);
    }
    let v = json(&[
        "overhead",
        "--size",
        "80G",
        "-t",
        "ext3",
        "--use",
        "read-mostly-ssd",
        "--fixed-size",
    ]);
    let p = &v["proposal"];
    assert!(p["gives_back_kb"].as_i64().unwrap() > 1_000_000, "{p}");
    assert_eq!(p["overhead"]["reserved_gdt_blocks"], 0);
    let text = String::from_utf8_lossy(
        &layoutlab(&[
            "overhead", "--size", "80G", "-t", "ext3", "--use", "general",
        ])
        .stdout,
    )
    .into_owned();
    assert!(
        text.contains("proposed for general") && text.contains("│"),
        "{text}"
    );
}

#[test]
fn refusals_are_mke2fs_own_reasons_and_name_what_conflicts() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["-t", "ext4", "-O", "^extent"],
            "Extents MUST be enabled for a 64-bit filesystem",
        ),
        (
            &["-t", "ext4", "-O", "^flex_bg", "-G", "8"],
            "Flex_bg feature not enabled, so flex_bg size may not be specified",
        ),
        (
            &["-t", "ext4", "-O", "meta_bg"],
            "The resize_inode and meta_bg features are not compatible",
        ),
        (&["-t", "ext4", "-b", "512"], "invalid block size - 512"),
        (&["-t", "ext4", "-I", "100"], "invalid inode size 100"),
        (
            &["-t", "ext4", "-m", "60"],
            "invalid reserved blocks percent - 60",
        ),
        (
            &["-t", "ext4", "-g", "1001"],
            "blocks per group must be multiple of 8",
        ),
        (
            &["-t", "ext4", "-O", "frobnicate"],
            "Invalid filesystem option set: frobnicate",
        ),
        (
            &["-t", "ext4", "-E", "resize=100"],
            "The resize maximum must be greater than the filesystem size",
        ),
        (
            &["-t", "ext4", "-E", "frob=1"],
            "Bad option(s) specified: frob",
        ),
        (&["-t", "ext9"], "does not define the ext9 filesystem type"),
        (
            &["-t", "ext4", "-J", "size=5000"],
            "Total journal size too big for filesystem",
        ),
        (
            &["-t", "ext4", "-O", "bigalloc"],
            "layoutlab cannot compute this",
        ),
    ];
    for (opts, want) in cases {
        let mut a = vec!["overhead", "--size", "1G"];
        a.extend_from_slice(opts);
        let out = layoutlab(&a);
        assert_eq!(out.status.code(), Some(2), "{opts:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{opts:?}: {err}");
    }
    let out = layoutlab(&["overhead", "--size", "1G", "--profile", "e2fsprogs-0.1"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("e2fsprogs-1.41.14"));
    let out = layoutlab(&["overhead", "--size", "1G", "--files", "10"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--use"));
}

#[test]
fn reproduce_mkfs_overhead_prints_ours_beside_the_published_figures() {
    let dir = std::env::temp_dir().join(format!("ll-mkfs-overhead-{}", std::process::id()));
    let out = layoutlab(&[
        "reproduce",
        "mkfs-overhead",
        "--out",
        dir.to_str().unwrap(),
        "--json",
        dir.join("r.json").to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("published") && text.contains("give back"),
        "{text}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).unwrap()).unwrap();
    let d = &v["default"]["overhead"];
    assert_eq!(d["blocks_total"], 19_663_560);
    assert_eq!(d["reserved_gdt_blocks_per_copy"], 1019);
    // df as the ext3 driver of 2.6 computed it, and today's kernel (which counts the journal
    // and reserved descriptors as the file system's own).
    assert_eq!(
        v["default"]["df_ext3_2_6_kb"],
        serde_json::json!([77_418_272u64, 184_216u64, 73_301_344u64])
    );
    assert!(d["df_size_kb"].as_u64().unwrap() < 77_418_272);
    assert_eq!(v["published"]["df_size_kb"], 77_418_272.0);
    let s = &v["suggested"]["overhead"];
    let gain_kb = s["df_avail_kb"].as_u64().unwrap() - d["df_avail_kb"].as_u64().unwrap();
    assert!(gain_kb > 4_000_000, "{gain_kb}");
    assert!(dir.join("mkfs-overhead/report.md").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
