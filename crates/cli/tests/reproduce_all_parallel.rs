//! `reproduce all --parallel N`: the same page as one at a time (its deterministic fields), in
//! the shipped order whatever order the experiments ended in; the memory guard keeps
//! experiments apart when their expected needs do not fit together; bad input is refused
//! before anything runs. Two quick experiments that need no root (mkfs-overhead, fio-randread).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ONLY: &str = "mkfs-overhead,fio-randread";

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ll-allpar-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn reproduce_all(out: &Path, extra: &[&str]) -> Output {
    let o = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args(["reproduce", "all", "--only", ONLY, "--out"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o
}

fn all_json(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("all.json")).unwrap()).unwrap()
}

/// What does not depend on the clock: per experiment, in the page's order, its name, status,
/// its own results and which stages its clock saw.
fn deterministic(v: &serde_json::Value) -> Vec<serde_json::Value> {
    v["experiments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            let stages: Vec<&String> = x["stage_seconds"]
                .as_object()
                .map(|m| m.keys().collect())
                .unwrap_or_default();
            serde_json::json!([x["name"], x["status"], x["result"], stages])
        })
        .collect()
}

/// The section headings of the page, in order.
fn headings(out: &Path) -> Vec<String> {
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    page.split("<h2 id=\"")
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].to_string())
        .collect()
}

#[test]
fn two_at_once_give_the_page_of_one_at_a_time() {
    let d = scratch("same");
    let (one, two) = (d.join("one"), d.join("two"));
    reproduce_all(&one, &[]);
    // Times that make the run order (longest first) the reverse of the shipped order, and
    // needs that fit together.
    let hint = d.join("hint.json");
    std::fs::write(
        &hint,
        serde_json::json!({"experiments": [
            {"name": "mkfs-overhead", "seconds": 1.0, "peak_rss_bytes": 1 << 20},
            {"name": "fio-randread", "seconds": 2.0, "peak_rss_bytes": 1 << 20},
        ]})
        .to_string(),
    )
    .unwrap();
    let o = reproduce_all(
        &two,
        &["--parallel", "2", "--memory-from", hint.to_str().unwrap()],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.find("running fio-randread") < err.find("running mkfs-overhead"),
        "fio-randread was to start first: {err}"
    );
    let (a, b) = (all_json(&one), all_json(&two));
    assert_eq!(a["parallel"], 1);
    assert_eq!(b["parallel"], 2);
    assert_eq!(deterministic(&a), deterministic(&b));
    assert_eq!(
        deterministic(&a)
            .iter()
            .map(|x| x[0].as_str().unwrap().to_string())
            .collect::<Vec<_>>(),
        ONLY.split(',').collect::<Vec<_>>(),
        "all.json lists the experiments in the shipped order"
    );
    assert_eq!(headings(&one), headings(&two));
    assert_eq!(headings(&two), ONLY.split(',').collect::<Vec<_>>());
    // each records when it ran
    for x in b["experiments"].as_array().unwrap() {
        let (from, to) = (
            x["from_seconds"].as_f64().unwrap(),
            x["to_seconds"].as_f64().unwrap(),
        );
        assert!(0.0 <= from && from <= to, "{x}");
    }
    let page = std::fs::read_to_string(two.join("index.html")).unwrap();
    assert!(page.contains("--parallel 2"), "the page says N");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn needs_that_do_not_fit_together_run_apart_and_say_why() {
    let d = scratch("apart");
    // An earlier all.json that says each needs 1 PB: none fits beside another, so with two
    // allowed they still run one after the other, and the wait is printed with its reason.
    let hint = d.join("hint.json");
    std::fs::write(
        &hint,
        serde_json::json!({"experiments": [
            {"name": "mkfs-overhead", "seconds": 1.0, "peak_rss_bytes": 1u64 << 50},
            {"name": "fio-randread", "seconds": 2.0, "peak_rss_bytes": 1u64 << 50},
        ]})
        .to_string(),
    )
    .unwrap();
    let out = d.join("out");
    let o = reproduce_all(
        &out,
        &["--parallel", "2", "--memory-from", hint.to_str().unwrap()],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("waiting for memory"), "{err}");
    assert!(err.contains("starts alone"), "{err}");
    let v = all_json(&out);
    let xs = v["experiments"].as_array().unwrap();
    let span = |x: &serde_json::Value| {
        (
            x["from_seconds"].as_f64().unwrap(),
            x["to_seconds"].as_f64().unwrap(),
        )
    };
    let (m, f) = (span(&xs[0]), span(&xs[1]));
    // fio-randread (2 s expected) ran first, mkfs-overhead only after it ended
    assert!(f.1 <= m.0, "they overlapped: {f:?} {m:?}");
    // they ended in the reverse of the shipped order; the page keeps the shipped one
    let page_order: Vec<&str> = xs.iter().map(|x| x["name"].as_str().unwrap()).collect();
    assert_eq!(page_order, ONLY.split(',').collect::<Vec<_>>());
    assert_eq!(headings(&out), ONLY.split(',').collect::<Vec<_>>());
    assert_eq!(xs[0]["expected_need_bytes"], 1u64 << 50);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn unknown_needs_do_not_start_together() {
    // No earlier run: each counts half the memory available, so the second waits for the
    // first whatever the machine has.
    let d = scratch("unknown");
    let out = d.join("out");
    let o = reproduce_all(&out, &["--parallel", "2"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("unknown for mkfs-overhead, fio-randread"),
        "{err}"
    );
    assert!(err.contains("waiting for memory"), "{err}");
    let v = all_json(&out);
    let xs = v["experiments"].as_array().unwrap();
    let (m, f) = (&xs[0], &xs[1]);
    assert!(
        m["to_seconds"].as_f64() <= f["from_seconds"].as_f64(),
        "they overlapped: {m} {f}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn bad_parallel_input_is_refused_before_anything_runs() {
    let d = scratch("bad");
    let out = d.join("out");
    for (args, says) in [
        (vec!["all", "--parallel", "0"], "0 is not in 1..=64"),
        (
            vec!["all", "--parallel", "x"],
            "invalid value 'x' for '--parallel <N>'",
        ),
        (
            vec![
                "all",
                "--parallel",
                "2",
                "--memory-from",
                "/nonexistent/all.json",
            ],
            "reading /nonexistent/all.json",
        ),
        (
            vec!["mkfs-overhead", "--parallel", "2"],
            "--parallel and --memory-from go with `reproduce all`",
        ),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
            .arg("reproduce")
            .args(&args)
            .args(["--only", ONLY].iter().filter(|_| args[0] == "all"))
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} was accepted");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(
            !out.exists(),
            "{args:?} made {} before refusing",
            out.display()
        );
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// Processes whose command line names `dir` (experiments of a run writing there).
fn processes_naming(dir: &Path) -> Vec<String> {
    let needle = dir.to_str().unwrap();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_str().unwrap().parse::<u32>().is_ok())
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(needle))
        .collect()
}

#[test]
fn ctrl_c_with_two_at_once_keeps_what_finished_and_stops_the_rest() {
    let d = scratch("int");
    let out = d.join("out");
    // cache-policies (tens of seconds of pricing) beside fio-randread (a fraction of one),
    // each said to need 1 MiB (unknown needs would keep them apart)
    let hint = d.join("hint.json");
    std::fs::write(
        &hint,
        serde_json::json!({"experiments": [
            {"name": "cache-policies", "seconds": 30.0, "peak_rss_bytes": 1 << 20},
            {"name": "fio-randread", "seconds": 1.0, "peak_rss_bytes": 1 << 20},
        ]})
        .to_string(),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args([
            "reproduce",
            "all",
            "--only",
            "cache-policies,fio-randread",
            "--parallel",
            "2",
            "--memory-from",
        ])
        .arg(&hint)
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(d.join("stderr.txt")).unwrap())
        .spawn()
        .unwrap();
    // Wait until fio-randread is done and cache-policies still runs, then Ctrl-C.
    let page = out.join("index.html");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(&page).unwrap_or_default();
        // Never seen half written (it is renamed into place).
        assert!(
            text.is_empty() || text.ends_with("</html>\n"),
            "a partial page: {text}"
        );
        if text.contains("status Done\">Done") && text.contains("status Running\">Running") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "fio-randread never ended beside cache-policies: {}",
            std::fs::read_to_string(d.join("stderr.txt")).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let status = child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(130),
        "{}",
        std::fs::read_to_string(d.join("stderr.txt")).unwrap_or_default()
    );
    let text = std::fs::read_to_string(&page).unwrap();
    let row = |name: &str| {
        let at = text.find(&format!("<a href=\"#{name}\">")).unwrap();
        text[at..at + text[at..].find("</tr>").unwrap()].to_string()
    };
    assert!(
        row("fio-randread").contains(">Done<"),
        "{}",
        row("fio-randread")
    );
    assert!(
        row("cache-policies").contains(">Interrupted<"),
        "{}",
        row("cache-policies")
    );
    assert_eq!(processes_naming(&out), Vec::<String>::new(), "left running");
    std::fs::remove_dir_all(&d).unwrap();
}
