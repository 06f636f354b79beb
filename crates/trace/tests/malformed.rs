//! Bad input gives an error naming the file, the line (or byte offset) and the reason.

use layoutlab_trace::{blktrace, read_bytes, Format, ReadOptions, TraceError};

fn err(text: &str, format: Format) -> TraceError {
    read_bytes(text.as_bytes(), "bad.txt", format, &ReadOptions::default()).unwrap_err()
}

fn check(text: &str, format: Format, line: usize, reason_has: &str) {
    let e = err(text, format);
    assert_eq!(e.line(), Some(line), "{format}: {e}");
    assert!(
        e.reason().contains(reason_has),
        "{format}: '{e}' lacks '{reason_has}'"
    );
    let shown = e.to_string();
    assert!(
        shown.starts_with(&format!("bad.txt: line {line}: ")),
        "{shown}"
    );
}

#[test]
fn tracefs() {
    let ok = "  dd-1 [000] ..... 1.000000: block_rq_issue: 7,0 R 4096 () 8 + 8 be,0,4 [dd]\n";
    check(
        &format!("{ok}garbage here\n"),
        Format::Tracefs,
        2,
        "not a tracefs event line",
    );
    check(
        &format!("{ok}  dd-1 [000] ..... 1.5: block_rq_issue: 7,0 RX 4096 () 8 + 8 be,0,4 [dd]\n"),
        Format::Tracefs,
        2,
        "unknown modifier 'X'",
    );
    check(
        "  dd-1 [000] ..... 1.5: block_rq_issue: 7.0 R 4096 () 8 + 8 be,0,4 [dd]\n",
        Format::Tracefs,
        1,
        "not MAJOR,MINOR",
    );
    check(
        "  dd-1 [000] ..... 1.5: block_rq_complete: 7,0 R () 8 - 8 be,0,4 [0]\n",
        Format::Tracefs,
        1,
        "SECTOR + SECTORS",
    );
    check(
        "  dd-1 [000] ..... 1.5: block_bio_queue: 7,0 R 8 + 99999999999 [dd]\n",
        Format::Tracefs,
        1,
        "does not fit in 32 bits",
    );
}

#[test]
fn blkparse() {
    let ok = "  7,0    1        0     0.000011141 11121  D  WS 0 + 128 [dd]\n";
    check(
        &format!("{ok}  7,0    1   x\n"),
        Format::Blkparse,
        2,
        "sequence 'x'",
    );
    check(
        &format!("{ok}  7,0    1        0     0.1 11121  D  QQ 0 + 128 [dd]\n"),
        Format::Blkparse,
        2,
        "unknown operation letter 'Q'",
    );
    check(
        "  7,0    1        0     -3 1  D  WS 0 + 128 [dd]\n",
        Format::Blkparse,
        1,
        "time",
    );
}

#[test]
fn disksim_ascii() {
    check(
        "0.5 0 100 8 1\n1.0 0 100 8\n",
        Format::DisksimAscii,
        2,
        "expected 5 fields",
    );
    check("0.5 0 100 8 zz\n", Format::DisksimAscii, 1, "hexadecimal");
    check(
        "0.5 0 100 8 1\n0.7 1 100 8 1\n",
        Format::DisksimAscii,
        2,
        "one device",
    );
    check(
        "abc 0 100 8 1\n",
        Format::DisksimAscii,
        1,
        "not a non-negative decimal",
    );
}

#[test]
fn disksim_validate() {
    let ok = "R Hit    2992396   4  13670.00000  35942.00000\n";
    check(
        &format!("{ok}X Hit 1 4 1.0 2.0\n"),
        Format::DisksimValidate,
        2,
        "neither R nor W",
    );
    check(
        &format!("{ok}{ok}R Hit 1 4 nan 2.0\n"),
        Format::DisksimValidate,
        3,
        "service time",
    );
    check(
        "R Hit 1 4 1.0\n",
        Format::DisksimValidate,
        1,
        "expected 6 fields",
    );
}

#[test]
fn fio() {
    check(
        "fio version 9 iolog\n",
        Format::FioV3,
        1,
        "expected the header",
    );
    check(
        "fio version 3 iolog\n0 /dev/sda add\n5 /dev/sda read 100 4096\n",
        Format::FioV3,
        3,
        "not a multiple of 512",
    );
    check(
        "fio version 3 iolog\n1 /dev/sda wait 100 0\n",
        Format::FioV3,
        2,
        "not allowed in a version 3",
    );
    check(
        "fio version 2 iolog\n/dev/sda read 0 512\n/dev/sdb read 0 512\n",
        Format::FioV2,
        3,
        "one device",
    );
    check(
        "fio version 2 iolog\n/dev/sda smash 0 512\n",
        Format::FioV2,
        2,
        "unknown action 'smash'",
    );
    check(
        "fio version 3 iolog\nx /dev/sda read 0 512\n",
        Format::FioV3,
        2,
        "timestamp",
    );
}

#[test]
fn csv() {
    let head = "issue_ns,complete_ns,op,sector,sectors,flags,tag\n";
    check("a,b\n", Format::Csv, 1, "expected the header");
    check(
        &format!("{head}0,,read,1,8,,\n0,,jump,1,8,,\n"),
        Format::Csv,
        3,
        "op 'jump'",
    );
    check(
        &format!("{head}0,,read,1,8,shiny,\n"),
        Format::Csv,
        2,
        "unknown flag 'shiny'",
    );
    check(
        &format!("{head}0,,read,1,8,,\"open\n"),
        Format::Csv,
        2,
        "unterminated quote",
    );
    check(
        &format!("{head}0,,read,1\n"),
        Format::Csv,
        2,
        "expected 7 fields",
    );
}

#[test]
fn blktrace_binary_errors_name_the_byte() {
    let good = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/loop0.blktrace.1"),
    )
    .unwrap();
    // Truncated in the middle of the third record.
    let cut = &good[..48 * 2 + 20];
    let e = blktrace::records(cut, "cut.blktrace.1").unwrap_err();
    assert!(e.to_string().starts_with("cut.blktrace.1: byte "), "{e}");
    assert!(e.reason().contains("truncated"), "{e}");
    // Corrupt magic in the second record.
    let first_len = 48 + u16::from_le_bytes([good[46], good[47]]) as usize;
    let mut bad = good.clone();
    bad[first_len + 3] ^= 0xff; // the high byte of the little-endian magic
    let e = blktrace::records(&bad, "bad").unwrap_err();
    assert_eq!(e.byte_offset(), Some(first_len as u64), "{e}");
    assert!(e.reason().contains("bad magic"), "{e}");
    // An unsupported version.
    let mut v8 = good.clone();
    v8[0] = 0x08;
    let e = blktrace::records(&v8, "v8").unwrap_err();
    assert_eq!(e.byte_offset(), Some(0));
    assert!(e.reason().contains("version 0x08"), "{e}");
    // Not blktrace at all.
    let e = read_bytes(b"hello", "x", Format::Blktrace, &ReadOptions::default()).unwrap_err();
    assert!(e.reason().contains("not a blktrace file"), "{e}");
}

#[test]
fn undetectable_file_lists_formats() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("mystery");
    std::fs::write(&p, "what is this\n").unwrap();
    let e = layoutlab_trace::read_path(&p).unwrap_err();
    assert!(e.to_string().contains("disksim-validate"), "{e}");
    let e = layoutlab_trace::read_path(dir.path().join("absent.csv")).unwrap_err();
    assert!(matches!(e, TraceError::Io { .. }), "{e}");
}

#[test]
fn non_utf8_text_is_an_error_not_a_panic() {
    let e = read_bytes(
        b"fio version 3 iolog\n\xff\xfe\n",
        "b",
        Format::FioV3,
        &ReadOptions::default(),
    )
    .unwrap_err();
    assert_eq!(e.line(), Some(2));
}

#[test]
fn fuzz_finding_csv_tag_with_control_characters() {
    // Found by the csv fuzz target: a quoted tag holding NULs and a carriage return was
    // accepted, and then the CSV writer refused to write it back. Tag names now hold no
    // control characters, checked by every reader and writer.
    let head = "issue_ns,complete_ns,op,sector,sectors,flags,tag\n";
    check(
        &format!("{head}0,8,write,0,0,,\"a.,\0\r.,b\"\n"),
        Format::Csv,
        2,
        "control character",
    );
}

#[test]
fn tag_markers_with_control_characters() {
    check(
        "  bash-1 [000] ..... 1.000000: tracing_mark_write: layoutlab tag=a\x07b\n",
        Format::Tracefs,
        1,
        "control character",
    );
    check(
        "R H\x01t 1 4 1.0 2.0\n",
        Format::DisksimValidate,
        1,
        "control character",
    );
}
