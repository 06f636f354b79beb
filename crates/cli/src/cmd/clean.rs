//! `layoutlab clean`: remove what a killed layoutlab left behind (see `layoutlab_rig::stale`).

use super::{write_json, Human};
use anyhow::{Context, Result};
use layoutlab_rig::stale::{self, Stale};
use serde::Serialize;
use std::path::PathBuf;

/// Arguments of `layoutlab clean`.
#[derive(clap::Args)]
pub struct Args {
    /// Only list what would be removed.
    #[arg(long)]
    dry_run: bool,
    /// Temp directory to sweep (where layoutlab put its work directories, mount points and
    /// trace text). Default: $TMPDIR or /tmp.
    #[arg(long, value_name = "DIR")]
    temp_dir: Option<PathBuf>,
    /// Write the result as JSON to PATH ("-" for stdout).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
}

#[derive(Serialize)]
struct Item {
    kind: &'static str,
    path: String,
    pid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

#[derive(Serialize)]
struct Report {
    dry_run: bool,
    /// Every leftover found (with `error` set on those that could not be removed).
    found: Vec<Item>,
    /// How many were removed (0 in a dry run).
    removed: usize,
    failed: usize,
}

fn item(s: &Stale, error: Option<String>) -> Item {
    Item {
        kind: s.kind.as_str(),
        path: s.path.display().to_string(),
        pid: s.pid,
        error,
    }
}

/// Run `layoutlab clean`.
pub fn run(a: Args) -> Result<()> {
    let temp_dir = a.temp_dir.unwrap_or_else(std::env::temp_dir);
    let human = Human::new(a.json.as_deref());
    let found = stale::find(&temp_dir)
        .with_context(|| format!("looking for leftovers in {}", temp_dir.display()))?;
    let mut report = Report {
        dry_run: a.dry_run,
        found: vec![],
        removed: 0,
        failed: 0,
    };
    if found.is_empty() {
        human.say(&format!(
            "nothing to clean: no tracefs instance, mount, loop device or temp path of a dead layoutlab process (temp dir {})\n",
            temp_dir.display()
        ));
    }
    for s in &found {
        if a.dry_run {
            human.say(&format!(
                "would remove {} {} (pid {} is gone)\n",
                s.kind.as_str(),
                s.path.display(),
                s.pid
            ));
            report.found.push(item(s, None));
            continue;
        }
        match stale::remove(s) {
            Ok(()) => {
                human.say(&format!(
                    "removed {} {} (pid {})\n",
                    s.kind.as_str(),
                    s.path.display(),
                    s.pid
                ));
                report.found.push(item(s, None));
                report.removed += 1;
            }
            Err(e) => {
                human.say(&format!(
                    "could not remove {} {}: {e}\n",
                    s.kind.as_str(),
                    s.path.display()
                ));
                report.found.push(item(s, Some(e.to_string())));
                report.failed += 1;
            }
        }
    }
    if let Some(path) = &a.json {
        write_json(path, &report)?;
    }
    if report.failed > 0 {
        anyhow::bail!("{} leftovers could not be removed", report.failed);
    }
    Ok(())
}
