//! `--cpu-scale F` in a closed-loop capture (issue 25, "Period CPU"): e2fsck is held to K/F of
//! one CPU by a cpu cgroup (CFS and real-time bandwidth, `CpuThrottle`), so it computes F/K
//! times slower while the emulated device answers K times faster. Root only.

mod common;

use common::*;

/// metacluster-fsck at scale 0.005, K = 1, F = 200: a share of 0.005, so e2fsck's 35-70 ms of
/// CPU must stretch over at least 7-14 s. The bound holds whatever the machine's load (load
/// only lengthens a run). Before the throttled program was pinned to one CPU, one such run took
/// 7.9 s where 13.2 s were the least (a group's real-time runtime is per CPU, and e2fsck woke on
/// either CPU); whether it migrates depends on the machine's load, so the pin itself is held
/// by the rig's `cpucg` unit test.
#[test]
fn a_closed_loop_check_at_a_cpu_factor_runs_throttled_and_charges_the_slower_cpu() {
    if !is_root() {
        eprintln!("skipped: a closed-loop capture needs root (FUSE mount, loop device, cgroups)");
        return;
    }
    let dir = scratch("closed-loop-cpu", "f200");
    let json = dir.join("r.json");
    let o = layoutlab(&[
        "reproduce",
        "metacluster-fsck",
        "--scale",
        "0.005",
        "--closed-loop",
        "1",
        "--cpu-scale",
        "200",
        "--out",
        dir.join("out").to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for run in runs {
        let closed = &run["closed_loop"];
        let share = closed["cpu_share"]
            .as_f64()
            .unwrap_or_else(|| panic!("{run}"));
        assert!((share - 0.005).abs() < 1e-12, "K/F: {run}");
        let here = &run["measured_here"];
        let cpu = here["scheduler_cpu_seconds"].as_f64().unwrap();
        let cpu_in_trace = here["scheduler_cpu_in_trace_seconds"].as_f64().unwrap();
        let wall = here["stage_seconds"]["traced_check"].as_f64().unwrap();
        assert!(cpu > 0.01, "too little CPU to test a throttle: {run}");
        // At most `share` of a CPU in every 200 ms period (1 ms quota): the check cannot end
        // sooner than its CPU over the share, less one period.
        assert!(
            wall >= cpu / share - 0.2,
            "not throttled: {wall} s for {cpu} s of CPU: {run}"
        );
        // The measured time charges the time between requests as the slow CPU's computing.
        let measured = closed["measured_seconds"].as_f64().unwrap();
        assert!(
            measured >= 0.5 * cpu_in_trace / share,
            "{measured} s measured for {cpu_in_trace} s of CPU at F = 200: {run}"
        );
        assert_eq!(closed["requests_served"], run["requests"], "{run}");
    }
    // No cpu cgroup of this run is left.
    let leftovers: Vec<_> = std::fs::read_dir("/sys/fs/cgroup/cpu")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("layoutlab-"))
                .collect()
        })
        .unwrap_or_default();
    assert!(
        leftovers.iter().all(|n| {
            let pid: u32 = n
                .split('-')
                .nth(1)
                .and_then(|p| p.parse().ok())
                .unwrap_or(0);
            std::path::Path::new(&format!("/proc/{pid}")).exists()
        }),
        "left behind: {leftovers:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
