//! The README's headline figure, and the default scale's beside it in
//! docs/experiments/metacluster-fsck.md, are what `reproduce metacluster-fsck` predicts now:
//! `docs/regenerate-figures.sh` writes them from one run, and this test runs it again. A change
//! of the model or the layout that moves a figure by more than run-to-run noise fails here
//! until the figures are regenerated.

mod common;

use common::{fsck_json, is_root, scratch};
use std::path::Path;

/// (before, after) seconds of the generated headline block `name` of `file`: the first two
/// numbers followed by " s" inside the block.
fn headline(file: &str, name: &str) -> (f64, f64) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let begin = format!("<!-- BEGIN generated {name} -->");
    let block = text
        .split(&begin)
        .nth(1)
        .and_then(|t| t.split("<!-- END generated").next())
        .unwrap_or_else(|| panic!("{file} has no generated block {name}"));
    let seconds: Vec<f64> = block
        .split(" s")
        .filter_map(|part| {
            let tail = part
                .rsplit(|c: char| !(c.is_ascii_digit() || c == '.'))
                .next()?;
            tail.parse().ok()
        })
        .take(2)
        .collect();
    assert_eq!(seconds.len(), 2, "{file} {name}: {block}");
    (seconds[0], seconds[1])
}

/// Totals of ext3-2007 and ext3-metacluster at `scale`.
fn predicted(scale: &str) -> (f64, f64) {
    let dir = scratch("readme", scale);
    let v = fsck_json(scale, &dir);
    std::fs::remove_dir_all(&dir).unwrap();
    let total = |policy: &str| {
        v["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["policy"] == policy)
            .unwrap()["total_seconds"]
            .as_f64()
            .unwrap()
    };
    (total("ext3-2007"), total("ext3-metacluster"))
}

/// Within 3% each: a run's totals move by up to 0.5% with a disk's rotational position
/// (tests/load_independence.rs), and the printed figures are rounded to whole seconds.
fn assert_close(what: &str, doc: (f64, f64), ours: (f64, f64)) {
    eprintln!("{what}: documented {doc:?} s, predicted now {ours:?} s");
    for (d, o) in [(doc.0, ours.0), (doc.1, ours.1)] {
        assert!(
            (d - o).abs() <= 0.03 * o + 0.5,
            "{what}: the docs say {} s -> {} s, a run now predicts {:.1} s -> {:.1} s: \
             regenerate the figures (make docs-figures) and re-read the prose around them",
            doc.0,
            doc.1,
            ours.0,
            ours.1
        );
    }
}

#[test]
fn the_documented_headlines_are_what_the_experiment_predicts() {
    if !is_root() {
        eprintln!("skipped: the experiment needs root (loop devices, tracefs)");
        return;
    }
    let readme = headline("README.md", "headline");
    let doc = headline("docs/experiments/metacluster-fsck.md", "headline");
    assert_eq!(readme, doc, "README and the experiment's page disagree");
    assert_close("scale 1", readme, predicted("1"));
    let small = headline("docs/experiments/metacluster-fsck.md", "headline-scale0.05");
    assert_close("scale 0.05", small, predicted("0.05"));
}
