//! `layoutlab bench ...`: how fast layoutlab itself is (targets live here, not in timed tests).

use super::device::load_device;
use super::{write_json, Human};
use anyhow::Result;
use clap::Subcommand;
use layoutlab_device::bench::bench_replay;
use std::path::PathBuf;

/// Benchmarks.
#[derive(Subcommand)]
pub enum Command {
    /// Replay a synthetic trace (mixed seeks and sequential runs) through a device model and
    /// report requests per second on one core. Target: ≥ 10 million requests/s on the HDD model.
    Replay {
        /// Requests in the synthetic trace.
        #[arg(long, default_value_t = 1_000_000)]
        requests: usize,
        /// Device preset.
        #[arg(long, default_value = "sata-400g-2007")]
        device: String,
        /// Seed of the synthetic trace.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Write the result as JSON to PATH ("-" for stdout).
        #[arg(long, value_name = "PATH")]
        json: Option<PathBuf>,
    },
}

/// Run a benchmark.
pub fn run(cmd: Command) -> Result<()> {
    match cmd {
        Command::Replay {
            requests,
            device,
            seed,
            json,
        } => {
            let mut dev = load_device(&device)?;
            let r = bench_replay(dev.as_mut(), requests, seed);
            Human::new(json.as_deref()).say(&format!(
                "replayed {} requests on {} in {:.3} s: {:.2} million requests/s\n",
                r.requests,
                device,
                r.seconds,
                r.requests_per_second / 1e6
            ));
            if let Some(path) = json {
                write_json(&path, &r)?;
            }
            Ok(())
        }
    }
}
