//! Traces the real e2fsck on an image and prints per-tag request counts and bytes beside
//! e2fsck's own `-tt` figures: `trace_fsck IMAGE [READ_AHEAD_KB] [--no-prefetch]` (root).

use layoutlab_rig::{run_e2fsck_traced, FsckOptions, LoopDevice};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    layoutlab_rig::cleanup::install();
    let args: Vec<String> = std::env::args().collect();
    let image = args
        .get(1)
        .ok_or("usage: trace_fsck IMAGE [READ_AHEAD_KB] [--no-prefetch]")?;
    let read_ahead_kb: u32 = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(128);
    let opts = if args.iter().any(|a| a == "--no-prefetch") {
        FsckOptions::without_prefetch()
    } else {
        FsckOptions::default()
    };
    let dev = LoopDevice::attach(std::path::Path::new(image), true)?;
    dev.set_read_ahead_kb(read_ahead_kb)?;
    dev.set_scheduler_none()?;
    let t = std::time::Instant::now();
    let run = run_e2fsck_traced(dev.path(), dev.dev(), &opts)?;
    let trace = &run.capture.trace;
    println!(
        "e2fsck exit {}; {} requests, {} lost events, {:.2} s wall (tracing included)",
        run.exit_code,
        trace.requests.len(),
        run.capture.lost_events,
        t.elapsed().as_secs_f64()
    );
    println!(
        "{:>6} {:>9} {:>10} {:>9} {:>9}",
        "tag", "requests", "MiB", "tt_MiB", "tt_real_s"
    );
    for (index, tag) in trace.tags.iter().enumerate().skip(1) {
        let reqs: Vec<_> = trace
            .requests
            .iter()
            .filter(|r| r.tag as usize == index)
            .collect();
        let mib = reqs.iter().map(|r| r.bytes()).sum::<u64>() as f64 / 1048576.0;
        let pass = tag.strip_prefix("pass").and_then(|p| p.parse().ok());
        let section = pass.and_then(|p| run.times.pass(p));
        println!(
            "{tag:>6} {:>9} {mib:>10.2} {:>9} {:>9}",
            reqs.len(),
            section
                .and_then(|s| s.read_mib)
                .map_or("-".into(), |m| m.to_string()),
            section.map_or("-".into(), |s| format!("{:.2}", s.real_s))
        );
    }
    if let Some(total) = run.times.total() {
        println!(
            "total: e2fsck -tt {} MiB in {:.2} s",
            total.read_mib.unwrap_or(0),
            total.real_s
        );
    }
    Ok(())
}
