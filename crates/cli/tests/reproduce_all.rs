//! `layoutlab reproduce all` in a real browser (Debian's chromium, headless; `make deps`
//! installs it): the page loads with no script errors, every plot renders with a non-empty
//! box, every table holds numbers, and a phone-width screenshot is not blank. And Ctrl-C: the
//! page shows what finished and nothing is left behind.

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
            "--virtual-time-budget=5000",
        ])
        .args(args)
        .output()
        .expect("chromium is not installed: run `make deps` (Debian package chromium)")
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
    }
    let page = dir.join("index.html");
    let url = format!("file://{}?check", page.display());
    let dom = chromium(&["--window-size=390,844", "--dump-dom", &url]);
    let dom = String::from_utf8_lossy(&dom.stdout).into_owned();
    let at = dom.find("data-check=\"").expect("the check script ran") + 12;
    let raw = &dom[at..at + dom[at..].find('"').unwrap()];
    let check: serde_json::Value = serde_json::from_str(&raw.replace("&quot;", "\"")).unwrap();
    assert_eq!(check["errors"].as_array().unwrap().len(), 0, "{check}");
    let svgs = check["svgs"].as_array().unwrap();
    assert!(svgs.len() >= 3, "{check}");
    for s in svgs {
        assert!(
            s[0].as_f64().unwrap() > 50.0 && s[1].as_f64().unwrap() > 50.0,
            "{check}"
        );
        // Scaled to the phone's width.
        assert!(s[0].as_f64().unwrap() <= 390.0, "{check}");
    }
    let tables = check["tables"].as_array().unwrap();
    assert!(tables.len() >= 4, "{check}");
    assert!(tables.iter().all(|t| t == true), "{check}");
    for name in [
        "mkfs-overhead",
        "fio-randread",
        "metacluster-fsck",
        "published",
    ] {
        assert!(dom.contains(name), "{name}");
    }
    // A phone-width screenshot that is not blank.
    let shot = dir.join("shot.png");
    let o = chromium(&[
        "--window-size=390,844",
        &format!("--screenshot={}", shot.display()),
        &format!("file://{}", page.display()),
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
