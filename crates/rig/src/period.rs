//! Which e2fsprogs runs: today's (the system's, on `PATH`) or a release of the period the
//! experiments reproduce, built by `make deps` (scripts/build-period-e2fsprogs.sh) from the
//! unmodified upstream tarballs into `~/.cache/layoutlab/e2fsprogs/VERSION/`.
//!
//! It owns finding a release's programs and its own shipped `mke2fs.conf` (an old mke2fs must
//! not read today's /etc/mke2fs.conf: 1.40.2 refuses it). It does not build anything: a
//! missing build is an error that says `make deps` makes it.

use std::path::PathBuf;
use std::process::Command;

use crate::error::{Result, RigError};

/// An e2fsprogs release whose e2fsck/mke2fs/debugfs/dumpe2fs a run uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum E2fsprogs {
    /// The system's own (e2fsprogs 1.47 on this machine), found on `PATH`.
    #[default]
    Today,
    /// 1.40.2 (July 2007): the ext3 of the metaclustering posts (Nov 2007).
    V1_40_2,
    /// 1.41.4 (January 2009): Ts'o's February 2009 ext3/ext4 e2fsck tables.
    V1_41_4,
    /// 1.41.14 (December 2010): the 2010-2011 posts (Coly Li's mkfs overhead).
    V1_41_14,
}

/// Names `--e2fsck` accepts, in [`E2fsprogs::ALL`] order.
pub const E2FSPROGS_NAMES: &[&str] = &["today", "1.40.2", "1.41.4", "1.41.14"];

impl E2fsprogs {
    /// Every choice, today's first.
    pub const ALL: [E2fsprogs; 4] = [
        E2fsprogs::Today,
        E2fsprogs::V1_40_2,
        E2fsprogs::V1_41_4,
        E2fsprogs::V1_41_14,
    ];

    /// The name `--e2fsck` takes and reports print ("today", "1.41.4").
    pub fn name(self) -> &'static str {
        match self {
            E2fsprogs::Today => "today",
            E2fsprogs::V1_40_2 => "1.40.2",
            E2fsprogs::V1_41_4 => "1.41.4",
            E2fsprogs::V1_41_14 => "1.41.14",
        }
    }

    /// The release a name stands for; an unknown name lists the valid ones.
    pub fn by_name(name: &str) -> Result<E2fsprogs> {
        E2fsprogs::ALL
            .into_iter()
            .find(|v| v.name() == name)
            .ok_or_else(|| {
                RigError::InvalidArgument(format!(
                    "unknown e2fsprogs '{name}': choose one of {}",
                    E2FSPROGS_NAMES.join(", ")
                ))
            })
    }

    /// Whether this is a period release (built by `make deps`) rather than the system's.
    pub fn is_period(self) -> bool {
        self != E2fsprogs::Today
    }

    /// Where `make deps` puts the period builds: `$LAYOUTLAB_E2FSPROGS_CACHE`, else
    /// `$HOME/.cache/layoutlab/e2fsprogs` (the build script reads the same variables).
    pub fn cache_dir() -> PathBuf {
        if let Some(dir) = std::env::var_os("LAYOUTLAB_E2FSPROGS_CACHE") {
            return PathBuf::from(dir);
        }
        let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
        PathBuf::from(home).join(".cache/layoutlab/e2fsprogs")
    }

    /// The program `tool` (e2fsck, mke2fs, debugfs, dumpe2fs) of this release: today's by name
    /// (resolved on `PATH`), a period one by its path in the cache, which must exist.
    pub fn program(self, tool: &str) -> Result<PathBuf> {
        if !self.is_period() {
            return Ok(PathBuf::from(tool));
        }
        let path = E2fsprogs::cache_dir()
            .join(self.name())
            .join("sbin")
            .join(tool);
        if path.is_file() {
            Ok(path)
        } else {
            Err(RigError::Unsupported(format!(
                "e2fsprogs {}'s {tool} is not built ({} is missing): run `make deps`, which \
                 builds the period e2fsprogs from ../shared/vendor (about a minute each)",
                self.name(),
                path.display()
            )))
        }
    }

    /// A command for `tool` of this release. A period mke2fs is pointed at its own shipped
    /// misc/mke2fs.conf through `MKE2FS_CONFIG`: it would otherwise read today's
    /// /etc/mke2fs.conf, which 1.40.2 refuses and whose defaults are not the period's.
    pub fn command(self, tool: &str) -> Result<Command> {
        let mut cmd = Command::new(self.program(tool)?);
        if self.is_period() && tool == "mke2fs" {
            let conf = E2fsprogs::cache_dir()
                .join(self.name())
                .join("etc/mke2fs.conf");
            if !conf.is_file() {
                return Err(RigError::Unsupported(format!(
                    "e2fsprogs {}'s mke2fs.conf is missing ({}): run `make deps`",
                    self.name(),
                    conf.display()
                )));
            }
            cmd.env("MKE2FS_CONFIG", conf);
        }
        Ok(cmd)
    }
}

impl std::fmt::Display for E2fsprogs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for E2fsprogs {
    type Err = RigError;
    fn from_str(s: &str) -> Result<E2fsprogs> {
        E2fsprogs::by_name(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_lists_them() {
        for v in E2fsprogs::ALL {
            assert_eq!(E2fsprogs::by_name(v.name()).unwrap(), v);
        }
        let e = E2fsprogs::by_name("1.42").unwrap_err().to_string();
        assert!(e.contains("today, 1.40.2, 1.41.4, 1.41.14"), "{e}");
    }

    #[test]
    fn missing_build_says_make_deps() {
        std::env::set_var("LAYOUTLAB_E2FSPROGS_CACHE", "/nonexistent/layoutlab-cache");
        let e = E2fsprogs::V1_41_4
            .program("e2fsck")
            .unwrap_err()
            .to_string();
        std::env::remove_var("LAYOUTLAB_E2FSPROGS_CACHE");
        assert!(e.contains("make deps") && e.contains("1.41.4"), "{e}");
        assert_eq!(
            E2fsprogs::Today.program("e2fsck").unwrap(),
            PathBuf::from("e2fsck")
        );
    }
}
