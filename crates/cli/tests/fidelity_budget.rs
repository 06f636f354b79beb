//! docs/fidelity.md's error budgets (issue 27), held: the generated `budget-NAME` tables that
//! `docs/regenerate-budgets.sh` writes are rerun here where a run is affordable (the model's
//! rows are deterministic, so they must agree to the printed digit), and the refusal that keeps
//! a CPU factor off experiments that have no think time to scale.

mod common;

use common::{layoutlab, scratch, stderr};

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
        assert!(err.contains("fsck, aging, metacluster-io"), "{err}");
        assert!(
            !out.exists(),
            "{name}: the refused run wrote {}",
            out.display()
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
