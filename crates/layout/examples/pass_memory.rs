//! What one policy's pass over an aging stream holds, per operation of the stream: the
//! memory metacluster-aging's guard (`CELL_BYTES_PER_OP` in
//! `crates/experiments/src/ops/aging/mod.rs`) budgets for each pass it runs at once.
//!
//! `cargo run --release -p layoutlab-layout --example pass_memory -- ubuntu-32g 0.25 [POLICY,...]`
//!
//! It makes the experiment's stream (seed 2007, fullness 0.8, ages 0, 1, 5, 10 and 25), then
//! for each policy gives freed memory back to the kernel (`malloc_trim`), notes the resident
//! set, resets the peak (`/proc/self/clear_refs`) and runs the policy's one pass with every
//! age's plan checked as the experiment checks it; the pass's share is the peak less the
//! resident set before it. Linux and glibc only.

use layoutlab_layout::mkfs::metadata_margin_bytes;
use layoutlab_layout::{policy, Geometry, MkfsProfile, PolicyParams};
use layoutlab_workload::aging::{age_prefixes, AgingSpec};
use std::ops::ControlFlow;

extern "C" {
    // glibc: give the free memory at the top of the heaps back to the kernel
    fn malloc_trim(pad: usize) -> i32;
}

/// `VmRSS` and `VmHWM` of this process, bytes.
fn rss_and_peak() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|kb| kb.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no {name} in /proc/self/status"))
            * 1024
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let workload = args.get(1).map_or("ubuntu-32g", String::as_str);
    let scale: f64 = args.get(2).map_or(Ok(0.25), |s| s.parse())?;
    let policies = args.get(3).map_or(
        "ext3-2007,ext3-metacluster,rext3,ext4-2009".to_string(),
        Clone::clone,
    );
    let ages = [0.0, 1.0, 5.0, 10.0, 25.0];
    let tree = layoutlab_workload::population_shrunk(workload, scale)?;
    let (aged, ends) = age_prefixes(
        &tree,
        &AgingSpec {
            fullness: Some(0.8),
            ..AgingSpec::new(25.0, 2007)
        },
        metadata_margin_bytes(tree.fs_bytes),
        &ages,
    )?;
    drop(tree);
    let mut ends = ends;
    ends.sort_unstable();
    let ops = aged.ops.len() as f64;
    // SAFETY: malloc_trim only returns free memory to the kernel.
    unsafe { malloc_trim(0) };
    let (with_stream, _) = rss_and_peak();
    println!(
        "{workload} at {scale}: {} operations; resident with the stream {:.3} GB ({:.0} bytes per operation, the tree's included)",
        aged.ops.len(),
        with_stream as f64 / 1e9,
        with_stream as f64 / ops
    );
    for name in policies.split(',') {
        let profile = if name.starts_with("ext4") {
            "ext4-2009"
        } else {
            "ext3-2007"
        };
        let geo = Geometry::new(&MkfsProfile::by_name(profile)?, aged.fs_bytes)?;
        let pol = policy::by_name(name, &PolicyParams::new())?;
        // SAFETY: as above.
        unsafe { malloc_trim(0) };
        let (before, _) = rss_and_peak();
        std::fs::write("/proc/self/clear_refs", "5")?;
        let mut checked = Ok(());
        pol.plan_prefixes(&geo, &aged, 2007, &ends, &mut |_, plan| {
            checked = plan.check(&geo);
            if checked.is_ok() {
                ControlFlow::Continue(())
            } else {
                ControlFlow::Break(())
            }
        })?;
        checked?;
        let (_, peak) = rss_and_peak();
        let held = peak.saturating_sub(before);
        println!(
            "{name}: the pass's peak above the stream {:.3} GB, {:.1} bytes per operation",
            held as f64 / 1e9,
            held as f64 / ops
        );
    }
    Ok(())
}
