//! mke2fs.conf: the profile file e2fsprogs reads (lib/support/profile.c syntax), and the
//! lookups mke2fs makes in it (misc/mke2fs.c `get_string_from_profile()`,
//! `get_int_from_profile()`, ...).
//!
//! Syntax: `[section]` lines; `tag = value` relations; `tag = {` opens a subsection closed by
//! `}`; a `*` after `]` or `}` marks it final (ignored here); lines starting with `;` or `#`
//! are comments; a value in double quotes may hold `\n`, `\t`, `\b` and `\\`.

use std::collections::BTreeMap;

/// A node: a value or a subsection.
#[derive(Clone, Debug, PartialEq)]
enum Node {
    Value(String),
    Section(Table),
}

/// Relations of a section or subsection, in file order (a tag may repeat).
#[derive(Clone, Debug, Default, PartialEq)]
struct Table(Vec<(String, Node)>);

impl Table {
    fn first_value(&self, tag: &str) -> Option<&str> {
        self.0.iter().find_map(|(t, n)| match n {
            Node::Value(v) if t == tag => Some(v.as_str()),
            _ => None,
        })
    }

    fn subsection(&self, tag: &str) -> Option<&Table> {
        self.0.iter().find_map(|(t, n)| match n {
            Node::Section(s) if t == tag => Some(s),
            _ => None,
        })
    }
}

/// A parsed mke2fs.conf.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mke2fsConf {
    sections: BTreeMap<String, Table>,
    /// Where it came from, for messages.
    pub source: String,
    /// The e2fsprogs release whose mke2fs reads it.
    pub release: Release,
}

/// e2fsprogs 1.47.0's misc/mke2fs.conf.in: what mke2fs uses when no mke2fs.conf exists.
pub const BUILTIN: &str = include_str!("../../../../profiles/mke2fs/e2fsprogs-1.47.0.conf");

/// Named mke2fs.conf profiles shipped under `profiles/mke2fs/`: (name, text).
pub const PROFILES: &[(&str, &str)] = &[
    (
        "e2fsprogs-1.41.14",
        include_str!("../../../../profiles/mke2fs/e2fsprogs-1.41.14.conf"),
    ),
    ("e2fsprogs-1.47.0", BUILTIN),
];

/// The e2fsprogs release whose mke2fs reads an mke2fs.conf (`[layoutlab] mke2fs = 1.41.14`;
/// mke2fs itself ignores that section). A conf file goes with its release: the options it
/// takes, the features it knows, `ext2fs_initialize()`'s rules and the journal-size table all
/// changed between 2010's mke2fs and today's (docs/overhead.md lists each difference).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Release {
    /// e2fsprogs 1.41.14 (December 2010): misc/mke2fs.c `PRS()` and lib/ext2fs of that tag;
    /// `ext2fs_default_journal_size()` at most 32768 blocks (1.40's table, kept to 1.42).
    V1_41_14,
    /// e2fsprogs 1.47.0: today's rules; the journal up to 262144 blocks (1 GiB at 4 KiB).
    #[default]
    V1_47_0,
}

impl Release {
    /// Every release by its `[layoutlab] mke2fs` name.
    pub const NAMES: &'static [(&'static str, Release)] =
        &[("1.41.14", Release::V1_41_14), ("1.47.0", Release::V1_47_0)];
}

fn unquote(v: &str) -> String {
    let inner = &v[1..];
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => break,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('b') => out.push('\u{8}'),
                Some(o) => out.push(o),
                None => break,
            },
            c => out.push(c),
        }
    }
    out
}

/// Adds a relation (a value, or a subsection just closed) where the parser stands: to the
/// innermost open subsection on `stack`, else to the current `section`; outside any section
/// it is refused, with why.
fn add_node(
    stack: &mut [(String, Table)],
    conf: &mut Mke2fsConf,
    section: &Option<String>,
    node: (String, Node),
) -> Result<(), &'static str> {
    match stack.last_mut() {
        Some((_, table)) => table.0.push(node),
        None => {
            let name = section.as_ref().ok_or("relation outside a section")?;
            conf.sections
                .get_mut(name)
                .expect("section made at its header")
                .0
                .push(node);
        }
    }
    Ok(())
}

impl Mke2fsConf {
    /// Parses mke2fs.conf text; `source` names it in errors.
    pub fn parse(text: &str, source: &str) -> Result<Mke2fsConf, String> {
        let mut conf = Mke2fsConf {
            sections: BTreeMap::new(),
            source: source.to_string(),
            release: Release::default(),
        };
        let mut section: Option<String> = None;
        // The open subsections, innermost last: (tag, table).
        let mut stack: Vec<(String, Table)> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            let at = |why: &str| format!("{source}:{}: {why}", i + 1);
            if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
                continue;
            }
            if line.starts_with('[') {
                if !stack.is_empty() {
                    return Err(at("section header inside a subsection"));
                }
                let end = line
                    .find(']')
                    .ok_or_else(|| at("section header without ']'"))?;
                let name = line[1..end].trim().to_string();
                conf.sections.entry(name.clone()).or_default();
                section = Some(name);
                continue;
            }
            if line.starts_with('}') {
                let (tag, table) = stack
                    .pop()
                    .ok_or_else(|| at("'}' with no open subsection"))?;
                add_node(&mut stack, &mut conf, &section, (tag, Node::Section(table)))
                    .map_err(at)?;
                continue;
            }
            let eq = line
                .find('=')
                .ok_or_else(|| at("expected 'tag = value', '[section]' or '}'"))?;
            let tag = line[..eq].trim();
            if tag.is_empty() || tag.contains(char::is_whitespace) {
                return Err(at("a relation needs one tag before '='"));
            }
            let value = line[eq + 1..].trim();
            if value.starts_with('{') {
                if value.len() > 1 {
                    return Err(at("nothing may follow '{'"));
                }
                stack.push((tag.to_string(), Table::default()));
                continue;
            }
            let value = if value.starts_with('"') {
                unquote(value)
            } else {
                value.to_string()
            };
            add_node(
                &mut stack,
                &mut conf,
                &section,
                (tag.to_string(), Node::Value(value)),
            )
            .map_err(at)?;
        }
        if !stack.is_empty() {
            return Err(format!("{source}: a subsection is not closed with '}}'"));
        }
        // [layoutlab] is ours: a key we do not read would change nothing silently
        let names = || {
            Release::NAMES
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        };
        for (tag, node) in conf.sections.get("layoutlab").map_or(&[][..], |t| &t.0[..]) {
            match (tag.as_str(), node) {
                ("mke2fs", Node::Value(v)) => {
                    conf.release = Release::NAMES
                        .iter()
                        .find(|(n, _)| n == v)
                        .map(|(_, r)| *r)
                        .ok_or_else(|| {
                            format!("{source}: [layoutlab] mke2fs = {v} (known: {})", names())
                        })?;
                }
                _ => {
                    return Err(format!(
                        "{source}: [layoutlab] {tag} is not a layoutlab setting (known: mke2fs = \
                         {})",
                        names()
                    ))
                }
            }
        }
        Ok(conf)
    }

    /// The machine's mke2fs.conf as mke2fs finds it: `$MKE2FS_CONFIG`, else
    /// /etc/mke2fs.conf, else the built-in one.
    pub fn in_force() -> Result<Mke2fsConf, String> {
        let path = std::env::var("MKE2FS_CONFIG").unwrap_or_else(|_| "/etc/mke2fs.conf".into());
        match std::fs::read_to_string(&path) {
            Ok(text) => Mke2fsConf::parse(&text, &path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Mke2fsConf::parse(BUILTIN, "built-in mke2fs.conf (e2fsprogs 1.47.0)")
            }
            Err(e) => Err(format!("{path}: {e}")),
        }
    }

    /// A shipped profile by name; the error lists the names.
    pub fn profile(name: &str) -> Result<Mke2fsConf, String> {
        let (n, text) = PROFILES.iter().find(|(n, _)| *n == name).ok_or_else(|| {
            let names: Vec<&str> = PROFILES.iter().map(|(n, _)| *n).collect();
            format!(
                "unknown mke2fs.conf profile '{name}'; valid profiles: {}",
                names.join(", ")
            )
        })?;
        Mke2fsConf::parse(text, &format!("profiles/mke2fs/{n}.conf"))
    }

    /// An mke2fs.conf file.
    pub fn from_file(path: &std::path::Path) -> Result<Mke2fsConf, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Mke2fsConf::parse(&text, &path.display().to_string())
    }

    /// `profile_get_string(profile, section, sub, tag)`: a value of `[section]` (tag
    /// `sub` when `tag` is `None`, else `tag` inside subsection `sub`).
    pub fn get(&self, section: &str, sub: &str, tag: Option<&str>) -> Option<&str> {
        let s = self.sections.get(section)?;
        match tag {
            None => s.first_value(sub),
            Some(t) => s.subsection(sub)?.first_value(t),
        }
    }

    /// Whether `[fs_types]` defines `name`.
    pub fn has_fs_type(&self, name: &str) -> bool {
        self.sections
            .get("fs_types")
            .is_some_and(|s| s.subsection(name).is_some())
    }

    /// `get_string_from_profile(types, opt, def)`: the last type that sets it, else
    /// `[defaults]`, else `def`.
    pub fn string(&self, types: &[String], opt: &str, def: Option<&str>) -> Option<String> {
        for t in types.iter().rev() {
            if let Some(v) = self.get("fs_types", t, Some(opt)) {
                return Some(v.to_string());
            }
        }
        self.get("defaults", opt, None).or(def).map(str::to_string)
    }

    /// `get_int_from_profile(types, opt, def)`: `[defaults]`, then each type in order
    /// overriding. A value that is no number is an error, as in mke2fs.
    pub fn int(&self, types: &[String], opt: &str, def: i64) -> Result<i64, String> {
        self.overridden(types, opt, def, parse_int)
    }

    /// `get_double_from_profile()`.
    pub fn double(&self, types: &[String], opt: &str, def: f64) -> Result<f64, String> {
        self.overridden(types, opt, def, |s| s.trim().parse().ok())
    }

    /// `get_bool_from_profile()`.
    pub fn boolean(&self, types: &[String], opt: &str, def: bool) -> Result<bool, String> {
        let parse = |s: &str| -> Option<bool> {
            match s.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" | "t" | "1" | "on" => Some(true),
                "n" | "no" | "false" | "f" | "nil" | "0" | "off" => Some(false),
                _ => None,
            }
        };
        self.overridden(types, opt, def, parse)
    }

    /// The rule `get_{int,double,bool}_from_profile()` share (misc/mke2fs.c): `def`, then
    /// `[defaults]`, then each type in order overriding; a value `parse` refuses is an error,
    /// wherever it stands. (Strings take the last type alone: [`Mke2fsConf::string`].)
    fn overridden<T>(
        &self,
        types: &[String],
        opt: &str,
        def: T,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<T, String> {
        let mut v = def;
        if let Some(s) = self.get("defaults", opt, None) {
            v = parse(s).ok_or_else(|| self.bad(opt, s))?;
        }
        for t in types {
            if let Some(s) = self.get("fs_types", t, Some(opt)) {
                v = parse(s).ok_or_else(|| self.bad(opt, s))?;
            }
        }
        Ok(v)
    }

    fn bad(&self, opt: &str, v: &str) -> String {
        format!("{}: {opt} = {v:?} is not a valid value", self.source)
    }
}

/// `strtol(s, &end, 0)` of the whole (trimmed) string: decimal, `0x` hex or `0` octal.
pub fn parse_int(s: &str) -> Option<i64> {
    let s = s.trim();
    let (neg, body) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let v = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()?
    } else if body.len() > 1 && body.starts_with('0') {
        i64::from_str_radix(&body[1..], 8).ok()?
    } else {
        body.parse().ok()?
    };
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_conf_resolves_as_mke2fs_does() {
        let c = Mke2fsConf::parse(BUILTIN, "builtin").unwrap();
        let types: Vec<String> = ["ext4", "small"].iter().map(|s| s.to_string()).collect();
        assert_eq!(c.int(&types, "blocksize", 4096).unwrap(), 1024);
        assert_eq!(c.int(&types, "inode_ratio", 8192).unwrap(), 4096);
        assert_eq!(c.int(&types, "inode_size", 0).unwrap(), 256);
        assert!(c
            .string(&types, "features", None)
            .is_some_and(|f| f.contains("metadata_csum")));
        let big: Vec<String> = vec!["ext4".into(), "largefile".into()];
        assert_eq!(c.int(&big, "blocksize", 4096).unwrap(), -1);
        assert!(c.has_fs_type("news") && !c.has_fs_type("nope"));
    }

    #[test]
    fn shipped_profiles_parse_and_carry_their_release() {
        let old = Mke2fsConf::profile("e2fsprogs-1.41.14").unwrap();
        assert_eq!(old.release, Release::V1_41_14);
        assert_eq!(
            old.get("fs_types", "small", Some("inode_size")),
            Some("128")
        );
        let new = Mke2fsConf::profile("e2fsprogs-1.47.0").unwrap();
        assert_eq!(new.release, Release::V1_47_0);
        let e = Mke2fsConf::profile("e2fsprogs-0.5").unwrap_err();
        assert!(e.contains("e2fsprogs-1.41.14"), "{e}");
        // the last session's key, or a release we have no rules for, is refused, not ignored
        let e = Mke2fsConf::parse("[layoutlab]\n journal_table = 1.40\n", "o.conf").unwrap_err();
        assert!(
            e.contains("journal_table") && e.contains("mke2fs = 1.41.14"),
            "{e}"
        );
        let e = Mke2fsConf::parse("[layoutlab]\n mke2fs = 1.42\n", "o.conf").unwrap_err();
        assert!(e.contains("1.42") && e.contains("1.47.0"), "{e}");
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let e = Mke2fsConf::parse("[defaults]\n\tblocksize 4096\n", "x.conf").unwrap_err();
        assert!(e.starts_with("x.conf:2:"), "{e}");
        let e = Mke2fsConf::parse("[fs_types]\n ext4 = {\n", "y.conf").unwrap_err();
        assert!(e.contains("not closed"), "{e}");
        let c = Mke2fsConf::parse("[defaults]\n a = \"x\\ty\"\n ; c\n", "q").unwrap();
        assert_eq!(c.get("defaults", "a", None), Some("x\ty"));
        assert_eq!(parse_int("0x10"), Some(16));
        assert_eq!(parse_int("010"), Some(8));
        assert_eq!(parse_int("-1"), Some(-1));
        assert_eq!(parse_int("4k"), None);
    }
}
