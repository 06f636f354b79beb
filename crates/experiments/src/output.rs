//! Where an experiment's human-readable tables and its JSON go.

use anyhow::{Context, Result};
use std::cell::RefCell;
use std::path::Path;

/// Write `value` as pretty JSON to `path` ("-" = stdout).
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    if path == Path::new("-") {
        emit(&(text + "\n"), false);
        return Ok(());
    }
    std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))
}

/// Where human-readable output goes: stdout, unless `--json -` claims stdout for the JSON,
/// in which case tables and notes go to stderr so the JSON stays parseable.
pub struct Human {
    to_stderr: bool,
    /// Text kept instead of printed (tests compare it with a golden file).
    captured: Option<RefCell<String>>,
}

impl Human {
    /// For a command whose `--json` argument is `json`.
    pub fn new(json: Option<&Path>) -> Human {
        Human {
            to_stderr: json == Some(Path::new("-")),
            captured: None,
        }
    }

    /// One that keeps what it is told (read it with [`Human::captured`]) instead of printing.
    pub fn capture() -> Human {
        Human {
            to_stderr: false,
            captured: Some(RefCell::new(String::new())),
        }
    }

    /// What a [`Human::capture`] was told so far ("" for one that prints).
    pub fn captured(&self) -> String {
        self.captured
            .as_ref()
            .map(|c| c.borrow().clone())
            .unwrap_or_default()
    }

    /// Print `text` as is.
    pub fn say(&self, text: &str) {
        match &self.captured {
            Some(c) => c.borrow_mut().push_str(text),
            None => emit(text, self.to_stderr),
        }
    }
}

/// Writes each `(name, trace)` as `out_dir/traces/NAME.csv`, so that every trace a report
/// priced can be priced again alone (`layoutlab trace replay`, `--vary`), as the error budgets
/// do (docs/regenerate-budgets.sh). Returns the directory.
pub fn save_traces<'a>(
    out_dir: &Path,
    traces: impl IntoIterator<Item = (String, &'a layoutlab_trace::Trace)>,
) -> Result<std::path::PathBuf> {
    let dir = out_dir.join("traces");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for (name, trace) in traces {
        let path = dir.join(format!("{name}.csv"));
        std::fs::write(&path, layoutlab_trace::csv::write(trace)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(dir)
}

/// Write `text` to stdout (or stderr). A reader that went away (`layoutlab ... | head`) ends
/// the program quietly, after the rig's cleanup, instead of a panic.
pub fn emit(text: &str, to_stderr: bool) {
    use std::io::Write;
    let result = if to_stderr {
        std::io::stderr().write_all(text.as_bytes())
    } else {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes()).and_then(|()| out.flush())
    };
    if let Err(e) = result {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            layoutlab_rig::cleanup::exit(0);
        }
    }
}
