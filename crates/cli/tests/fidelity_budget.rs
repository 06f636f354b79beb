//! docs/fidelity.md's error budgets (issue 27), held: the generated `budget-NAME` tables that
//! `docs/regenerate-budgets.sh` writes are rerun here where a run is affordable (the model's
//! rows are deterministic, so they must agree to the printed digit), and the refusal that keeps
//! a CPU factor off experiments that have no think time to scale.

mod common;

use common::{layoutlab, scratch, stderr};
use std::path::Path;

/// The rows of the Markdown table in the generated block `name` of docs/fidelity.md, each a list
/// of its trimmed cells (the header and the separator row left out).
fn budget_rows(name: &str) -> Vec<Vec<String>> {
    block_rows("fidelity.md", name)
}

/// The rows of the Markdown table in the generated block `name` of docs/`doc`, as
/// [`budget_rows`] gives them.
fn block_rows(doc: &str, name: &str) -> Vec<Vec<String>> {
    let block = block_text(doc, name);
    let rows = table_rows(&block);
    // At least the run as shipped and one factor switched.
    assert!(rows.len() >= 2, "{name}: {block}");
    rows
}

/// The text of the generated block `name` of docs/`doc`, between its markers.
fn block_text(doc: &str, name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(doc);
    let text = std::fs::read_to_string(path).unwrap();
    let begin = format!("<!-- BEGIN generated {name} -->");
    text.split(&begin)
        .nth(1)
        .and_then(|t| t.split("<!-- END generated").next())
        .unwrap_or_else(|| panic!("docs/{doc} has no generated block {name}"))
        .to_string()
}

/// The rows of the pipe table in `text` (its lines that start with `|`), each a list of its
/// trimmed cells, the header and the separator row left out.
fn table_rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

/// The row whose "switched to" cell (the second) starts with `prefix`.
fn row<'a>(rows: &'a [Vec<String>], prefix: &str) -> &'a [String] {
    rows.iter()
        .find(|r| r[1].starts_with(prefix))
        .unwrap_or_else(|| panic!("no row switched to '{prefix}…' in {rows:?}"))
}

fn num(cell: &str) -> f64 {
    cell.trim_matches('*')
        .trim_end_matches('+')
        .parse()
        .unwrap_or_else(|_| panic!("'{cell}' is not a number"))
}

/// `layoutlab ARGS --json -`: the result JSON (the run must succeed).
fn json(args: &[&str]) -> serde_json::Value {
    let mut a = args.to_vec();
    a.extend(["--json", "-"]);
    let o = layoutlab(&a);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The model's IOPS at `bs` in a fio-randread result, rounded as the table prints it.
fn iops(v: &serde_json::Value, bs: &str, key: &str) -> f64 {
    let x = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["bs"] == bs)
        .unwrap()[key]
        .as_f64()
        .unwrap();
    (x * 10.0).round() / 10.0
}

/// fio-randread's device rows are what the model predicts now, and the prose beside them ("8-11%
/// fewer IOPS at 4k and 16-18% fewer at 256k" on the two other drives of the era) holds.
#[test]
fn fio_randread_budget_rows_are_the_models_and_the_prose_follows_them() {
    let rows = budget_rows("budget-fio-randread");
    let dir = scratch("budget", "fio");
    let out = dir.to_str().unwrap();
    let shipped = json(&["reproduce", "fio-randread", "--out", out]);
    let sizes = [("4k", 2), ("64k", 3), ("256k", 4)];
    let check = |r: &[String], v: &serde_json::Value, key: &str| {
        for (bs, col) in sizes {
            assert_eq!(num(&r[col]), iops(v, bs, key), "{bs} in {r:?}");
        }
    };
    check(row(&rows, "sata-500g-2008, the model"), &shipped, "iops");
    check(
        row(&rows, "sata-500g-2008 as first registered"),
        &shipped,
        "as_registered_iops",
    );
    let published = &rows.last().unwrap();
    assert_eq!(published[0], "*published*");
    for (bs, col) in sizes {
        assert_eq!(
            num(&published[col]),
            shipped["published"]["iops"][bs].as_f64().unwrap()
        );
    }
    for drive in ["sata-400g-2007 ", "sata-400g-2007-alt-samsung "] {
        let name = drive.trim();
        let v = json(&["reproduce", "fio-randread", "--device", name, "--out", out]);
        check(row(&rows, drive), &v, "iops");
        let fewer = |bs: &str| 1.0 - iops(&v, bs, "iops") / iops(&shipped, bs, "iops");
        assert!(
            (0.08..0.115).contains(&fewer("4k")),
            "{name} 4k: {}",
            fewer("4k")
        );
        assert!(
            (0.16..0.185).contains(&fewer("256k")),
            "{name} 256k: {}",
            fewer("256k")
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// mkfs-overhead's model rows are what the model computes now under each mke2fs.conf, and the
/// real mke2fs rows (measured by the script) equal the model's figures for today's kernel to the
/// kilobyte, as the doc says. The real tool itself is held by crates/layout/tests/oracle_overhead.rs.
#[test]
fn mkfs_overhead_budget_rows_are_the_models_and_the_real_tools_agree() {
    let rows = budget_rows("budget-mkfs-overhead");
    let dir = scratch("budget", "mkfs");
    let out = dir.to_str().unwrap();
    let period = json(&["reproduce", "mkfs-overhead", "--out", out]);
    let today = json(&[
        "reproduce",
        "mkfs-overhead",
        "--set",
        "mke2fs_conf=e2fsprogs-1.47.0",
        "--out",
        out,
    ]);
    std::fs::remove_dir_all(&dir).unwrap();
    let journal_mib = |v: &serde_json::Value| {
        ((v["default"]["overhead"]["journal_blocks"].as_u64().unwrap() * 4096) >> 20) as f64
    };
    let df26 =
        |v: &serde_json::Value, i: usize| v["default"]["df_ext3_2_6_kb"][i].as_f64().unwrap();
    let df_today =
        |v: &serde_json::Value, key: &str| v["default"]["overhead"][key].as_f64().unwrap();
    let given_back = |v: &serde_json::Value| {
        ((v["suggested"]["df_ext3_2_6_kb"][2].as_f64().unwrap() - df26(v, 2)) / 1048576.0 * 10.0)
            .round()
            / 10.0
    };
    let cells = |r: &[String]| -> Vec<f64> { r[2..6].iter().map(|c| num(c)).collect() };
    for (prefix, v) in [
        ("the model of mke2fs 1.41.14", &period),
        ("the model of mke2fs 1.47.0", &today),
    ] {
        let r = row(&rows, prefix);
        assert_eq!(
            cells(r),
            [journal_mib(v), df26(v, 0), df26(v, 1), df26(v, 2)],
            "{r:?}"
        );
        assert_eq!(num(&r[6]), given_back(v), "{r:?}");
    }
    let today_df = |v: &serde_json::Value| {
        vec![
            journal_mib(v),
            df_today(v, "df_size_kb"),
            df_today(v, "df_used_kb"),
            df_today(v, "df_avail_kb"),
        ]
    };
    assert_eq!(cells(row(&rows, "the same file system")), today_df(&period));
    assert_eq!(cells(row(&rows, "real mke2fs 1.41.14")), today_df(&period));
    assert_eq!(cells(row(&rows, "real mke2fs 1.47")), today_df(&today));
    // The prose: today's userland makes 394,000 KiB less available (-0.5%).
    let lost = df26(&period, 2) - df26(&today, 2);
    assert!((390_000.0..400_000.0).contains(&lost), "{lost}");
}

/// `--cpu-scale` on an experiment whose operation has no think time to scale (fio,
/// mkfs-overhead) or replays at 1.0 (random-read, large-delete) is refused before any work,
/// naming the operations that use it, instead of running and printing a result the flag did not
/// change (it used to exit 0 with the same numbers).
#[test]
fn cpu_scale_is_refused_where_the_operation_does_not_use_it() {
    let dir = scratch("budget", "cpu-scale");
    for name in [
        "fio-randread",
        "mkfs-overhead",
        "random-read",
        "large-delete",
    ] {
        let out = dir.join(name);
        let o = layoutlab(&[
            "reproduce",
            name,
            "--cpu-scale",
            "2",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(!o.status.success(), "{name} accepted --cpu-scale");
        let err = stderr(&o);
        assert!(err.contains("--cpu-scale") && err.contains(name), "{err}");
        // The operations that take it are named (in the registry's order).
        for op in ["fsck", "aging", "metacluster-io"] {
            assert!(err.contains(op), "{op} not named: {err}");
        }
        assert!(
            !out.exists(),
            "{name}: the refused run wrote {}",
            out.display()
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The first two numbers of a cell: a metacluster-io cell "A → B s (C%)" (ext3-2007's and
/// ext3-metacluster's seconds), or a two-policy cell "A / B".
fn pair(cell: &str) -> (f64, f64) {
    let mut n = cell
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter(|t| !t.is_empty())
        .map(|t| t.parse::<f64>().unwrap());
    (n.next().unwrap(), n.next().unwrap())
}

/// Seconds of `policy` in benchmark `b` (with the patch's read-ahead from benchmark 2 on), from
/// a metacluster-io JSON or from replays of its traces.
fn mio_seconds(v: &serde_json::Value, b: u64, policy: &str) -> f64 {
    v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["benchmark"] == b && r["policy"] == policy && r["ind_readahead"] == (b > 1))
        .unwrap()["seconds"]
        .as_f64()
        .unwrap()
}

/// metacluster-io's device and CPU rows are replays of the shipped run's own traces: here the
/// experiment runs again at scale 1 (4-7 min here, loaded), its traces are replayed as the script
/// replays them, and
/// - a replay on the shipped preset gives the run's own seconds exactly (the rows made by
///   replaying are the experiment's pricing, one factor changed);
/// - each cell of the doc's shipped, another-drive and no-think-time rows is within 1.0 s of this
///   capture's. Two captures are two samples of the kernel's requests: the doc's earlier runs and
///   this budget's agreed within 0.3 s (176.1 against 175.8 s, benchmark 3), so 1.0 s leaves room
///   for a loaded machine while the factors it holds move cells by up to 7 s;
/// - the prose: another drive moves each change by at most 2.1 points (2.5 here, for the
///   sample), and this machine's think time adds under 1 s to any benchmark; a drive that
///   stacks writes (`--vary cache.write_segments=16`) moves ext3-2007's write by more than
///   15 s, the metacluster's by under 0.5 s and the reads by under 0.05 s.
///
/// Run it on the release build (`cargo test --release ... -- --ignored`, 1.5 min here): the
/// benchmarks' reader is this binary's own thread, so its think time is the build's CPU (a debug
/// build's came to 1.04 s on benchmark 4, 2026-11-28, against 0.4-0.6 s released).
#[test]
#[ignore = "a scale-1 capture, 1.5-7 min here; run with --release --ignored"]
fn metacluster_io_budget_rows_are_replays_of_the_shipped_traces() {
    if !common::is_root() {
        eprintln!("skipped: the experiment needs root (loop devices, mount, tracefs)");
        return;
    }
    let rows = budget_rows("budget-metacluster-io");
    let dir = scratch("budget", "mio");
    let shipped = json(&[
        "reproduce",
        "metacluster-io",
        "--scale",
        "1",
        "--out",
        dir.join("out").to_str().unwrap(),
    ]);
    let traces = dir.join("out/metacluster-io/traces");
    let replayed_in = |traces: &Path, args: &[&str]| -> serde_json::Value {
        let mut runs = Vec::new();
        for b in 1..=4u64 {
            for policy in ["ext3-2007", "ext3-metacluster"] {
                let name = if b > 1 {
                    format!("b{b}-{policy}-readahead.csv")
                } else {
                    format!("b{b}-{policy}.csv")
                };
                // Benchmark 1 is a write stream built in order: nothing kept beside it.
                let path = if b == 1 {
                    dir.join("out/metacluster-io/traces").join(&name)
                } else {
                    traces.join(&name)
                };
                let mut a = vec!["trace", "replay"];
                a.push(path.to_str().unwrap());
                a.extend(args);
                let v = json(&a);
                runs.push(serde_json::json!({
                    "benchmark": b, "policy": policy, "ind_readahead": b > 1,
                    "seconds": v["wall_seconds"].as_f64().unwrap(),
                }));
            }
        }
        serde_json::json!({ "runs": runs })
    };
    let replayed = |args: &[&str]| replayed_in(&traces, args);
    let same = replayed(&["--device", "sata-400g-2007"]);
    // The reads in the order the capture took them (traces/capture-order/).
    let order = replayed_in(
        &traces.join("capture-order"),
        &["--device", "sata-400g-2007"],
    );
    let alt = replayed(&["--device", "sata-400g-2007-alt-samsung"]);
    let cpu0 = replayed(&["--device", "sata-400g-2007", "--cpu-scale", "0"]);
    let stack = replayed(&[
        "--device",
        "sata-400g-2007",
        "--vary",
        "cache.write_segments=16",
    ]);
    std::fs::remove_dir_all(&dir).unwrap();
    let policies = ["ext3-2007", "ext3-metacluster"];
    for b in 1..=4u64 {
        for p in policies {
            let (run, again) = (mio_seconds(&shipped, b, p), mio_seconds(&same, b, p));
            assert!((run - again).abs() < 1e-6, "b{b} {p}: {run} vs {again}");
        }
    }
    for (prefix, v) in [
        ("sata-400g-2007, with", &shipped),
        ("sata-400g-2007-alt-samsung", &alt),
        ("no think time", &cpu0),
        ("every buffer segment may hold write data", &stack),
        ("today's kernel's, as captured", &order),
    ] {
        let r = row(&rows, prefix);
        for b in 1..=4u64 {
            if r[1 + b as usize].starts_with('—') {
                // The order row's write: a stream built in order, nothing to reorder.
                assert!(
                    prefix.starts_with("today's") && b == 1,
                    "{prefix} b{b}: {r:?}"
                );
                continue;
            }
            let (old, meta) = pair(&r[1 + b as usize]);
            for (doc, p) in [(old, policies[0]), (meta, policies[1])] {
                let now = mio_seconds(v, b, p);
                assert!(
                    (doc - now).abs() <= 1.0,
                    "{prefix} b{b} {p}: doc {doc}, now {now}"
                );
            }
        }
    }
    let change = |v: &serde_json::Value, b: u64| {
        100.0 * (mio_seconds(v, b, policies[1]) / mio_seconds(v, b, policies[0]) - 1.0)
    };
    for b in 1..=4u64 {
        let moved = (change(&alt, b) - change(&shipped, b)).abs();
        assert!(
            moved <= 2.5,
            "b{b}: another drive moves the change by {moved} points"
        );
        for p in policies {
            let cpu = mio_seconds(&shipped, b, p) - mio_seconds(&cpu0, b, p);
            assert!(cpu.abs() < 1.0, "b{b} {p}: think time {cpu} s");
            // Write cache stacking moves writes: the read benchmarks' few journal writes (0-5
            // per trace) moved them by at most 0.017 s in the doc's run.
            if b > 1 {
                let moved = mio_seconds(&stack, b, p) - mio_seconds(&shipped, b, p);
                assert!(
                    moved.abs() < 0.05,
                    "b{b} {p}: stacking moved a read by {moved} s"
                );
            }
        }
    }
    // Today's order costs the 2007 layout's sequential read more than a revolution per
    // indirect block (2389 at scale 1, 8.33 ms each), and leaves the metacluster's reads and
    // every write as they are (nothing of theirs is moved).
    let cost = |b: u64, p: &str| mio_seconds(&order, b, p) - mio_seconds(&shipped, b, p);
    assert!(
        cost(2, policies[0]) > 2389.0 * 60.0 / 7200.0,
        "{}",
        cost(2, policies[0])
    );
    for b in 1..=4u64 {
        assert!(
            cost(b, policies[1]).abs() < 1e-6,
            "b{b}: {}",
            cost(b, policies[1])
        );
    }
    assert!(cost(1, policies[0]).abs() < 1e-6);
    // The prose (fidelity.md, metacluster-io.md): stacking takes ext3-2007's breaks off (more
    // than 15 s) and leaves the metacluster's write within 0.5 s.
    let saved = |p: &str| mio_seconds(&shipped, 1, p) - mio_seconds(&stack, 1, p);
    assert!(
        saved(policies[0]) > 15.0,
        "ext3-2007: {}",
        saved(policies[0])
    );
    assert!(
        saved(policies[1]).abs() < 0.5,
        "metacluster: {}",
        saved(policies[1])
    );
}

/// docs/fidelity.md with every run of whitespace one space, so that a sentence the tests look
/// for does not depend on where the doc's lines break.
fn doc_prose() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/fidelity.md");
    let text = std::fs::read_to_string(path).unwrap();
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The row of a generated block whose first cell is `first`.
fn row_named<'a>(rows: &'a [Vec<String>], first: &str) -> &'a [String] {
    rows.iter()
        .find(|r| r[0] == first)
        .unwrap_or_else(|| panic!("no row '{first}' in {rows:?}"))
}

/// Rounds `x` to `digits` decimals, as the generated tables print it.
fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// metacluster-fsck's tree factor, bench5 against the post's file list: the generated block is
/// what `layoutlab plan` makes of bench5 now under each policy (plans are deterministic, so to
/// the printed digit), and the prose beside it follows: the 350th file keeps 3.2 GB (ext3-2007)
/// and 0.48 GB (metacluster) of its 10 GB, so the band the post's unstated fullness leaves is at
/// most 6.8 GB, 1.7% of the 400 GB.
#[test]
fn bench5_block_is_the_plans_and_the_prose_follows() {
    let rows = budget_rows("metacluster-fsck-bench5");
    let mut kept = Vec::new();
    for policy in ["ext3-2007", "ext3-metacluster"] {
        let plan = json(&["plan", "--workload", "bench5", "--policy", policy]);
        let sizes: Vec<f64> = plan["inodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["kind"] == "File")
            .map(|i| i["size_bytes"].as_f64().unwrap())
            .collect();
        let data_gb = sizes.iter().sum::<f64>() / 1e9;
        let last_gb = sizes.last().unwrap() / 1e9;
        let r = row_named(&rows, policy);
        assert_eq!(num(&r[2]), sizes.len() as f64, "{r:?}");
        assert_eq!(num(&r[3]), round(data_gb, 1), "{r:?}");
        assert_eq!(num(&r[4]), round(last_gb, 2), "{r:?}");
        assert_eq!(num(&r[5]), round(400.0 - data_gb, 1), "{r:?}");
        kept.push(last_gb);
    }
    let text = doc_prose();
    let claim = format!(
        "the 350th file keeps {:.1} GB of its 10 GB; in the metacluster plan it keeps {:.2} GB",
        kept[0], kept[1]
    );
    assert!(text.contains(&claim), "the prose no longer says: {claim}");
    let band = format!(
        "at most {:.1} GB ({:.1}% of the 400 GB)",
        10.0 - kept[0],
        (10.0 - kept[0]) / 400.0 * 100.0
    );
    assert!(text.contains(&band), "the prose no longer says: {band}");
}

/// metacluster-fsck's tree band, the list whole against as shipped (two scale-1 captures on a
/// 423 GB variant of the drive, not rerun here): the block's band row is its two rows'
/// difference, and the prose beside it follows the block.
#[test]
fn metacluster_fsck_band_row_and_prose_follow_the_runs() {
    let rows = budget_rows("metacluster-fsck-band");
    let shipped = row_named(
        &rows,
        "as shipped: the post's 400 GB drive, the 350th file cut short",
    );
    let whole = row_named(&rows, "the list whole (`--set fs_gb=420`)");
    let band = row_named(&rows, "**band: whole − shipped**");
    let s = |r: &[String], i: usize| num(&r[i]);
    let reduction = |r: &[String]| num(r[6].trim_end_matches('%'));
    // The band row is computed from the runs' unrounded figures, the test has the rounded rows:
    // each printed figure is within 0.05 of its value, so a difference of two of them is within
    // 0.1 of the true one, and the band's own printing adds 0.05.
    let slack = 0.15 + 1e-9;
    // "26.1 (3.3%)": seconds and percent.
    let band_cell = |i: usize| -> (f64, f64) {
        let (secs, pct) = band[i].split_once(" (").unwrap();
        (num(secs), num(pct.trim_end_matches("%)")))
    };
    for (i, col) in [(4, "ext3-2007"), (5, "ext3-metacluster")] {
        let (secs, pct) = band_cell(i);
        let diff = s(whole, i) - s(shipped, i);
        assert!((secs - diff).abs() <= slack, "{col}: {band:?}");
        // A percent of about 800 or 220 s moves by far less than 0.05 with 0.1 s of rounding.
        assert!(
            (pct - (s(whole, i) / s(shipped, i) - 1.0) * 100.0).abs() <= 0.1,
            "{col}: {band:?}"
        );
    }
    let points = num(band[6].trim_end_matches(" points"));
    assert!(
        (points - (reduction(whole) - reduction(shipped))).abs() <= slack,
        "{band:?}"
    );
    // Pass 1 of ext3-2007: "A / B" MB.
    let pass1 = |r: &[String]| num(r[3].split(" / ").next().unwrap());
    let text = doc_prose();
    for claim in [
        format!(
            "The list whole moves ext3-2007 by {:+.1}% and the metacluster by {:+.1}%, the reduction by {:.1} points.",
            band_cell(4).1,
            band_cell(5).1,
            points
        ),
        format!(
            "reads {} MB against {}, {:+.1}%)",
            thousands(pass1(whole)),
            thousands(pass1(shipped)),
            (pass1(whole) / pass1(shipped) - 1.0) * 100.0
        ),
    ] {
        assert!(text.contains(&claim), "the prose no longer says: {claim}");
    }
}

/// `x` rounded, as the prose writes a whole number: 7,398.
fn thousands(x: f64) -> String {
    let digits = format!("{}", x.round() as i64);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `x` (1,000 to 999,999) with a thousands comma and one decimal, as the prose writes seconds.
fn tenths(x: f64) -> String {
    let t = (x * 10.0).round() as u64;
    format!("{},{:03}.{}", t / 10_000, t / 10 % 1000, t % 10)
}

/// A generated cell as a number: "≤ 72.6" is 72.6; "—" (no such target) and "not run" are None.
fn cell(c: &str) -> Option<f64> {
    c.trim_start_matches("≤ ").parse().ok()
}

/// random-read at scale 1: the prose beside the generated block follows the block (five 1.9 TB
/// runs of 2-16 min are not rerun here; the block is what the script wrote from them): how far
/// buffered against O_DIRECT, the other drive, today's kernel writing ext4's file, today's
/// bitmap prefetch, closed loop (against the shipped run and against its own stream) and the CPU
/// bound move the shipped seconds.
#[test]
fn random_read_budget_prose_follows_its_block() {
    let rows = budget_rows("budget-random-read");
    let cells = |r: &[String]| -> Vec<f64> {
        r[2..8]
            .iter()
            .map(|c| cell(c).unwrap_or_else(|| panic!("'{c}' in {r:?}")))
            .collect()
    };
    let shipped = cells(row(&rows, "sata-2t-5400-2010"));
    let bound = cells(row(&rows, "the reads' wall time here"));
    // Columns: ext3, ext4, raw, each buffered then direct.
    let (mut moved, mut of) = (0.0f64, 0.0f64);
    for t in 0..3 {
        let (b, d) = (shipped[2 * t], shipped[2 * t + 1]);
        if (b - d).abs() > moved {
            (moved, of) = ((b - d).abs(), b.min(d));
        }
    }
    let cpu = |i: usize| bound[i] / shipped[i] * 100.0;
    let vs = |r: &[f64], i: usize| (r[i] / shipped[i] - 1.0) * 100.0;
    let alt = cells(row(&rows, "sata-2t-5400-2010-alt-wd"));
    let (alt_lo, alt_hi) = (0..6).fold((f64::MAX, f64::MIN), |(lo, hi), i| {
        (lo.min(vs(&alt, i)), hi.max(vs(&alt, i)))
    });
    let prefetch = cells(row(&rows, "mounted without `no_prefetch_block_bitmaps`"));
    let others = [0, 1, 4, 5]
        .iter()
        .map(|&i| vs(&prefetch, i).abs())
        .fold(0.0f64, f64::max);
    let rot = cells(row(&rows, "the capture device non-rotational"));
    let rot_most = (0..6).map(|i| vs(&rot, i).abs()).fold(0.0f64, f64::max);
    let closed = cells(row(&rows, "the reads on the emulated disk"));
    let closed_replay = cells(row(&rows, "the same capture's stream replayed open loop"));
    let closed_rest = (2..6).map(|i| vs(&closed, i)).fold(f64::MIN, f64::max);
    let (own_lo, own_hi) = (0..6).fold((f64::MAX, f64::MIN), |(lo, hi), i| {
        let d = (closed[i] / closed_replay[i] - 1.0) * 100.0;
        (lo.min(d), hi.max(d))
    });
    // Who writes ext4: only ext4's columns run (ext3 is 2007's policy, the raw device has no
    // layout).
    let kernel = row(&rows, "today's kernel writes ext4's file");
    assert_eq!(
        [&kernel[2], &kernel[3], &kernel[6], &kernel[7]],
        ["—", "—", "—", "—"],
        "{kernel:?}"
    );
    let kern = |i: usize| (cell(&kernel[2 + i]).unwrap() / shipped[i] - 1.0) * 100.0;
    // The preset's own values: each cell "lowest … highest", the shipped seconds between.
    let values: Vec<(f64, f64)> = row(&rows, "the 22 variants of sata-2t-5400-2010")[2..8]
        .iter()
        .map(|c| {
            let (a, b) = c.split_once(" … ").unwrap_or_else(|| panic!("'{c}'"));
            (num(a), num(b))
        })
        .collect();
    for ((a, b), s) in values.iter().zip(&shipped) {
        assert!(a - 0.05 <= *s && *s <= b + 0.05, "{s} outside {a} … {b}");
    }
    let (values_lo, values_hi) = values
        .iter()
        .zip(&shipped)
        .fold((f64::MAX, f64::MIN), |(lo, hi), ((a, b), s)| {
            (lo.min((a / s - 1.0) * 100.0), hi.max((b / s - 1.0) * 100.0))
        });
    let text = doc_prose();
    for claim in [
        format!(
            "Today's kernel writing ext4's file moves ext4 by {:+.1}% and {:+.1}%",
            kern(2),
            kern(3)
        ),
        format!(
            "({} and {} s against the engine's {} and {}",
            tenths(cell(&kernel[4]).unwrap()),
            tenths(cell(&kernel[5]).unwrap()),
            tenths(shipped[2]),
            tenths(shipped[3])
        ),
        format!("The preset's own values move every cell by {values_lo:+.1}% to {values_hi:+.1}%"),
        format!(
            "(ext3 {} s, the raw device {} s direct)",
            tenths(values[0].1),
            tenths(values[5].1)
        ),
        format!("The rotational flag alone moves every cell by at most {rot_most:.1}%"),
        format!(
            "moves each target by at most {moved:.1} s of {}-{} s (",
            thousands(shipped.iter().cloned().fold(f64::MAX, f64::min)),
            thousands(shipped.iter().cloned().fold(f64::MIN, f64::max))
        ),
        format!("The other drive moves every cell by {alt_lo:+.1}% to {alt_hi:+.1}%"),
        format!(
            "Today's block-bitmap prefetch moves ext4 by {:+.1}% and {:+.1}%, ext3 and the raw device by at most {others:.1}%",
            vs(&prefetch, 2),
            vs(&prefetch, 3)
        ),
        format!("({:.2}%)", moved / of * 100.0),
        format!(
            "This machine's CPU adds at most {:.1}% (ext3 buffered; {:.1}% direct), {:.1}% (raw buffered; {:.1}% direct) and {:.1}% (ext4)",
            cpu(0),
            cpu(1),
            cpu(4),
            cpu(5),
            cpu(2).max(cpu(3))
        ),
        format!(
            "Closed loop moves ext3 by {:+.1}% and {:+.1}%, ext4 and the raw device by at most {closed_rest:+.1}%",
            vs(&closed, 0),
            vs(&closed, 1)
        ),
        format!("its own stream replayed open loop the emulated disk measured {own_lo:+.1}% to {own_hi:+.1}%"),
    ] {
        assert!(text.contains(&claim), "the prose no longer says: {claim}");
    }
}

/// The cells of a large-delete row (after the factor and the switch), as generated.
fn ld_cells(r: &[String]) -> Vec<Option<f64>> {
    r[2..].iter().map(|c| cell(c)).collect()
}

/// large-delete at scale 1 (the ext file systems; XFS and btrfs, 0.1 until 2026-11-28): the
/// blocks are filled (every cell of the run as shipped is a number), a row is either measured in
/// every column its run has or marked "not run" in all (what `REUSE_ONLY=1` splices), and the
/// prose beside them follows the blocks: the most this machine's CPU can add to a delete, and how
/// far another drive, the rotational flag alone and (ext) today's kernel writing ext4 move one
/// (or that it was not run).
/// A block none of whose runs was made says so in its prose.
#[test]
fn large_delete_budget_blocks_are_filled_and_the_prose_follows() {
    let text = doc_prose();
    for (name, label) in [
        ("budget-large-delete", "At scale 1"),
        (
            "budget-large-delete-xfs-btrfs",
            "For XFS and btrfs at scale 1",
        ),
    ] {
        let rows = budget_rows(name);
        if row(&rows, "sata-400g-2007")[2] == "not run" {
            // Nothing of this block ran: every row says so, and the prose too.
            assert!(
                rows.iter().all(|r| r[2..].iter().all(|c| c == "not run")),
                "{name}: {rows:?}"
            );
            let claim = format!("{label}, nothing was run");
            assert!(text.contains(&claim), "the prose no longer says: {claim}");
            continue;
        }
        let shipped: Vec<f64> = ld_cells(row(&rows, "sata-400g-2007"))
            .into_iter()
            .map(|c| c.unwrap_or_else(|| panic!("{name}: a shipped cell is not a number")))
            .collect();
        for r in &rows {
            let run: Vec<&String> = r[2..].iter().filter(|c| *c != "—").collect();
            let not_run = run.iter().filter(|c| **c == "not run").count();
            assert!(not_run == 0 || not_run == run.len(), "{name}: {r:?}");
            if not_run == 0 {
                assert!(
                    run.iter()
                        .all(|c| cell(c).is_some() || c.split_once(" … ").is_some()),
                    "{name}: {r:?}"
                );
            }
        }
        // Each measured cell of a row against the shipped one, in percent of it.
        let pct = |prefix: &str| -> Vec<f64> {
            ld_cells(row(&rows, prefix))
                .iter()
                .zip(&shipped)
                .filter_map(|(c, s)| c.map(|c| c / s * 100.0))
                .collect()
        };
        let cpu = pct("the delete's wall time here")
            .into_iter()
            .fold(0.0f64, f64::max);
        let mut claims = vec![format!(
            "{label}, this machine's CPU can add at most {cpu:.1}% to a delete"
        )];
        let mut factors = vec![
            ("sata-400g-2007-alt-samsung", "another drive"),
            ("the devices non-rotational", "the rotational flag alone"),
        ];
        if name == "budget-large-delete" {
            factors.push(("today's kernel writes", "today's kernel writing ext4"));
        }
        for (prefix, factor) in factors {
            let moved = pct(prefix);
            claims.push(if moved.is_empty() {
                format!("{label}, {factor} was not run")
            } else {
                let (lo, hi) = moved
                    .iter()
                    .fold((f64::MAX, f64::MIN), |(lo, hi), &p| (lo.min(p), hi.max(p)));
                format!(
                    "{label}, {factor} moves a delete by {:+.1}% to {:+.1}%",
                    lo - 100.0,
                    hi - 100.0
                )
            });
        }
        // The preset's own values: each cell "lowest … highest" of the variants' replays, the
        // shipped seconds between them.
        let values = row(&rows, "the 19 variants of sata-400g-2007");
        let (mut lo, mut hi) = (f64::MAX, f64::MIN);
        for (c, s) in values[2..].iter().zip(&shipped) {
            let (a, b) = c
                .split_once(" … ")
                .unwrap_or_else(|| panic!("{name}: '{c}' is not a range"));
            let (a, b) = (num(a), num(b));
            assert!(a - 0.05 <= *s && *s <= b + 0.05, "{name}: {s} outside {c}");
            (lo, hi) = (lo.min(a / s * 100.0), hi.max(b / s * 100.0));
        }
        claims.push(format!(
            "{label}, the preset's own values move a delete by {:+.1}% to {:+.1}%",
            lo - 100.0,
            hi - 100.0
        ));
        for claim in claims {
            assert!(text.contains(&claim), "the prose no longer says: {claim}");
        }
    }
}

/// large-delete's ext3 cells at scale 1 are what a new capture gives: ext3's file is laid out by
/// the ext3-2007 policy and written through libext2fs, so a delete reads and writes the same
/// sectors every time (197,560 and 12,536 for the contiguous file, as the doc says), and its
/// seconds are within 0.5 s of the block's. Band: two captures of the contiguous delete were
/// priced 163.00 and 163.06 s (the doc, 0.06 s apart); 0.5 s leaves room for the sample while
/// the fragmented file alone moves a cell by 27 s.
#[test]
#[ignore = "two 100 GB ext3 deletes at scale 1, 10-20 min; run with --ignored"]
fn large_delete_ext3_cells_are_a_new_captures() {
    assert!(
        common::is_root(),
        "the experiment needs root (loop devices, mount, tracefs)"
    );
    let rows = budget_rows("budget-large-delete");
    let doc = ld_cells(row(&rows, "sata-400g-2007"));
    let dir = scratch("budget", "ld-ext3");
    let v = json(&[
        "reproduce",
        "large-delete",
        "--scale",
        "1",
        "--fs",
        "ext3",
        "--out",
        dir.join("out").to_str().unwrap(),
    ]);
    std::fs::remove_dir_all(&dir).unwrap();
    let runs = v["runs"].as_array().unwrap();
    for (col, variant) in ["contiguous", "fragmented"].iter().enumerate() {
        let r = runs
            .iter()
            .find(|r| r["fs"] == "ext3" && r["variant"] == *variant)
            .unwrap();
        let now = r["seconds"].as_f64().unwrap();
        let was = doc[col].unwrap();
        assert!(
            (now - was).abs() <= 0.5,
            "ext3 {variant}: doc {was}, now {now}"
        );
        if *variant == "contiguous" {
            assert_eq!(r["sectors_read"], 197_560, "{r}");
            assert_eq!(r["sectors_written"], 12_536, "{r}");
        }
    }
    assert!(
        doc_prose().contains("with the same 197,560 read and 12,536 written"),
        "the prose no longer gives the sectors this test holds"
    );
}

/// ext4-fsck-allocator's tree factor: the typed budget row and the prose of section 1 give the
/// figures of the generated tree block (`docs/regenerate-figures.sh` writes it from a real
/// e2fsck -v -tt of our two images): pass 2's and pass 1's MB, the non-contiguous directories
/// and the depth-1 extent trees, each beside the post's.
#[test]
fn ext4_fsck_allocator_tree_prose_follows_the_generated_tree_block() {
    let rows = budget_rows("ext4-fsck-allocator-tree");
    // Columns: ext4-2008, published, ext4-2009, published.
    let cells = |first: &str| -> [f64; 4] {
        let r = row_named(&rows, first);
        [num(&r[1]), num(&r[2]), num(&r[3]), num(&r[4])]
    };
    let range = |c: [f64; 4]| {
        let (lo, hi) = (c[0].min(c[2]), c[0].max(c[2]));
        if lo == hi {
            format!("{lo}")
        } else {
            format!("{lo}-{hi}")
        }
    };
    let pass2 = cells("MB e2fsck read, pass 2");
    let pass1 = cells("MB e2fsck read, pass 1");
    let dirs = cells("non-contiguous directories");
    let depth1 = cells("inodes with extents, depth 1");
    let text = doc_prose();
    for claim in [
        format!(
            "| tree | e2fsck's own MB, pass 2 (below) | {} MB | {} MB | (post: {} MB) |",
            pass2[0], pass2[2], pass2[1]
        ),
        format!(
            "Pass 2 reads {} MB by e2fsck's own count; the post's read {} MB.",
            range(pass2),
            pass2[1]
        ),
        format!(
            "Pass 1: {} MB here, {} in the post.",
            range(pass1),
            pass1[1]
        ),
        format!(
            "Non-contiguous directories: {} here, {} in the post.",
            range(dirs),
            dirs[1]
        ),
        format!(
            "Extent depth 1: {} here, {} in the post.",
            range(depth1),
            depth1[1]
        ),
    ] {
        assert!(text.contains(&claim), "the doc no longer says: {claim}");
    }
}

/// The experiment file experiments/NAME.toml.
fn experiment_file(name: &str) -> toml::Table {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../experiments")
        .join(format!("{name}.toml"));
    toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A seconds cell of an fsck budget row: "807.8 s" and "811.3 s (+0.4%)" are 807.8 and 811.3,
/// "not run" is None.
fn secs(c: &str) -> Option<f64> {
    if c == "not run" {
        return None;
    }
    let n = c
        .split(" s")
        .next()
        .unwrap_or_else(|| panic!("'{c}' is not seconds"));
    Some(num(n))
}

/// The "(+x%)" of a seconds cell.
fn pct_of(c: &str) -> f64 {
    let p = c
        .split('(')
        .nth(1)
        .and_then(|t| t.strip_suffix("%)"))
        .unwrap_or_else(|| panic!("'{c}' has no (x%)"));
    num(p.trim_start_matches('+'))
}

/// The rows of `rows` whose factor (first cell) is `factor`, in order.
fn rows_of<'a>(rows: &'a [Vec<String>], factor: &str) -> Vec<&'a [String]> {
    rows.iter()
        .filter(|r| r[0] == factor)
        .map(|r| r.as_slice())
        .collect()
}

/// The three fsck budget blocks (`ONLY=fsck docs/regenerate-budgets.sh`) hold what their
/// experiment files and runs say, and agree with docs/emulate.md's closed-loop block, which the
/// same runs write:
/// - every row either has its three figures or says "not run" in all of them, and each
///   "(x%)" is the row's seconds against the run as shipped (to the printed rounding);
/// - the another-drive rows are the file's `alternatives`, the preset-values row replays as
///   many variants as the file's `[[sensitivity]]` lists, the checker row runs the file's
///   `period_e2fsprogs`, and the published row is the file's (none for ext3-vs-ext4-fsck,
///   whose published ext3 column is kept aside);
/// - the shipped and closed-loop rows equal the emulate.md block's plain-capture, replay and
///   measured columns, and there the emulator served exactly the requests the kernel traced.
#[test]
fn fsck_budget_blocks_follow_their_experiment_files_and_the_closed_loop_block() {
    let emulate = block_rows("emulate.md", "closed-loop-fsck");
    for exp in [
        "metacluster-fsck",
        "ext4-fsck-allocator",
        "ext3-vs-ext4-fsck",
    ] {
        let rows = budget_rows(&format!("budget-{exp}"));
        let file = experiment_file(exp);
        let shipped = row_named(&rows, "as shipped");
        let base = [secs(&shipped[2]).unwrap(), secs(&shipped[3]).unwrap()];
        // A reduction printed to 0.1 point from seconds printed to 0.1 s.
        let reduction = |a: f64, b: f64| 100.0 * (1.0 - b / a);
        let slack = |a: f64, b: f64| 0.06 + 100.0 * 0.05 * (1.0 / a + b / (a * a));
        assert!(
            (num(shipped[4].trim_end_matches('%')) - reduction(base[0], base[1])).abs()
                <= slack(base[0], base[1]),
            "{exp}: {shipped:?}"
        );
        for r in &rows {
            if ["as shipped", "device: preset values", "tree", "*published*"]
                .contains(&r[0].as_str())
            {
                continue;
            }
            let run = r[2..5].iter().filter(|c| *c != "not run").count();
            assert!(run == 0 || run == 3, "{exp}: {r:?}");
            if run == 0 {
                continue;
            }
            for (col, b) in [(2, base[0]), (3, base[1])] {
                let s = secs(&r[col]).unwrap();
                // Both printed to 0.1 s: the percentage is exact to within their rounding.
                let slack = 100.0 * 0.05 * (1.0 / b + s / (b * b)) + 0.06;
                assert!(
                    (pct_of(&r[col]) - 100.0 * (s / b - 1.0)).abs() <= slack,
                    "{exp}: {r:?}"
                );
            }
        }
        let alternatives: Vec<&str> = file["alternatives"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let drives: Vec<String> = rows_of(&rows, "device: another drive")
            .iter()
            .map(|r| r[1].split(' ').next().unwrap().to_string())
            .collect();
        assert_eq!(drives, alternatives, "{exp}");
        let other_classes: Vec<&str> = file
            .get("other_classes")
            .and_then(|v| v.as_array())
            .map(|a| a.iter().map(|v| v.as_str().unwrap()).collect())
            .unwrap_or_default();
        let classes: Vec<String> = rows_of(&rows, "device: another class")
            .iter()
            .map(|r| r[1].split(' ').next().unwrap().to_string())
            .collect();
        assert_eq!(classes, other_classes, "{exp}");
        let variants: usize = file["sensitivity"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["set"].as_array().unwrap().len())
            .sum();
        let preset = row_named(&rows, "device: preset values");
        assert!(
            preset[1].starts_with(&format!("`--sensitivity`: {variants} variants")),
            "{exp}: {preset:?}"
        );
        // The CPU rows: no think time, then each period CPU the file names (the shipped run's
        // traces replayed, so no load of their own).
        let period_cpus: Vec<String> = file
            .get("period_cpus")
            .and_then(|v| v.as_array())
            .map(|a| a.iter().map(|v| v.as_str().unwrap().to_string()).collect())
            .unwrap_or_default();
        let cpu = rows_of(&rows, "CPU");
        assert_eq!(cpu.len(), 1 + period_cpus.len(), "{exp}: {cpu:?}");
        assert!(cpu[0][1].starts_with("no think time"), "{exp}: {cpu:?}");
        for (r, name) in cpu[1..].iter().zip(&period_cpus) {
            assert!(
                r[1].contains(&format!("`--cpu-scale {name}`")) && r[5].is_empty(),
                "{exp}: {r:?}"
            );
        }
        let period = file["fsck"]["period_e2fsprogs"].as_str().unwrap();
        let checker = row_named(&rows, "checker");
        assert!(
            checker[1].starts_with(&format!("e2fsck {period} ")),
            "{exp}: {checker:?}"
        );
        let published = rows_of(&rows, "*published*");
        if exp == "ext3-vs-ext4-fsck" {
            assert!(published.is_empty(), "{exp}: {published:?}");
        } else {
            let policies = file["fsck"]["policies"].as_array().unwrap();
            let total = &file["published"]["total_seconds"];
            let r = published[0];
            for (i, p) in policies.iter().enumerate() {
                let want = total[p.as_str().unwrap()].as_float().unwrap();
                assert_eq!(secs(r[2 + i].trim_matches('*')), Some(want), "{exp}: {r:?}");
            }
        }
        let closed = rows_of(&rows, "request stream: closed loop");
        assert_eq!(closed.len(), 2, "{exp}");
        if closed[0][2] == "not run" {
            continue;
        }
        // The closed-loop block's rows of this experiment at the budget's scale (1) and K.
        let k = closed[0][1]
            .split("`--closed-loop ")
            .nth(1)
            .and_then(|t| t.split('`').next())
            .unwrap_or_else(|| panic!("{exp}: no K in {:?}", closed[0]));
        let cl: Vec<&Vec<String>> = emulate
            .iter()
            .filter(|r| r[0] == exp && r[1] == "1" && r[2] == k)
            .collect();
        assert_eq!(cl.len(), 2, "{exp}: {emulate:?}");
        for (i, e) in cl.iter().enumerate() {
            // The same seconds, printed to 0.1 s here and to 0.01 s there.
            let same = |tenth: f64, hundredth: &str| (tenth - num(hundredth)).abs() <= 0.0501;
            assert!(same(base[i], &e[6]), "{exp}: {e:?}");
            assert!(
                same(secs(&closed[0][2 + i]).unwrap(), &e[8]),
                "{exp}: {e:?}"
            );
            assert!(
                same(secs(&closed[1][2 + i]).unwrap(), &e[7]),
                "{exp}: {e:?}"
            );
        }
    }
    for e in &emulate {
        if e[4] == "not run" {
            continue;
        }
        // "N (M)": requests the kernel traced on the emulated disk, and the emulator served.
        let (traced, served) = e[5].split_once(" (").unwrap();
        assert_eq!(traced, served.trim_end_matches(')'), "{e:?}");
    }
}

/// A reduction cell "72.4%" as a number of points.
fn points(c: &str) -> f64 {
    num(c.trim_matches('*').trim_end_matches('%'))
}

/// The prose beside the three fsck blocks follows them:
/// - for each, which factor switched alone moves the reduction most, by how many points, and how
///   far every other one moves it at most (the printed reductions), and, where the post gives a
///   reduction, how far below ours it is;
/// - docs/emulate.md's closed-loop block: for each experiment, how far closed loop moves the
///   requests and the open-loop replay against the plain capture, and where the measured time
///   lies against its own stream's replay; ext3-vs-ext4-fsck's ext4-2008 requests in both.
#[test]
fn fsck_budget_prose_follows_the_blocks() {
    let text = doc_prose();
    for exp in [
        "metacluster-fsck",
        "ext4-fsck-allocator",
        "ext3-vs-ext4-fsck",
    ] {
        let rows = budget_rows(&format!("budget-{exp}"));
        let shipped = points(&row_named(&rows, "as shipped")[4]);
        let mut moves: Vec<(f64, &str)> = rows
            .iter()
            .filter(|r| {
                ![
                    "as shipped",
                    "none (a second capture)",
                    "device: preset values",
                    "tree",
                    "*published*",
                ]
                .contains(&r[0].as_str())
                    && r[4] != "not run"
            })
            .map(|r| ((points(&r[4]) - shipped).abs(), r[0].as_str()))
            .collect();
        moves.sort_by(|a, b| b.0.total_cmp(&a.0));
        let again = points(&row_named(&rows, "none (a second capture)")[4]);
        let claim = format!(
            "{exp}: switched alone, the largest move of the reduction is {:.1} points ({}); every other factor moves it by at most {:.1} points; a second capture of the run as shipped moved it by {:.1}",
            moves[0].0,
            moves[0].1,
            moves[1].0,
            (again - shipped).abs()
        );
        assert!(text.contains(&claim), "the prose no longer says: {claim}");
        if let Some(p) = rows_of(&rows, "*published*").first() {
            let published = points(&p[4]);
            let claim = format!(
                "The post's reduction is {:.1} points below ours",
                shipped - published
            );
            assert!(text.contains(&claim), "the prose no longer says: {claim}");
            // "33.6 … 77.8%": the lowest and highest reduction of the preset's variants.
            let span = &row_named(&rows, "device: preset values")[4];
            let lowest = num(span.split(' ').next().unwrap());
            let claim = if lowest > published {
                format!(
                    "{exp}'s preset-values row: even its lowest reduction stays above the post's"
                )
            } else {
                format!("{exp}'s preset-values row spans the post's reduction")
            };
            assert!(text.contains(&claim), "the prose no longer says: {claim}");
        }
        if exp == "ext4-fsck-allocator" {
            let cpu = rows_of(&rows, "CPU");
            let claim = format!(
                "moves ext4-2008 by {:+.1}% and ext4-2009 by {:+.1}%",
                pct_of(&cpu[0][2]),
                pct_of(&cpu[0][3])
            );
            assert!(text.contains(&claim), "the prose no longer says: {claim}");
        }
    }
    let emulate = block_rows("emulate.md", "closed-loop-fsck");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/emulate.md");
    let emulate_text = std::fs::read_to_string(path)
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for exp in [
        "metacluster-fsck",
        "ext4-fsck-allocator",
        "ext3-vs-ext4-fsck",
    ] {
        let rows: Vec<&Vec<String>> = emulate
            .iter()
            .filter(|r| r[0] == exp && r[4] != "not run")
            .collect();
        let requests = |c: &str| num(c.split(' ').next().unwrap());
        let most = |f: &dyn Fn(&Vec<String>) -> f64| {
            rows.iter().map(|r| f(r).abs()).fold(0.0f64, f64::max)
        };
        let req = most(&|r| 100.0 * (requests(&r[5]) / num(&r[4]) - 1.0));
        let rep = most(&|r| 100.0 * (num(&r[7]) / num(&r[6]) - 1.0));
        let measured: Vec<f64> = rows
            .iter()
            .map(|r| num(r[9].trim_start_matches('+').trim_end_matches('%')))
            .collect();
        let lo = measured.iter().copied().fold(f64::MAX, f64::min);
        let hi = measured.iter().copied().fold(f64::MIN, f64::max);
        let claim = format!(
            "**{exp}**: closed loop's requests are within {req:.1}% of the plain capture's and the replays of its streams within {rep:.1}%; the measured time lies {lo:+.1}% to {hi:+.1}% from its own stream's replay"
        );
        assert!(
            emulate_text.contains(&claim),
            "docs/emulate.md no longer says: {claim}"
        );
    }
    let e4 = emulate
        .iter()
        .find(|r| r[0] == "ext3-vs-ext4-fsck" && r[3] == "ext4-2008")
        .unwrap();
    let claim = format!(
        "ext4-2008 issued {} requests on the emulated disk against {} on the plain loop device",
        e4[5].split(' ').next().unwrap(),
        e4[4]
    );
    assert!(
        emulate_text.contains(&claim),
        "docs/emulate.md no longer says: {claim}"
    );
}

/// "lo" when every value is equal, else "lo–hi": how the prose gives a range of counts.
fn span(values: &[u64]) -> String {
    let lo = values.iter().min().unwrap();
    let hi = values.iter().max().unwrap();
    if lo == hi {
        format!("{lo}")
    } else {
        format!("{lo}–{hi}")
    }
}

/// A queue-block cell "POLICY: S s (N)": seconds and requests.
fn policy_cell(c: &str) -> (f64, u64) {
    let (_, rest) = c
        .split_once(": ")
        .unwrap_or_else(|| panic!("'{c}' has no policy"));
    let (s, n) = rest
        .split_once(" s (")
        .unwrap_or_else(|| panic!("'{c}' is not 'S s (N)'"));
    (num(s), num(n.trim_end_matches(')')) as u64)
}

/// Whether `red` (percent, printed to 0.1) is 1 − `b`/`a` of two seconds printed to 0.1: the
/// slack is the printed rounding of all three, carried through the ratio.
fn is_reduction_of(red: f64, a: f64, b: f64) -> bool {
    let slack = 0.06 + 100.0 * 0.05 * (1.0 / a + b / (a * a));
    (red - 100.0 * (1.0 - b / a)).abs() <= slack
}

/// The fsck experiments' queue-size block (`ONLY=queue docs/regenerate-budgets.sh`) holds what
/// the experiment files and the runs say, and the prose follows it:
/// - per experiment, two captures as shipped at the file's `os_max_sectors_kb` and its default
///   scale (metacluster-fsck also at scale 1), and one at the alternative the doc cites; each
///   reduction is the row's seconds' (to the printed rounding); every row kept its traces long
///   enough to give its largest request;
/// - for each experiment and scale, the sentence the data allow: no request as shipped was
///   larger than the alternative (so it can split none) and all three captures made the same
///   requests, or they did not (all three counts given), or how far the alternative moved the
///   requests and the reduction against a second capture.
#[test]
fn fsck_queue_block_follows_its_experiment_files_and_the_prose() {
    let rows = budget_rows("budget-fsck-queue");
    let text = doc_prose();
    let alt_kb: u64 = 128;
    assert!(
        text.contains(&format!(
            "The alternative the period kernel gave other drives is {alt_kb} KiB: libata's `ATA_MAX_SECTORS` (256 sectors"
        )),
        "the doc no longer cites the alternative queue size"
    );
    // Each experiment at its default scale, and metacluster-fsck also at the post's scale 1.
    let mut groups = Vec::new();
    for exp in [
        "metacluster-fsck",
        "ext4-fsck-allocator",
        "ext3-vs-ext4-fsck",
    ] {
        let file = experiment_file(exp);
        groups.push((exp, file["fsck"]["default_scale"].as_float().unwrap()));
    }
    groups.insert(1, ("metacluster-fsck", 1.0));
    assert_eq!(
        rows.len(),
        3 * groups.len(),
        "three rows per experiment and scale"
    );
    for (exp, scale) in groups {
        let file = experiment_file(exp);
        let shipped_kb = file["fsck"]["os_max_sectors_kb"].as_integer().unwrap() as u64;
        let mine: Vec<&Vec<String>> = rows
            .iter()
            .filter(|r| r[0] == exp && num(&r[1]) == scale)
            .collect();
        let captures: Vec<&str> = mine.iter().map(|r| r[3].as_str()).collect();
        let alt_capture = format!("`--set os_max_sectors_kb={alt_kb}`");
        assert_eq!(
            captures,
            [
                "as shipped",
                "as shipped, captured again",
                alt_capture.as_str()
            ],
            "{exp}"
        );
        let mut seconds = Vec::new();
        let mut requests = Vec::new();
        let mut largest = Vec::new();
        let mut reductions = Vec::new();
        for (r, kb) in mine.iter().zip([shipped_kb, shipped_kb, alt_kb]) {
            assert_eq!(num(&r[2]) as u64, kb, "{exp}: {r:?}");
            let (a, na) = policy_cell(&r[4]);
            let (b, nb) = policy_cell(&r[5]);
            let red = num(r[7].trim_end_matches('%'));
            assert!(is_reduction_of(red, a, b), "{exp}: {r:?}");
            let (la, lb) = r[6]
                .split_once(" / ")
                .unwrap_or_else(|| panic!("{exp}: no largest request in {r:?}"));
            seconds.push((a, b));
            requests.push((na, nb));
            largest.push(num(la).max(num(lb)));
            reductions.push(red);
        }
        let most = largest[0].max(largest[1]);
        let claim = if most <= alt_kb as f64
            && requests[2] == requests[0]
            && requests[1] == requests[0]
        {
            format!(
                "{exp} at scale {scale}: no request of the captures as shipped was larger than {most} KiB, so a {alt_kb} KiB queue splits none: its capture made the same {} and {} requests, and its reduction is {:.1}% against {:.1}% and {:.1}% as shipped",
                requests[2].0, requests[2].1, reductions[2], reductions[0], reductions[1]
            )
        } else if most <= alt_kb as f64 {
            // Nothing to split, yet the three captures' requests differ: all three are given.
            format!(
                "{exp} at scale {scale}: no request of the captures as shipped was larger than {most} KiB, so a {alt_kb} KiB queue splits none; its capture made {} and {} requests against {} and {}, and {} and {} as shipped, and its reduction is {:.1}% against {:.1}% and {:.1}% as shipped",
                requests[2].0,
                requests[2].1,
                requests[0].0,
                requests[0].1,
                requests[1].0,
                requests[1].1,
                reductions[2],
                reductions[0],
                reductions[1]
            )
        } else {
            format!(
                "{exp} at scale {scale}: requests of up to {most} KiB as shipped; at {alt_kb} KiB its capture made {} and {} requests against {} and {}, and moved the reduction by {:.1} points, a second capture by {:.1}",
                requests[2].0,
                requests[2].1,
                requests[0].0,
                requests[0].1,
                (reductions[2] - reductions[0]).abs(),
                (reductions[1] - reductions[0]).abs()
            )
        };
        assert!(text.contains(&claim), "the prose no longer says: {claim}");
    }
}

/// The fsck experiments' read-ahead block (`ONLY=readahead docs/regenerate-budgets.sh`) holds
/// what the experiment files and the runs say, and the prose follows it:
/// - per experiment, at scale 1, two captures at the file's `os_read_ahead_kb` (128 KiB, the
///   period's largest window) and one at each of 64, 32, 16 and 0 KiB; each reduction is the
///   row's seconds' (to the printed rounding);
/// - for each experiment, the sentence the rows allow: the span of the reduction over the windows
///   of 16 KiB or more (both captures as shipped included), and the reduction and requests with
///   no read-ahead against the first capture as shipped.
#[test]
fn fsck_readahead_block_follows_its_experiment_files_and_the_prose() {
    let rows = budget_rows("budget-fsck-readahead");
    let text = doc_prose();
    let exps = [
        "metacluster-fsck",
        "ext4-fsck-allocator",
        "ext3-vs-ext4-fsck",
    ];
    assert_eq!(rows.len(), 6 * exps.len(), "six rows per experiment");
    for exp in exps {
        let file = experiment_file(exp);
        let shipped_kb = file["fsck"]["os_read_ahead_kb"].as_integer().unwrap() as u64;
        assert_eq!(
            shipped_kb, 128,
            "{exp}: the block's windows are below 128 KiB"
        );
        let mine: Vec<&Vec<String>> = rows.iter().filter(|r| r[0] == exp).collect();
        let kbs: Vec<u64> = mine.iter().map(|r| num(&r[1]) as u64).collect();
        assert_eq!(kbs, [128, 128, 64, 32, 16, 0], "{exp}");
        let captures: Vec<&str> = mine.iter().map(|r| r[2].as_str()).collect();
        assert_eq!(
            captures[..2],
            ["as shipped", "as shipped, captured again"],
            "{exp}"
        );
        for (r, kb) in mine[2..].iter().zip([64, 32, 16, 0]) {
            assert_eq!(r[2], format!("`--set os_read_ahead_kb={kb}`"), "{exp}");
        }
        let mut reductions = Vec::new();
        let mut requests = Vec::new();
        for r in &mine {
            let (a, na) = policy_cell(&r[3]);
            let (b, nb) = policy_cell(&r[4]);
            let red = num(r[5].trim_end_matches('%'));
            assert!(is_reduction_of(red, a, b), "{exp}: {r:?}");
            reductions.push(red);
            requests.push((na, nb));
        }
        let windowed = &reductions[..5];
        let lo = windowed.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = windowed.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let claim = format!(
            "{exp}: with windows of 16 to 128 KiB the reduction lies between {lo:.1}% and {hi:.1}% (as shipped {:.1}% and {:.1}%); with no read-ahead it is {:.1}%, from {} and {} requests against {} and {}",
            reductions[0],
            reductions[1],
            reductions[5],
            requests[5].0,
            requests[5].1,
            requests[0].0,
            requests[0].1
        );
        assert!(text.contains(&claim), "the prose no longer says: {claim}");
    }
}

/// ext3-vs-ext4-fsck's repeated captures (`ONLY=repeat docs/regenerate-budgets.sh`): three
/// plain and three closed-loop rows, each ext4-2008 count split into pass 2 and the other
/// passes (which add up to it), a measured time on the emulated disk only where the capture was
/// closed loop; and the prose gives the ranges the rows show and the conclusion they allow
/// against the one closed-loop capture of docs/emulate.md's block.
#[test]
fn fsck_repeat_block_adds_up_and_the_prose_follows() {
    let rows = budget_rows("fsck-repeat");
    let firsts: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(
        firsts,
        [
            "plain 1",
            "plain 2",
            "plain 3",
            "closed loop (`--closed-loop 4`) 1",
            "closed loop (`--closed-loop 4`) 2",
            "closed loop (`--closed-loop 4`) 3"
        ]
    );
    let count = |c: &str| num(c) as u64;
    let (mut plain, mut closed) = (Vec::new(), Vec::new());
    for r in &rows {
        let (total, pass2, other) = (count(&r[2]), count(&r[3]), count(&r[4]));
        assert_eq!(pass2 + other, total, "{r:?}");
        let is_closed = r[0].starts_with("closed");
        assert_eq!(r[6] != "—", is_closed, "{r:?}");
        if is_closed {
            num(&r[6]);
            closed.push((total, pass2, other));
        } else {
            plain.push((total, pass2, other));
        }
    }
    let col = |v: &[(u64, u64, u64)], i: usize| -> Vec<u64> {
        v.iter().map(|t| [t.0, t.1, t.2][i]).collect::<Vec<u64>>()
    };
    let all: Vec<(u64, u64, u64)> = plain.iter().chain(&closed).copied().collect();
    let claim = format!(
        "In three plain captures ext4-2008 made {} requests (pass 2: {}), and in three closed-loop captures {} (pass 2: {}); the other passes made {} in all six.",
        span(&col(&plain, 0)),
        span(&col(&plain, 1)),
        span(&col(&closed, 0)),
        span(&col(&closed, 1)),
        span(&col(&all, 2))
    );
    let text = doc_prose();
    assert!(text.contains(&claim), "the prose no longer says: {claim}");
    // docs/emulate.md's one closed-loop capture of ext4-2008, and its plain one.
    let emulate = block_rows("emulate.md", "closed-loop-fsck");
    let e4 = emulate
        .iter()
        .find(|r| r[0] == "ext3-vs-ext4-fsck" && r[3] == "ext4-2008")
        .unwrap();
    let earlier = count(e4[5].split(' ').next().unwrap());
    let plain_max = *col(&plain, 0).iter().max().unwrap();
    let plain_min = *col(&plain, 0).iter().min().unwrap();
    let closed_min = *col(&closed, 0).iter().min().unwrap();
    let claim = if closed_min > plain_max {
        "Every closed-loop capture made more requests than every plain one here: closed loop moves ext4-2008's pass-2 count".to_string()
    } else if col(&closed, 0).contains(&earlier) || (plain_min..=plain_max).contains(&earlier) {
        format!("The {earlier} requests of docs/emulate.md's closed-loop capture recurred here")
    } else {
        format!(
            "The {earlier} requests of docs/emulate.md's closed-loop capture did not recur in three more: closed loop does not by itself move ext4-2008's requests"
        )
    };
    assert!(text.contains(&claim), "the prose no longer says: {claim}");
}

/// The period CPU's block (`ONLY=cpuf`: Ts'o's netbook experiments with `--cpu-scale
/// atom-n270-2008`, open and closed loop; runs of minutes, not rerun here): the prose beside it
/// follows it. Closed loop lies within its stated range of its own replay, the throttled capture's
/// request growth on ext4-fsck-allocator is what the prose says, and closed loop at the period
/// CPU is above the run as shipped for both policies there (the gap to the post widens).
#[test]
fn period_cpu_prose_follows_its_block() {
    let rows = budget_rows("budget-cpu-period");
    let text = doc_prose();
    // The bound the prose states ("lies within N% of its own stream's replay").
    let key = "each measured time lies within ";
    let bound: f64 = text
        .split(key)
        .nth(1)
        .and_then(|t| t.split('%').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the prose no longer says: {key}N%"));
    assert!(
        text.contains(&format!("{key}{bound}% of its own stream's replay")),
        "{bound}"
    );
    for r in &rows {
        let (measured, replay) = (num(&r[5]), num(&r[6]));
        // The cells are rounded to 0.1 s, so the nearest the unrounded pair can lie is 0.1 s
        // closer; the prose's finer range comes from the runs' JSON.
        let nearest = ((measured - replay).abs() - 0.1).max(0.0) / replay * 100.0;
        assert!(
            nearest < bound,
            "closed loop off its replay by {nearest:.2}%, past the prose's {bound}%: {r:?}"
        );
    }
    let ext4: Vec<&Vec<String>> = rows
        .iter()
        .filter(|r| r[0] == "ext4-fsck-allocator")
        .collect();
    assert_eq!(ext4.len(), 2, "{rows:?}");
    let mut growth = Vec::new();
    for r in &ext4 {
        let n: Vec<f64> = r[7].split('/').map(|c| num(c.trim())).collect();
        growth.push(format!("{:+.1}%", (n[1] / n[0] - 1.0) * 100.0));
        assert!(
            num(&r[5]) > num(&r[2]),
            "closed loop at F no longer above the run as shipped: {r:?}"
        );
    }
    let claim = format!("({}, {})", growth[0], growth[1]);
    assert!(text.contains(&claim), "the prose no longer says: {claim}");
    // metacluster-fsck: its closed-loop times, and the bound on what the CPU can hold: the
    // post's CPU time (its experiment file) in place of the CPU our replay does not overlap.
    let mf: Vec<&Vec<String>> = rows.iter().filter(|r| r[0] == "metacluster-fsck").collect();
    assert_eq!(mf.len(), 2, "{rows:?}");
    let claim = format!("{} and {} s closed loop", mf[0][5], mf[1][5]);
    assert!(text.contains(&claim), "the prose no longer says: {claim}");
    let published = &experiment_file("metacluster-fsck")["published"];
    let cpu_of = |policy: &str| {
        published["user_seconds"][policy].as_float().unwrap()
            + published["sys_seconds"][policy].as_float().unwrap()
    };
    let with_post_cpu: Vec<f64> = mf
        .iter()
        .map(|r| num(&r[2]) - num(&r[3]) + cpu_of(&r[1]))
        .collect();
    let red = (1.0 - with_post_cpu[1] / with_post_cpu[0]) * 100.0;
    let red0 = (1.0 - num(&mf[1][2]) / num(&mf[0][2])) * 100.0;
    let claim = format!(
        "it would give {:.1} and {:.1} s, a reduction of {red:.1}%: the CPU cannot hold more \
         than {:.1} of",
        with_post_cpu[0],
        with_post_cpu[1],
        red0 - red
    );
    assert!(text.contains(&claim), "the prose no longer says: {claim}");
}

/// The spread block (`ONLY=spread docs/regenerate-budgets.sh`: each fsck experiment captured
/// eight times as shipped at scale 1) adds up, and the prose beside it follows it:
/// - each experiment has its two policies, the same number of captures each, the requests'
///   fewest ≤ most (one stream when they are equal), seconds least ≤ median ≤ most, and "most
///   against least" their ratio (to the printed rounding);
/// - the sentence giving each experiment's widest policy and its reduction's range.
#[test]
fn fsck_spread_block_adds_up_and_the_prose_follows() {
    let rows = budget_rows("fsck-spread");
    let text = doc_prose();
    /// An experiment's rows: its name, (policy, most against least [%]) per policy, and its
    /// reduction's range [%].
    struct Spread {
        experiment: String,
        policies: Vec<(String, f64)>,
        reduction: (f64, f64),
    }
    let mut per_exp: Vec<Spread> = Vec::new();
    for r in &rows {
        if !r[0].is_empty() {
            let (lo, hi) = r[6]
                .trim_end_matches('%')
                .split_once(" … ")
                .unwrap_or_else(|| panic!("reduction '{}' is not 'lo … hi%'", r[6]));
            let (lo, hi) = (num(lo), num(hi));
            assert!(lo <= hi, "{r:?}");
            per_exp.push(Spread {
                experiment: r[0].clone(),
                policies: Vec::new(),
                reduction: (lo, hi),
            });
        }
        assert!(num(&r[2]) >= 2.0, "a spread needs two captures: {r:?}");
        let (requests, streams) = r[3]
            .split_once(" (")
            .unwrap_or_else(|| panic!("'{}' is not 'fewest … most (streams)'", r[3]));
        let (fewest, most) = requests.split_once(" … ").unwrap();
        let (fewest, most) = (num(fewest) as u64, num(most) as u64);
        let streams = num(streams.trim_end_matches(')')) as u64;
        assert!(fewest <= most, "{r:?}");
        assert_eq!(fewest == most, streams == 1, "{r:?}");
        let s: Vec<f64> = r[4].trim_end_matches(" s").split(" / ").map(num).collect();
        assert!(s.len() == 3 && s[0] <= s[1] && s[1] <= s[2], "{r:?}");
        let ratio = num(r[5].trim_start_matches('+').trim_end_matches('%'));
        // Both ends printed to 0.1 s: the ratio of the printed ends within that rounding.
        let lo = (s[2] - 0.05) / (s[0] + 0.05) - 1.0;
        let hi = (s[2] + 0.05) / (s[0] - 0.05).max(0.05) - 1.0;
        assert!(
            ratio / 100.0 >= lo - 0.0005 && ratio / 100.0 <= hi + 0.0005,
            "{r:?}: {ratio}% is not most against least"
        );
        per_exp
            .last_mut()
            .expect("an experiment row first")
            .policies
            .push((r[1].clone(), ratio));
    }
    let names: Vec<&str> = per_exp.iter().map(|e| e.experiment.as_str()).collect();
    assert_eq!(
        names,
        [
            "metacluster-fsck",
            "ext4-fsck-allocator",
            "ext3-vs-ext4-fsck"
        ]
    );
    for Spread {
        experiment: exp,
        policies,
        reduction: (lo, hi),
    } in &per_exp
    {
        assert_eq!(policies.len(), 2, "{exp}");
        let widest = policies.iter().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
        let claim = format!(
            "{exp}: the widest policy is {}, whose slowest capture took {:.1}% longer than its fastest; the reduction ranged over {:.1} points ({lo:.1} … {hi:.1}%).",
            widest.0,
            widest.1,
            hi - lo
        );
        assert!(text.contains(&claim), "the prose no longer says: {claim}");
    }
}

/// The budget-io-left block (`ONLY=fsck docs/regenerate-budgets.sh`): its published columns are
/// the experiment files' (real, user + sys), the time not on a CPU is their difference, each
/// per-request figure is that time (or ours) over the stated requests, and the ext4 budget
/// table's shipped and another-class seconds are the ones divided here; the prose's claims
/// about the rows follow them.
#[test]
fn io_left_block_adds_up_and_the_prose_follows() {
    let rows = budget_rows("budget-io-left");
    let text = doc_prose();
    let close = |a: f64, b: f64, digits: i32| (a - b).abs() <= 0.5 * 10f64.powi(-digits) + 1e-9;
    // "3.26 (sata-160g-2009)" is 3.26.
    let lead = |c: &str| num(c.split(' ').next().unwrap());
    let mut per_request_left = Vec::new();
    for r in &rows {
        let (exp, policy) = (r[0].as_str(), r[1].as_str());
        let file = experiment_file(exp);
        let p = &file["published"];
        let get = |k: &str| p[k][policy].as_float().unwrap();
        let (real, cpu) = (
            get("total_seconds"),
            get("user_seconds") + get("sys_seconds"),
        );
        assert!(close(num(&r[2]), real, 2), "{r:?}");
        assert!(close(num(&r[3]), cpu, 2), "{r:?}");
        let left = real - cpu;
        assert!(close(num(&r[4]), left, 2), "{r:?}");
        let requests = num(&r[5]);
        assert!(close(num(&r[6]), left / requests * 1000.0, 2), "{r:?}");
        per_request_left.push((exp.to_string(), policy.to_string(), num(&r[6]), lead(&r[7])));
        if r[9] != "not run" {
            assert!(close(num(&r[10]), left / num(&r[9]) * 1000.0, 2), "{r:?}");
        }
        // The ext4 budget table's shipped and another-class seconds are the ones divided.
        if exp == "ext4-fsck-allocator" {
            let budget = budget_rows("budget-ext4-fsck-allocator");
            let col = if policy == "ext4-2008" { 2 } else { 3 };
            let shipped = secs(&row_named(&budget, "as shipped")[col]).unwrap();
            assert!(
                (lead(&r[7]) - shipped / requests * 1000.0).abs()
                    <= 0.05 / requests * 1000.0 + 0.006,
                "{r:?} against {shipped} s"
            );
            let class = secs(&row_named(&budget, "device: another class")[col]).unwrap();
            assert!(
                (lead(&r[8]) - class / requests * 1000.0).abs() <= 0.05 / requests * 1000.0 + 0.006,
                "{r:?} against {class} s"
            );
        }
    }
    let netbook: Vec<&(String, String, f64, f64)> = per_request_left
        .iter()
        .filter(|(e, ..)| e == "ext4-fsck-allocator")
        .collect();
    assert_eq!(netbook.len(), 2, "{rows:?}");
    let claim = format!(
        "The netbook's e2fsck spent {:.2} and {:.2} ms per request of our streams off its CPU, where our 5400-rpm model takes {:.2} and {:.2} ms",
        netbook[0].2, netbook[1].2, netbook[0].3, netbook[1].3
    );
    assert!(text.contains(&claim), "the prose no longer says: {claim}");
}

/// The tree band (who writes ubuntu-32g: our plans or today's kernel): the block's plan rows are
/// the tree block's plans (the same deterministic layouts, counted by the same e2fsck) and the
/// budget's e2fsck 1.41.4 row again; the prose's figures are the block's.
#[test]
fn ext4_fsck_allocator_treeband_prose_follows_its_block() {
    let rows = budget_rows("ext4-fsck-allocator-treeband");
    assert_eq!(rows.len(), 7, "{rows:?}");
    let engine = row_named(
        &rows,
        "ext4-kernel (our plan of today's kernel: one writer, written back every 64 MiB)",
    );
    let nodelalloc = row_named(
        &rows,
        "today's kernel, nodelalloc (no delayed allocation), written back every 64 MiB",
    );
    let plan = |p: &str| {
        row_named(
            &rows,
            &format!("{p} (our plan: one writer, file after file)"),
        )
    };
    let kernel = [
        row_named(&rows, "today's kernel, written back every 64 MiB"),
        row_named(&rows, "today's kernel, written back by its flusher alone"),
    ];
    let depth1 = |r: &[String]| -> f64 { num(r[3].split('/').nth(1).unwrap()) };
    // The plans are the tree block's.
    let tree = budget_rows("ext4-fsck-allocator-tree");
    for (p, col) in [("ext4-2008", 1), ("ext4-2009", 3)] {
        let r = plan(p);
        assert_eq!(
            num(&r[1]),
            num(&row_named(&tree, "non-contiguous files")[col]),
            "{p}"
        );
        assert_eq!(
            num(&r[2]),
            num(&row_named(&tree, "non-contiguous directories")[col]),
            "{p}"
        );
        assert_eq!(
            depth1(r),
            num(&row_named(&tree, "inodes with extents, depth 1")[col]),
            "{p}"
        );
    }
    let range = |vals: [f64; 2], digits: i32| -> String {
        let f = |x: f64| {
            if digits == 0 {
                format!("{}", x as u64)
            } else {
                format!("{x:.1}")
            }
        };
        let (lo, hi) = (vals[0].min(vals[1]), vals[0].max(vals[1]));
        if lo == hi {
            f(lo)
        } else {
            format!("{}-{}", f(lo), f(hi))
        }
    };
    let col = |i: usize| [num(&kernel[0][i]), num(&kernel[1][i])];
    let (r2a, r2b) = (col(8)[0].min(col(8)[1]), col(8)[0].max(col(8)[1]));
    let e2009 = num(&plan("ext4-2009")[10]);
    let ratio = [col(10)[0] / e2009, col(10)[1] / e2009];
    // "N of M" directory blocks outside their flex group's first group.
    let outside = |r: &[String]| -> (u64, u64) {
        let (n, m) = r[4].split_once(" of ").unwrap();
        (num(n) as u64, num(m) as u64)
    };
    let (k0, k1) = (outside(kernel[0]), outside(kernel[1]));
    let plan09 = outside(plan("ext4-2009"));
    let budget = budget_rows("budget-ext4-fsck-allocator");
    let checker = rows_of(&budget, "checker")[0];
    let text = doc_prose();
    for claim in [
        format!("Today's kernel splits {} files", range(col(1), 0)),
        format!("{} non-contiguous directories (ours", range(col(2), 0)),
        format!(
            "{} extent trees of depth 1",
            range([depth1(kernel[0]), depth1(kernel[1])], 0)
        ),
        format!("Its check costs {} s", range(col(10), 1)),
        format!(
            "ext4-2008 plan ({} s) and our ext4-2009 plan ({} s), {} times the latter",
            plan("ext4-2008")[10],
            plan("ext4-2009")[10],
            range([round(ratio[0], 1), round(ratio[1], 1)], 1)
        ),
        format!(
            "Pass 2 holds the difference: {} s and {}-{} requests against {} s and {}.",
            range(col(9), 1),
            thousands(r2a),
            thousands(r2b),
            plan("ext4-2009")[9],
            thousands(num(&plan("ext4-2009")[8]))
        ),
        format!(
            "In today's kernel's images {}-{} of {}-{} directory blocks lie outside their flex \
             group's first group (our ext4-2009 plan: {} of {})",
            thousands(k0.0.min(k1.0) as f64),
            thousands(k0.0.max(k1.0) as f64),
            thousands(k0.1.min(k1.1) as f64),
            thousands(k0.1.max(k1.1) as f64),
            plan09.0,
            thousands(plan09.1 as f64)
        ),
        format!(
            "file data fill first groups ({}-{} data blocks there; our ext4-2009 plan: {})",
            thousands(col(5)[0].min(col(5)[1])),
            thousands(col(5)[0].max(col(5)[1])),
            plan("ext4-2009")[5]
        ),
        format!(
            "The same write with `nodelalloc` leaves {} directory blocks outside and {} data \
             blocks in first groups; its pass 2 takes {} s in {} requests",
            {
                let (n, m) = outside(nodelalloc);
                format!("{n} of {}", thousands(m as f64))
            },
            nodelalloc[5],
            nodelalloc[9],
            thousands(num(&nodelalloc[8]))
        ),
        format!(
            "splits {} files and puts {} data blocks in first groups, but leaves {} directory \
             blocks outside them, and its check takes {} s where the kernel's takes {} s.",
            engine[1],
            thousands(num(&engine[5])),
            {
                let (n, m) = outside(engine);
                format!("{n} of {}", thousands(m as f64))
            },
            engine[10],
            range(col(10), 1)
        ),
        format!(
            "(It splits {} files instead",
            thousands(num(&nodelalloc[1]))
        ),
        format!(
            "({:.1} and {:.1} s there, each a capture of its own)",
            secs(&checker[2]).unwrap(),
            secs(&checker[3]).unwrap()
        ),
    ] {
        assert!(text.contains(&claim), "the doc no longer says: {claim}");
    }
}

/// The change a metacluster-io cell prints: "A → B s (C%)" gives C.
fn mio_change(cell: &str) -> f64 {
    num(cell
        .split('(')
        .nth(1)
        .and_then(|t| t.split('%').next())
        .unwrap_or_else(|| panic!("'{cell}' has no change")))
}

/// metacluster-io's closed-loop and rotational-flag rows: the closed-loop rows have benchmarks
/// 2-4 only (benchmark 1 is a write stream built from the layout), and the prose's figures are
/// the block's: how far each row moves a time (against the run it is compared with) and a
/// change. The emulated disk serves the kernel's requests as it issues them, so the closed-loop
/// time is read against the same capture's stream in that order, replayed open loop.
#[test]
fn metacluster_io_closed_loop_and_rotational_prose_follows_its_block() {
    let rows = budget_rows("budget-metacluster-io");
    let shipped = row_named(&rows, "as shipped");
    let without = row(&rows, "the same capture's stream");
    let closed = row_named(&rows, "request stream: closed loop");
    let rot = row_named(&rows, "request stream: rotational flag");
    assert!(closed[2].starts_with('—'), "{closed:?}");
    // (largest time moved, s; smallest; largest change moved, points) of `r` against `base`.
    let moved = |r: &[String], base: &[String], from: usize| {
        let (mut hi, mut lo, mut pts) = (f64::MIN, f64::MAX, 0f64);
        for b in from..=4 {
            let (x, y) = (pair(&r[1 + b]), pair(&base[1 + b]));
            for d in [x.0 - y.0, x.1 - y.1] {
                hi = hi.max(d);
                lo = lo.min(d);
            }
            pts = pts.max((mio_change(&r[1 + b]) - mio_change(&base[1 + b])).abs());
        }
        (round(hi, 1), round(lo, 1), round(pts, 1))
    };
    let (c_hi, c_lo, c_pts) = moved(closed, without, 2);
    let (r_hi, r_lo, r_pts) = moved(rot, shipped, 1);
    let biggest_rot = if r_hi.abs() > r_lo.abs() { r_hi } else { r_lo };
    let text = doc_prose();
    for claim in [
        format!(
            "Closed loop and the rotational flag each move a change by at most {:.1} points",
            c_pts.max(r_pts)
        ),
        format!("the times are {c_lo:+.1} to {c_hi:+.1} s against the same capture's stream replayed open loop"),
        format!(
            "non-rotational capture device moves a time by at most {:.1} s",
            biggest_rot.abs()
        ),
    ] {
        assert!(text.contains(&claim), "the doc no longer says: {claim}");
    }
}

/// metacluster-io's read-ahead size rows (8 and 4 blocks against the shipped 32): the prose
/// quotes their changes for benchmarks 2-4 as the block prints them, and its claim that every
/// size priced keeps those benchmarks within 0.10 of the published changes holds for the rows.
#[test]
fn metacluster_io_readahead_size_prose_follows_its_block() {
    let rows = budget_rows("budget-metacluster-io");
    let sized: Vec<&Vec<String>> = rows
        .iter()
        .filter(|r| r[0] == "layout: the patch's read-ahead size")
        .collect();
    assert_eq!(sized.len(), 2, "{rows:?}");
    let text = doc_prose();
    let published = [0.0, -2.1, -0.7];
    let pct = |x: f64| format!("{}{:.1}%", if x < 0.0 { "−" } else { "+" }, x.abs());
    for (r, n) in sized.iter().zip([8, 4]) {
        assert!(r[1].starts_with(&format!("{n} indirect blocks")), "{r:?}");
        let changes: Vec<f64> = (2..=4).map(|b| mio_change(&r[1 + b])).collect();
        let quoted = format!(
            "{}, {} and {}",
            pct(changes[0]),
            pct(changes[1]),
            pct(changes[2])
        );
        assert!(
            text.contains(&quoted),
            "the doc does not quote {n} blocks' {quoted}"
        );
        for (c, p) in changes.iter().zip(published) {
            assert!((c - p).abs() < 10.0, "{n} blocks: {c}% against {p}%");
        }
    }
    let shipped = row_named(&rows, "as shipped");
    for (b, p) in (2..=4).zip(published) {
        assert!((mio_change(&shipped[1 + b]) - p).abs() < 10.0);
    }
    assert!(text
        .contains("Every size priced keeps benchmarks 2-4 within 0.10 of the published changes"));
}

/// metacluster-io's page-by-page row replays the shipped traces with benchmark 4's reads cut
/// into 4 KiB requests: benchmarks 1-3 are the shipped row's to the digit, and the prose quotes
/// benchmark 4's cells of both rows as the block prints them.
#[test]
fn metacluster_io_page_by_page_row_moves_only_benchmark_4_and_the_prose_follows() {
    let rows = budget_rows("budget-metacluster-io");
    let shipped = row_named(&rows, "as shipped");
    let pages = row_named(&rows, "request stream: benchmark 4's reads page by page");
    for b in 1..=3 {
        assert_eq!(pages[1 + b], shipped[1 + b], "b{b}");
    }
    let text = doc_prose();
    let (p, s) = (pair(&pages[5]), pair(&shipped[5]));
    let pct = |x: f64| format!("{}{:.1}%", if x < 0.0 { "−" } else { "" }, x.abs());
    let claim = format!(
        "benchmark 4 takes {:.1} → {:.1} s ({}) against the shipped {:.1} → {:.1} s ({})",
        p.0,
        p.1,
        pct(mio_change(&pages[5])),
        s.0,
        s.1,
        pct(mio_change(&shipped[5]))
    );
    assert!(text.contains(&claim), "the doc no longer says: {claim}");
    // Cutting the reads costs time: 128 commands where there was one.
    assert!(p.0 > s.0 && p.1 > s.1, "{p:?} vs {s:?}");
    // In 128 KiB pieces: benchmarks 1-3 as shipped, benchmark 4 quoted and within a second of
    // the shipped (four commands streamed where there was one).
    let windows = row_named(
        &rows,
        "request stream: benchmark 4's reads in 128 KiB pieces",
    );
    for b in 1..=3 {
        assert_eq!(windows[1 + b], shipped[1 + b], "b{b}");
    }
    let w = pair(&windows[5]);
    let claim = format!(
        "benchmark 4 takes {:.1} → {:.1} s ({}), within a second of the shipped one request",
        w.0,
        w.1,
        pct(mio_change(&windows[5]))
    );
    assert!(text.contains(&claim), "the doc no longer says: {claim}");
    assert!(
        (w.0 - s.0).abs() < 1.0 && (w.1 - s.1).abs() < 1.0,
        "{w:?} vs {s:?}"
    );
}

/// metacluster-io's no-advice rows (benchmark 4 alone, a new capture rebuilt as 2.6.24 issued
/// it): the other benchmarks are not run; with and without the patch's read-ahead the windows
/// read more than the shipped one request and less than page by page; the prose quotes both
/// rows' cells as the block prints them, and the costs and moves it derives from them.
#[test]
fn metacluster_io_no_advice_rows_and_the_prose_follow_the_block() {
    let rows = budget_rows("budget-metacluster-io");
    let name = "request stream: benchmark 4's reads as 2.6.24 issued them without advice";
    let both: Vec<&Vec<String>> = rows.iter().filter(|r| r[0] == name).collect();
    assert_eq!(both.len(), 2, "{rows:?}");
    let (with, without) = (both[0], both[1]);
    assert!(without[1].starts_with("the same, without the patch's read-ahead"));
    for r in [with, without] {
        for b in 1..=3 {
            assert_eq!(r[1 + b], "— (benchmark 4 alone)", "b{b}");
        }
    }
    let shipped = row_named(&rows, "as shipped");
    let pages = row_named(&rows, "request stream: benchmark 4's reads page by page");
    let (w, s, p) = (pair(&with[5]), pair(&shipped[5]), pair(&pages[5]));
    assert!(w.0 > s.0 && w.1 > s.1, "{w:?} vs {s:?}");
    assert!(w.0 < p.0 && w.1 < p.1, "{w:?} vs {p:?}");
    // Without the read-ahead the 2007 layout is the same run's: the option reads nothing on it.
    let wo = pair(&without[5]);
    assert!((wo.0 - w.0).abs() < 0.15, "{wo:?} vs {w:?}");
    let text = doc_prose();
    let pct = |x: f64| format!("{}{:.1}%", if x < 0.0 { "−" } else { "+" }, x.abs());
    let cell = |c: (f64, f64), change: f64| format!("{:.1} → {:.1} s ({})", c.0, c.1, pct(change));
    for claim in [
        format!("It takes {}, and", cell(w, mio_change(&with[5]))),
        format!("{} without the patch's read-ahead", cell(wo, mio_change(&without[5]))),
        format!(
            "the no-advice reading costs ext3-2007 {:.0}% more and moves the change by {:.1} points; page by page costs it {:.0}%",
            (w.0 / s.0 - 1.0) * 100.0,
            (mio_change(&with[5]) - mio_change(&shipped[5])).abs(),
            (p.0 / s.0 - 1.0) * 100.0
        ),
        format!(
            "more and moves the change by {:.1} points",
            (mio_change(&pages[5]) - mio_change(&shipped[5])).abs()
        ),
    ] {
        assert!(text.contains(&claim), "the doc no longer says: {claim}");
    }
}

/// large-delete in closed loop: each column's two rows are one capture (the time measured on
/// the emulated disk, then the same stream replayed open loop); the prose's figures are the
/// block's, as printed: the most closed loop moves an ext delete, and btrfs's two.
#[test]
fn large_delete_closed_loop_prose_follows_its_block() {
    let rows = budget_rows("budget-large-delete-closed");
    assert_eq!(rows.len(), 2, "{rows:?}");
    let (closed, open) = (ld_cells(&rows[0]), ld_cells(&rows[1]));
    assert!(rows[0][1].starts_with("each delete on the emulated disk"));
    assert!(rows[1][1].starts_with("the same capture's stream replayed open loop"));
    let d = |i: usize| (closed[i].unwrap(), open[i].unwrap());
    // Columns: ext3, ext4-2007, ext4 (contiguous, fragmented), then XFS and btrfs.
    let (i, (c, o)) = (0..6)
        .map(|i| (i, d(i)))
        .max_by(|a, b| (a.1 .0 - a.1 .1).abs().total_cmp(&(b.1 .0 - b.1 .1).abs()))
        .unwrap();
    assert_eq!(i, 0, "the largest ext move is no longer ext3 contiguous's");
    let (bc, bo) = d(9);
    let text = doc_prose();
    for claim in [
        format!(
            "Closed loop moves an ext delete by at most {:.1} s ({:+.1}%, ext3 contiguous)",
            c - o,
            100.0 * (c - o) / o
        ),
        format!(
            "btrfs's fragmented delete by {:.1} s ({:+.1}%)",
            bc - bo,
            100.0 * (bc - bo) / bo
        ),
        {
            let (c, o) = d(8);
            format!(
                "btrfs's contiguous one by {:.1} s ({:+.1}%)",
                c - o,
                100.0 * (c - o) / o
            )
        },
    ] {
        assert!(text.contains(&claim), "the doc no longer says: {claim}");
    }
    assert!(text.contains("ext4's by at most 0.1 s and XFS's by at most 0.2 s"));
    // Columns 2-5 are ext4's (2007 and today's), 6-7 XFS's.
    for (columns, most) in [(2..=5, 0.1), (6..=7, 0.2)] {
        for i in columns {
            let (c, o) = d(i);
            assert!(
                round((c - o).abs(), 1) <= most,
                "column {i}: {c} against {o}"
            );
        }
    }
}

/// A signed percentage as the summary writes it: one decimal, a real minus sign, and "0.0%"
/// unsigned.
fn signed_pct(x: f64) -> String {
    let s = format!("{x:+.1}%");
    match s.as_str() {
        "+0.0%" | "-0.0%" => "0.0%".to_string(),
        _ => s.replace('-', "−"),
    }
}

/// The number in a generated cell such as "808.5 s", "*287 s*", "72.3%" or "191.7 → 157.7 s
/// (-17.7%)" (its first number).
fn lead_num(cell: &str) -> f64 {
    let t = cell.trim_matches('*');
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .unwrap_or(t.len());
    t[..end]
        .parse()
        .unwrap_or_else(|_| panic!("no number at the start of '{cell}'"))
}

/// "A → B s (C%)" as (A, B, C).
fn arrow_cell(cell: &str) -> (f64, f64, f64) {
    let (a, rest) = cell.split_once(" → ").unwrap_or_else(|| panic!("'{cell}'"));
    (lead_num(a), lead_num(rest), mio_change(cell))
}

/// The "inside the aim" cell for an absolute error pair and a relative difference in points.
fn inside(abs: &[f64], rel_points: Option<f64>) -> String {
    let abs_ok = abs.iter().all(|a| a.abs() <= 25.0);
    match rel_points {
        None if abs_ok => "yes".into(),
        None => "no".into(),
        Some(d) => match (abs_ok, d.abs() <= 10.0) {
            (true, true) => "yes".into(),
            (false, false) => "no".into(),
            (true, false) => format!("absolute yes; relative no ({:.2})", d.abs() / 100.0),
            (false, true) => "relative yes; absolute no".into(),
        },
    }
}

/// The summary "Against the aim" follows the blocks it sums up and the experiment files'
/// published figures: each row's ours, published, absolute error, relative effect and verdict,
/// and the figures its last column quotes from other blocks.
#[test]
fn against_the_aim_summary_follows_the_blocks() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/fidelity.md");
    let text = std::fs::read_to_string(path).unwrap();
    let section = text
        .split("## Against the aim")
        .nth(1)
        .and_then(|t| t.split("\n\n").find(|p| p.starts_with("| table")))
        .expect("docs/fidelity.md has the summary table");
    let summary = table_rows(section);
    let line = |first: &str| -> &[String] {
        summary
            .iter()
            .find(|r| r[0].starts_with(first))
            .unwrap_or_else(|| panic!("no summary row '{first}…'"))
    };
    let pct = |a: f64, b: f64| (a / b - 1.0) * 100.0;
    // Two-policy fsck tables: ours and published from the block, the reduction beside.
    for (block, first) in [
        ("budget-metacluster-fsck", "metacluster-fsck"),
        ("budget-ext4-fsck-allocator", "ext4-fsck-allocator"),
    ] {
        let rows = budget_rows(block);
        let shipped = &rows[0];
        let published = rows.iter().find(|r| r[0] == "*published*").unwrap();
        let (a, b) = (lead_num(&shipped[2]), lead_num(&shipped[3]));
        let (pa, pb) = (lead_num(&published[2]), lead_num(&published[3]));
        let (red, pred) = (lead_num(&shipped[4]), lead_num(&published[4]));
        let r = line(first);
        let strip = |c: &str| c.trim_matches('*').trim_end_matches(" s").to_string();
        assert_eq!(
            r[1],
            format!("{} → {} s", strip(&shipped[2]), strip(&shipped[3])),
            "{first}"
        );
        assert_eq!(
            r[2],
            format!("{} → {} s", strip(&published[2]), strip(&published[3])),
            "{first}"
        );
        let abs = [pct(a, pa), pct(b, pb)];
        assert_eq!(
            r[3],
            format!("{}, {}", signed_pct(abs[0]), signed_pct(abs[1])),
            "{first}"
        );
        assert_eq!(r[4], format!("reduction {red:.1}%, {pred:.1}%"), "{first}");
        assert_eq!(r[5], inside(&abs, Some(red - pred)), "{first}");
    }
    // metacluster-fsck: the largest single move of the reduction and the preset-values span.
    let mf = budget_rows("budget-metacluster-fsck");
    let red0 = lead_num(&mf[0][4]);
    let most = mf[1..]
        .iter()
        .filter(|r| !r[0].starts_with('*') && !r[0].contains("preset values"))
        .map(|r| (lead_num(&r[4]) - red0).abs())
        .fold(0.0f64, f64::max);
    let span = &mf.iter().find(|r| r[0].contains("preset values")).unwrap()[4];
    let r = line("metacluster-fsck");
    assert!(
        r[6].contains(&format!("by at most {most:.1} points")),
        "{most} {r:?}"
    );
    assert!(r[6].contains(&format!("({span})")), "{span} {r:?}");
    // metacluster-io: ours from the block, published from the experiment file.
    let mio = budget_rows("budget-metacluster-io");
    let figures = experiment_file("metacluster-io")["published"]["figures"].clone();
    let fig = |b: usize, p: &str| figures[&format!("{b}.{p}")].as_float().unwrap();
    for b in 1..=4 {
        let (a, m, change) = arrow_cell(&mio[0][1 + b]);
        let (pa, pm) = (fig(b, "ext3-2007"), fig(b, "ext3-metacluster"));
        let pchange = pct(pm, pa);
        let r = line(&format!("metacluster-io {b},"));
        assert_eq!(r[1], format!("{a:.1} → {m:.1} s"), "b{b}");
        assert_eq!(r[2], format!("{pa:.1} → {pm:.1} s"), "b{b}");
        let abs = [pct(a, pa), pct(m, pm)];
        assert_eq!(
            r[3],
            format!("{}, {}", signed_pct(abs[0]), signed_pct(abs[1])),
            "b{b}"
        );
        assert_eq!(
            r[4],
            format!("change {}, {}", signed_pct(change), signed_pct(pchange)),
            "b{b}"
        );
        assert_eq!(r[5], inside(&abs, Some(change - pchange)), "b{b}");
    }
    let b4 = line("metacluster-io 4,");
    for (prefix, bench_cell) in [
        ("each 512 KiB read as 128 requests", 5),
        ("128 KiB read-ahead windows, two by two", 5),
    ] {
        let (a, m, _) = arrow_cell(&row(&mio, prefix)[bench_cell]);
        assert!(
            b4[6].contains(&format!("{a:.1} → {m:.1} s")),
            "{prefix}: {b4:?}"
        );
    }
    let stack = arrow_cell(&row(&mio, "every buffer segment may hold write data")[2]).2;
    assert!(
        line("metacluster-io 1,")[6]
            .contains(&format!("write-cache stacking: {};", signed_pct(stack))),
        "{stack}"
    );
    // ext4-fsck-allocator: the period checker's row and the io-left figures.
    let efa = budget_rows("budget-ext4-fsck-allocator");
    let checker = efa.iter().find(|r| r[0] == "checker").unwrap();
    let r = line("ext4-fsck-allocator");
    assert!(
        r[6].contains(&format!(
            "{:.1} → {:.1} s ({})",
            lead_num(&checker[2]),
            lead_num(&checker[3]),
            checker[4]
        )),
        "{checker:?} {r:?}"
    );
    let io = budget_rows("budget-io-left");
    let efa_io: Vec<&Vec<String>> = io
        .iter()
        .filter(|r| r[0] == "ext4-fsck-allocator")
        .collect();
    let pair = |i: usize, strip: &dyn Fn(&str) -> String| {
        format!("{} and {}", strip(&efa_io[0][i]), strip(&efa_io[1][i]))
    };
    let first_word = |c: &str| c.split(' ').next().unwrap().to_string();
    for claim in [
        format!("{} ms per request", pair(6, &first_word)),
        format!("model takes {} ms", pair(7, &first_word)),
        format!("the period {} (io-left", pair(8, &first_word)),
        format!("spent {} s on its CPU", pair(3, &first_word)),
    ] {
        assert!(r[6].contains(&claim), "{claim}: {r:?}");
    }
    // fio-randread: the shipped and first-registered presets against the published IOPS.
    let fio = budget_rows("budget-fio-randread");
    let published: Vec<f64> = fio.iter().find(|r| r[0] == "*published*").unwrap()[2..5]
        .iter()
        .map(|c| lead_num(c))
        .collect();
    let iops = |r: &[String]| -> Vec<f64> { r[2..5].iter().map(|c| lead_num(c)).collect() };
    let errors =
        |v: &[f64]| -> Vec<f64> { v.iter().zip(&published).map(|(a, p)| pct(*a, *p)).collect() };
    let shipped = iops(&fio[0]);
    let r = line("fio-randread");
    let show = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x}"))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    assert_eq!(r[1], format!("{} IOPS", show(&shipped)));
    assert_eq!(r[2], format!("{} IOPS", show(&published)));
    let e = errors(&shipped);
    assert_eq!(
        r[3],
        e.iter()
            .map(|x| signed_pct(*x))
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert_eq!(r[5], inside(&e, None));
    let first = errors(&iops(row(&fio, "sata-500g-2008 as first registered")));
    assert!(
        r[6].contains(
            &first
                .iter()
                .map(|x| signed_pct(*x))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        "{first:?} {r:?}"
    );
    // mkfs-overhead: the model's figures are the published ones.
    let mk = budget_rows("budget-mkfs-overhead");
    let published = mk.iter().find(|r| r[0] == "*published*").unwrap();
    for i in 2..6 {
        assert_eq!(mk[0][i], published[i].trim_matches('*'), "mkfs column {i}");
    }
    let r = line("mkfs-overhead");
    assert_eq!(
        r[1],
        format!(
            "journal {} MiB; df {} / {} / {} 1K",
            mk[0][2], mk[0][3], mk[0][4], mk[0][5]
        )
    );
    assert_eq!(r[3], "equal");
}

/// A range cell of metacluster-io's preset-values row, "A … B → C … D s (E … F%)", as
/// ((A, B), (C, D), (E, F)).
fn mio_range(cell: &str) -> ((f64, f64), (f64, f64), (f64, f64)) {
    let span = |t: &str| -> (f64, f64) {
        let (a, b) = t
            .split_once(" … ")
            .unwrap_or_else(|| panic!("'{t}' in '{cell}'"));
        (lead_num(a.trim()), lead_num(b.trim()))
    };
    let (a, rest) = cell.split_once(" → ").unwrap();
    let (m, c) = rest.split_once(" s (").unwrap();
    (span(a), span(m), span(c.trim_end_matches("%)")))
}

/// metacluster-io's preset-values row: the shipped run's own time lies inside every range (the
/// variants are the preset with one value changed, and the preset itself prices as shipped),
/// and the prose quotes benchmark 1's change range and benchmark 3's widest ext3-2007 time and
/// lowest change as the block prints them.
#[test]
fn metacluster_io_preset_values_row_and_its_prose_follow_the_block() {
    let rows = budget_rows("budget-metacluster-io");
    let values = row_named(&rows, "device: preset values");
    assert!(
        values[1].starts_with("the 19 variants of sata-400g-2007"),
        "{values:?}"
    );
    let shipped = row_named(&rows, "as shipped");
    for b in 1..=4 {
        let (a, m, c) = mio_range(&values[1 + b]);
        let (sa, sm, sc) = arrow_cell(&shipped[1 + b]);
        for (x, (lo, hi)) in [(sa, a), (sm, m), (sc, c)] {
            // The variants leave some values as shipped: the shipped time is within the range
            // to the printed digit.
            assert!(
                lo - 0.05 <= x && x <= hi + 0.05,
                "b{b}: {x} outside {lo} … {hi}"
            );
        }
    }
    let text = doc_prose();
    let (_, _, c1) = mio_range(&values[2]);
    let (a3, _, c3) = mio_range(&values[4]);
    for claim in [
        format!(
            "None takes benchmark 1's change near the post's: {} to {},",
            signed_pct(c1.0),
            signed_pct(c1.1)
        ),
        format!(
            "benchmark 3 takes {:.1} → 190.0 s ({})",
            a3.1,
            signed_pct(c3.0)
        ),
    ] {
        assert!(text.contains(&claim), "the prose no longer says: {claim}");
    }
}

/// The netbook's factors switched together (`ONLY=netbook docs/regenerate-budgets.sh`): the
/// block adds up, and the prose and the summary row quote it.
/// - each reduction is its row's seconds' and each CPU charge its row's CPU times F (to the
///   printed rounding); the rows that name one checker made the same requests, as the block's
///   provenance says;
/// - the prose's times, how far below the post's, the CPU here, charged and published, the
///   ratios it states between them, and the reductions of the three combinations it compares;
/// - the "Against the aim" row quotes the combination of all three.
#[test]
fn netbook_together_block_adds_up_and_the_prose_follows() {
    let rows = budget_rows("budget-ext4-fsck-allocator-together");
    let published = row_named(&rows, "*the post's*");
    let ours: Vec<&Vec<String>> = rows.iter().filter(|r| !r[0].starts_with('*')).collect();
    let f_of = |r: &[String]| -> Option<f64> { r[1].split_once("F = ").map(|(_, f)| num(f)) };
    for r in &ours {
        let (a, b) = (num(&r[3]), num(&r[4]));
        assert!(is_reduction_of(lead_num(&r[5]), a, b), "{r:?}");
        if let Some(f) = f_of(r) {
            let (c1, c2) = pair(&r[7]);
            let (x1, x2) = pair(&r[8]);
            // The CPU cells print 0.01 s, the charge 0.1 s.
            for (c, x) in [(c1, x1), (c2, x2)] {
                assert!(
                    (c * f - x).abs() <= 0.005 * f + 0.05,
                    "{c} × {f} ≠ {x}: {r:?}"
                );
            }
        }
    }
    // Each row is its own capture: one checker's streams lie within the spread of one
    // capture ("The spread of one capture": at most 0.13% between eight captures of one run
    // in its generation of 2026-11-27, 0.09% in that of 2026-11-29; 0.5% allowed), so the
    // rows price about the same stream.
    for checker in ["today's", "e2fsck"] {
        let requests: Vec<(f64, f64)> = ours
            .iter()
            .filter(|r| r[0].starts_with(checker))
            .map(|r| pair(&r[6]))
            .collect();
        assert!(requests.len() >= 2, "{checker}: {rows:?}");
        for (a, b) in &requests {
            let (a0, b0) = requests[0];
            assert!(
                (a / a0 - 1.0).abs() <= 0.005 && (b / b0 - 1.0).abs() <= 0.005,
                "{checker}'s rows made different streams: {requests:?}"
            );
        }
    }
    let find = |checker: &str, device: &str| -> &Vec<String> {
        ours.iter()
            .find(|r| r[0].starts_with(checker) && f_of(r).is_some() && r[2] == device)
            .unwrap_or_else(|| panic!("no row {checker} / period CPU / {device}: {rows:?}"))
    };
    let all = find("e2fsck", "ssd-sata-2010");
    let on_disk = find("e2fsck", "sata-160g-2009");
    let today_ssd = find("today's", "ssd-sata-2010");
    let (a, b) = (num(&all[3]), num(&all[4]));
    let (pa, pb) = (num(&published[3]), num(&published[4]));
    let below = |x: f64, p: f64| format!("{:.0}", (1.0 - x / p) * 100.0);
    let (c1, c2) = pair(&all[7]);
    let (x1, x2) = pair(&all[8]);
    let (p1, p2) = pair(&published[7]);
    let f = f_of(all).unwrap();
    let text = doc_prose();
    for claim in [
        format!(
            "give {a:.1} → {b:.1} s, {}% and {}% below the post's {pa} → {pb} s",
            below(a, pa),
            below(b, pb)
        ),
        format!("spends {c1:.2} and {c2:.2} s (user + sys)"),
        format!("F makes {x1:.1} and {x2:.1} s of it"),
        format!("the netbook's e2fsck spent {p1} and {p2} s"),
        format!(
            "about {:.0} and {:.0} times slower there than here, where sysbench's ratio is {f}",
            p1 / c1,
            p2 / c2
        ),
        format!("({} against {})", all[5], published[5].trim_matches('*')),
        format!("the same checker and CPU give {}", on_disk[5]),
        format!("the CPU and the SSD {}", today_ssd[5]),
    ] {
        assert!(text.contains(&claim), "the prose no longer says: {claim}");
    }
    let claim = format!(
        "{a:.1} → {b:.1} s ({}): the device's part goes, the CPU's stays, F making {x1:.1} and {x2:.1} s of our CPU",
        all[5]
    );
    assert!(
        text.contains(&claim),
        "the summary row no longer says: {claim}"
    );
}

/// metacluster-fsck's phase block (`ONLY=phase`): ext3-2007's pass-1 reads of indirect blocks by
/// tenth of the disk add up to its "all" row, a uniformly drawn phase is the shortest read plus
/// half a revolution at 7,200 rpm, the check at that mean is the modelled check less what the
/// reads would save, each reduction and percentage follows from the printed seconds, and the
/// prose (and the summary's metacluster-fsck row) gives the block's figures.
#[test]
fn metacluster_fsck_phase_block_adds_up_and_the_prose_follows() {
    let block = block_text("fidelity.md", "metacluster-fsck-phase");
    let tables: Vec<Vec<Vec<String>>> = block
        .split("\n\n")
        .filter(|p| p.trim_start().starts_with('|'))
        .map(table_rows)
        .collect();
    assert_eq!(tables.len(), 2, "{block}");
    let (tenths, facts) = (&tables[0], &tables[1]);
    let n = |c: &str| num(&c.replace(',', ""));
    let all = tenths.last().unwrap();
    assert_eq!(all[0], "**all**");
    let parts = &tenths[..tenths.len() - 1];
    assert_eq!(parts.len(), 10);
    let reads = n(&all[1]);
    assert_eq!(parts.iter().map(|r| n(&r[1])).sum::<f64>(), reads);
    let seconds = n(&all[3]);
    let summed: f64 = parts.iter().map(|r| n(&r[3])).sum();
    assert!((summed - seconds).abs() <= 0.55, "{summed} {seconds}");
    let mean = n(&all[2]);
    assert!((seconds * 1e3 / reads - mean).abs() <= 0.006, "{mean}");
    let means: Vec<f64> = parts.iter().map(|r| n(&r[2])).collect();
    let (lo, hi) = means
        .iter()
        .fold((f64::MAX, f64::MIN), |(l, h), &m| (l.min(m), h.max(m)));
    // "808.4 s, 224.2 s, 72.3%" and the like: the numbers of a cell in order.
    let figures = |prefix: &str| -> Vec<f64> {
        let r = facts
            .iter()
            .find(|r| r[0].starts_with(prefix))
            .unwrap_or_else(|| panic!("no row '{prefix}…'"));
        r[1].split(", ")
            .map(|f| {
                num(f
                    .split(" (")
                    .next()
                    .unwrap()
                    .trim_end_matches(['s', 'm', '%', ' ']))
            })
            .collect()
    };
    let (a, b, red) = {
        let f = figures("the check as modelled");
        (f[0], f[1], f[2])
    };
    assert!(((1.0 - b / a) * 100.0 - red).abs() <= 0.06, "{red}");
    let shortest = figures("the shortest read")[0];
    let uniform = figures("a phase drawn uniformly")[0];
    assert!(
        (shortest + 60_000.0 / 7_200.0 / 2.0 - uniform).abs() <= 0.011,
        "{uniform}"
    );
    let (at_mean, less) = {
        let f = figures("the reads at that mean");
        (f[0], f[1])
    };
    assert!(
        (uniform * reads / 1e3 - at_mean).abs() <= 0.005 * reads / 1e3 + 0.05,
        "{at_mean}"
    );
    assert!((seconds - at_mean - less).abs() <= 0.11, "{less}");
    let (check_at, red_at) = {
        let f = figures("the check at that mean");
        (f[0], f[1])
    };
    assert!((a - less - check_at).abs() <= 0.11, "{check_at}");
    assert!(
        ((1.0 - b / check_at) * 100.0 - red_at).abs() <= 0.06,
        "{red_at}"
    );
    // The other draws: each "A s (+x%), B s (+y%), R%" against the check as modelled.
    let draws: Vec<&Vec<String>> = facts
        .iter()
        .filter(|r| r[0].starts_with("another draw"))
        .collect();
    assert_eq!(draws.len(), 2, "{facts:?}");
    let mut moved = Vec::new();
    for d in &draws {
        let cells: Vec<&str> = d[1].split(", ").collect();
        let pct = |c: &str| num(c.split(" (").nth(1).unwrap().trim_end_matches("%)"));
        let f = figures(&d[0]);
        assert!(
            ((f[0] / a - 1.0) * 100.0 - pct(cells[0])).abs() <= 0.06,
            "{d:?}"
        );
        assert!(
            ((f[1] / b - 1.0) * 100.0 - pct(cells[1])).abs() <= 0.06,
            "{d:?}"
        );
        assert!(((1.0 - f[1] / f[0]) * 100.0 - f[2]).abs() <= 0.06, "{d:?}");
        moved.push((pct(cells[0]), f[2] - red));
    }
    let text = doc_prose();
    let signed = |x: f64| format!("{x:+.1}").replace("+-", "-");
    for claim in [
        format!(
            "The model charges ext3-2007's {} indirect reads {mean:.2} ms each** on average, {seconds:.1} s of the check's {a:.1} s; by tenth of the disk {lo:.2} to {hi:.2} ms a read",
            thousands(reads)
        ),
        format!("The shortest read takes {shortest:.2} ms"),
        format!(
            "cost {shortest:.2} + 4.17 = {uniform:.2} ms a read on average, {less:.1} s less than the model's draw: ext3-2007 {check_at:.1} s and the reduction {red_at:.1}% against {red:.1}%"
        ),
        format!(
            "the model's draw lies {:.2} ms a read above the uniform mean, worth {:.1} points",
            mean - uniform,
            red - red_at
        ),
        format!(
            "move ext3-2007 by {}% and {}% and the reduction by {} and {} points",
            signed(moved[0].0),
            signed(moved[1].0),
            signed(moved[0].1),
            signed(moved[1].1)
        ),
        format!("a phase drawn uniformly gives {red_at:.1}% (block metacluster-fsck-phase)"),
    ] {
        assert!(text.contains(&claim), "the prose no longer says: {claim}");
    }
}
