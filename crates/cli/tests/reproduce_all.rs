//! `layoutlab reproduce all` in a real browser (Debian's chromium, headless; `make deps`
//! installs it), at a laptop's 1280 px and a phone's 390 px: the page loads with no script
//! errors, every plot renders with a non-empty box, every table holds numbers, no table is
//! wider than its box unless that box scrolls, no Markdown markup shows in the text, every
//! figure has a caption that is a sentence and not a file name, no heading repeats the one
//! before it, each experiment carries its error budget, and a phone-width screenshot is not
//! blank. And Ctrl-C: the page shows what
//! finished and nothing is left behind.

use std::path::Path;
use std::process::{Command, Stdio};

fn is_root() -> bool {
    extern "C" {
        fn geteuid() -> u32;
    }
    unsafe { geteuid() == 0 }
}

fn chromium(args: &[&str]) -> std::process::Output {
    Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--virtual-time-budget=5000",
        ])
        .args(args)
        .output()
        .expect("chromium is not installed: run `make deps` (Debian package chromium)")
}

/// A page beside `page` that shows it in a frame `width` × `height` pixels wide, scrolled to
/// `anchor`, and copies its check result to its own body. Headless chromium will not make a
/// window narrower than 500 pixels (a `--window-size=390,844` page lays out 485 pixels wide), so
/// a phone's width is a frame's.
fn frame(page: &Path, width: u32, height: u32, anchor: &str) -> std::path::PathBuf {
    let name = page.file_name().unwrap().to_str().unwrap();
    let path = page.with_file_name(format!("frame-{width}.html"));
    std::fs::write(
        &path,
        format!(
            "<!doctype html><html><body style=\"margin:0\"><iframe id=\"f\" src=\"{name}?check{anchor}\" \
             style=\"border:0;width:{width}px;height:{height}px\"></iframe><script>\
             document.getElementById('f').addEventListener('load',function(){{\
             document.body.setAttribute('data-check',this.contentDocument.body.getAttribute('data-check'))}});\
             </script></body></html>\n"
        ),
    )
    .unwrap();
    path
}

/// Loads `page` with `?check` in a frame `width` pixels wide: the check script's JSON.
fn check_page(page: &Path, width: u32) -> serde_json::Value {
    let harness = frame(page, width, 844, "");
    let out = chromium(&[
        "--allow-file-access-from-files",
        "--window-size=1400,900",
        "--dump-dom",
        &format!("file://{}", harness.display()),
    ]);
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    let at = dom.find("data-check=\"").expect("the check script ran") + 12;
    let raw = &dom[at..at + dom[at..].find('"').unwrap()];
    serde_json::from_str(
        &raw.replace("&quot;", "\"")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&"),
    )
    .unwrap_or_else(|e| panic!("{e}: {raw}"))
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("ll-all-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn the_page_renders_in_a_real_browser() {
    if !is_root() {
        eprintln!("SKIP the_page_renders_in_a_real_browser: metacluster-fsck needs root");
        return;
    }
    let dir = scratch("page");
    let out = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args([
            "reproduce",
            "all",
            "--only",
            "mkfs-overhead,fio-randread,metacluster-fsck",
            "--out",
        ])
        .arg(&dir)
        .arg("--json")
        .arg(dir.join("r.json"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).unwrap()).unwrap();
    let xs = v["experiments"].as_array().unwrap();
    assert_eq!(xs.len(), 3);
    for x in xs {
        assert_eq!(x["status"], "done", "{x}");
        assert!(x["result"].is_object(), "{x}");
        // where its time went, by the run's own clock: every stage, within its wall time
        let stages = x["stage_seconds"].as_object().unwrap();
        assert_eq!(
            stages.len(),
            layoutlab_experiments::stages::ALL.len(),
            "{x}"
        );
        let sum: f64 = stages.values().map(|v| v.as_f64().unwrap()).sum();
        assert!(sum > 0.0 && sum <= x["seconds"].as_f64().unwrap(), "{x}");
        // What its processes used: some CPU (metacluster-fsck's runs e2fsck twice), and a
        // resident set of at least the layoutlab binary's own pages.
        let cpu = x["cpu_seconds"].as_f64().unwrap();
        assert!(cpu > 0.0, "{x}");
        assert!(x["peak_rss_bytes"].as_u64().unwrap() >= 1 << 20, "{x}");
    }
    let named = |n: &str| xs.iter().find(|x| x["name"] == n).unwrap();
    // metacluster-fsck plans, writes two images and checks them; mkfs-overhead only prices.
    assert!(
        named("metacluster-fsck")["cpu_seconds"].as_f64().unwrap()
            > named("mkfs-overhead")["cpu_seconds"].as_f64().unwrap(),
        "{v}"
    );
    let page = dir.join("index.html");
    for width in [1280, 390] {
        let check = check_page(&page, width);
        assert_eq!(check["errors"].as_array().unwrap().len(), 0, "{check}");
        let svgs = check["svgs"].as_array().unwrap();
        assert!(svgs.len() >= 3, "{check}");
        for s in svgs {
            assert!(
                s[0].as_f64().unwrap() > 50.0 && s[1].as_f64().unwrap() > 50.0,
                "{check}"
            );
            // Scaled to the window's width.
            assert!(s[0].as_f64().unwrap() <= width as f64, "{check}");
        }
        let tables = check["tables"].as_array().unwrap();
        assert!(tables.len() >= 4, "{check}");
        assert!(tables.iter().all(|t| t == true), "{check}");
        // No column cut off: a table wider than its box is in a box that scrolls, and no box
        // (nor anything else) is wider than the window.
        assert_eq!(
            check["clipped"],
            serde_json::json!([]),
            "{width} px: {check}"
        );
        let page_width = check["page"].as_array().unwrap();
        assert!(
            page_width[0].as_f64() <= page_width[1].as_f64(),
            "{width} px: the page is wider than the window: {check}"
        );
        // Rendered, not pasted: no Markdown emphasis left in the text.
        assert_eq!(
            check["markup"],
            serde_json::json!([]),
            "{width} px: {check}"
        );
        // Every figure says what it shows in a sentence; its file name is only the link.
        let figures = check["figures"].as_array().unwrap();
        assert_eq!(figures.len(), svgs.len(), "{check}");
        for f in figures {
            let caption = f
                .as_str()
                .unwrap_or_else(|| panic!("a figure without a caption: {check}"));
            assert!(
                caption.split_whitespace().count() >= 5 && !caption.contains(".svg"),
                "caption {caption:?} is not a sentence"
            );
        }
        // A heading never repeats the one before it (the experiment's name twice).
        let headings: Vec<&str> = check["headings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h.as_str().unwrap())
            .collect();
        for pair in headings.windows(2) {
            assert_ne!(pair[0], pair[1], "{headings:?}");
        }
    }
    let text = std::fs::read_to_string(&page).unwrap();
    for name in [
        "mkfs-overhead",
        "fio-randread",
        "metacluster-fsck",
        "published",
    ] {
        assert!(text.contains(name), "{name}");
    }
    // Each of the three has an error budget in docs/fidelity.md, and the page carries it: the
    // section's heading once per experiment, each experiment's own block, and the summary's row
    // of the two that have hardware and published times.
    assert_eq!(
        text.matches("Error budget (docs/fidelity.md)").count(),
        3,
        "one budget per experiment"
    );
    // Each budget is a link target (docs/reproduce-all.md: `index.html#error-budget-NAME`).
    for name in ["mkfs-overhead", "fio-randread", "metacluster-fsck"] {
        assert!(
            text.contains(&format!("id=\"error-budget-{name}\"")),
            "{name}'s budget has no anchor"
        );
    }
    for caption in [
        "budget-mkfs-overhead",
        "budget-fio-randread",
        "budget-metacluster-fsck",
        "metacluster-fsck-bench5",
        "Against the aim",
    ] {
        assert!(
            text.contains(&format!("<caption>{caption}</caption>")),
            "{caption}"
        );
    }
    // A phone-width screenshot that is not blank.
    let shot = dir.join("shot.png");
    let harness = frame(&page, 390, 844, "");
    let o = chromium(&[
        "--allow-file-access-from-files",
        "--window-size=390,844",
        &format!("--screenshot={}", shot.display()),
        &format!("file://{}", harness.display()),
    ]);
    assert!(shot.exists(), "{}", String::from_utf8_lossy(&o.stderr));
    let decoder = png::Decoder::new(std::fs::File::open(&shot).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let bytes = &buf[..info.buffer_size()];
    let px = info.color_type.samples();
    let mut colours = std::collections::HashSet::new();
    let mut ink = 0usize;
    for p in bytes.chunks(px) {
        colours.insert(p[..3.min(px)].to_vec());
        if p[..3.min(px)].iter().any(|&c| c < 200) {
            ink += 1;
        }
    }
    let pixels = bytes.len() / px;
    assert_eq!((info.width, info.height), (390, 844));
    assert!(colours.len() > 20, "{} colours", colours.len());
    assert!(
        ink * 100 > pixels,
        "only {ink} of {pixels} pixels are not near white"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ctrl_c_keeps_what_finished_and_leaves_nothing() {
    if !is_root() {
        eprintln!("SKIP ctrl_c_keeps_what_finished_and_leaves_nothing: large-delete needs root");
        return;
    }
    let dir = scratch("int");
    let mut child = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args([
            "reproduce",
            "all",
            "--only",
            "mkfs-overhead,large-delete",
            "--out",
        ])
        .arg(&dir)
        .env("TMPDIR", &dir)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("stderr.txt")).unwrap())
        .spawn()
        .unwrap();
    // Wait until large-delete runs (its own process exists), then Ctrl-C.
    let page = dir.join("index.html");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(&page).unwrap_or_default();
        if text.contains("status Running\">Running")
            && Path::new(&dir.join("large-delete/log.txt")).exists()
        {
            std::thread::sleep(std::time::Duration::from_secs(2));
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "large-delete never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let status = child.wait().unwrap();
    // On a wrong status, say what each process said: `reproduce all` and large-delete.
    assert_eq!(
        status.code(),
        Some(130),
        "{status}; reproduce all said:\n{}\nlarge-delete said:\n{}",
        std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default(),
        std::fs::read_to_string(dir.join("large-delete/log.txt")).unwrap_or_default()
    );
    let text = std::fs::read_to_string(&page).unwrap();
    assert!(
        text.contains(
            "<a href=\"#mkfs-overhead\">mkfs-overhead</a></td><td class=\"status Done\">Done"
        ),
        "{text}"
    );
    assert!(text.contains("status Interrupted\">Interrupted"), "{text}");
    // Nothing of the interrupted experiment is left: no loop device, mount or temp file. A
    // zram device still held when the signal came is reset by a detached retry after the
    // process is gone (rig zram.rs), and its record goes with it: give that its minute.
    let d = dir.to_str().unwrap().to_string();
    let leftovers = || {
        let loops =
            String::from_utf8_lossy(&Command::new("losetup").arg("-a").output().unwrap().stdout)
                .lines()
                .filter(|l| l.contains(&d))
                .map(str::to_string)
                .collect::<Vec<_>>();
        let mounts = std::fs::read_to_string("/proc/self/mountinfo")
            .unwrap()
            .lines()
            .filter(|l| l.contains(&d))
            .map(str::to_string)
            .collect::<Vec<_>>();
        let files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("layoutlab-"))
            .collect();
        (loops, mounts, files)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(75);
    let (loops, mounts, left) = loop {
        let l = leftovers();
        if (l.0.is_empty() && l.1.is_empty() && l.2.is_empty())
            || std::time::Instant::now() > deadline
        {
            break l;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert!(loops.is_empty(), "{loops:?}");
    assert!(mounts.is_empty(), "{mounts:?}");
    assert!(left.is_empty(), "{left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
