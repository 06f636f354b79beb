//! The kernel's `rwbs` request-type string (as printed by tracefs block events and blkparse).
//!
//! Layout, from the kernel's `blk_fill_rwbs()` and blkparse's `fill_rwbs()`: an optional `F`
//! (preflush), one operation letter (`W` write, `D` discard, `DE` secure erase, `F` flush,
//! `R` read, `N` none), then modifiers `F` (FUA), `A` (readahead), `S` (sync), `M` (metadata).
//! A flush printed by blkparse is `FN` (preflush, no data); by tracefs it is `FF`.

use crate::{Flags, Op};

/// The operation letter of an rwbs string; `None` stands for `N` (no data transfer).
pub(crate) type RwbsOp = Option<Op>;

/// Parses an rwbs string into (operation, flags). A flush (`F`, `FF`, `FN`) comes back as
/// `Some(Op::Flush)` without the PREFLUSH flag; `N` without preflush comes back as `None`.
pub(crate) fn parse(s: &str) -> Result<(RwbsOp, Flags), String> {
    let b = s.as_bytes();
    if b.is_empty() {
        return Err("empty rwbs field".to_string());
    }
    let is_op = |c: u8| matches!(c, b'W' | b'D' | b'F' | b'R' | b'N');
    let mut i = 0;
    let mut flags = Flags::NONE;
    if b[0] == b'F' && b.len() > 1 && is_op(b[1]) {
        flags = flags | Flags::PREFLUSH;
        i = 1;
    }
    let op = match b[i] {
        b'W' => Some(Op::Write),
        b'R' => Some(Op::Read),
        b'D' => {
            if b.get(i + 1) == Some(&b'E') {
                i += 1;
            }
            Some(Op::Discard)
        }
        b'F' => Some(Op::Flush),
        b'N' => None,
        other => {
            return Err(format!(
                "rwbs '{s}': unknown operation letter '{}' (expected W, R, D, F or N)",
                other as char
            ))
        }
    };
    i += 1;
    for &c in &b[i..] {
        flags = flags
            | match c {
                b'F' => Flags::FUA,
                b'A' => Flags::READAHEAD,
                b'S' => Flags::SYNC,
                b'M' => Flags::META,
                other => {
                    return Err(format!(
                        "rwbs '{s}': unknown modifier '{}' (expected F, A, S or M)",
                        other as char
                    ))
                }
            };
    }
    match op {
        // A flush request is a preflush by nature; keep one canonical spelling.
        Some(Op::Flush) => Ok((
            Some(Op::Flush),
            Flags(flags.0 & !(Flags::PREFLUSH.0 | Flags::FUA.0)),
        )),
        None if flags.contains(Flags::PREFLUSH) => Ok((
            Some(Op::Flush),
            Flags(flags.0 & !(Flags::PREFLUSH.0 | Flags::FUA.0)),
        )),
        _ => Ok((op, flags)),
    }
}

/// Formats (op, flags) as rwbs. `flush_letter` is the operation letter used for a flush
/// (`b'F'` as tracefs prints it, `b'N'` as blkparse prints it); a flush always gets the
/// preflush prefix and never FUA, which is what the kernel emits.
pub(crate) fn format(op: Op, flags: Flags, flush_letter: u8) -> String {
    let mut s = String::with_capacity(6);
    if op == Op::Flush || flags.contains(Flags::PREFLUSH) {
        s.push('F');
    }
    s.push(match op {
        Op::Write => 'W',
        Op::Read => 'R',
        Op::Discard => 'D',
        Op::Flush => flush_letter as char,
    });
    if op != Op::Flush && flags.contains(Flags::FUA) {
        s.push('F');
    }
    if flags.contains(Flags::READAHEAD) {
        s.push('A');
    }
    if flags.contains(Flags::SYNC) {
        s.push('S');
    }
    if flags.contains(Flags::META) {
        s.push('M');
    }
    s
}

/// The (op, flags) that survive a trip through rwbs: a flush carries neither PREFLUSH nor FUA.
#[cfg(test)]
pub(crate) fn canonical(op: Op, flags: Flags) -> Flags {
    if op == Op::Flush {
        Flags(flags.0 & !(Flags::PREFLUSH.0 | Flags::FUA.0))
    } else {
        flags
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_spellings() {
        assert_eq!(parse("WS"), Ok((Some(Op::Write), Flags::SYNC)));
        assert_eq!(
            parse("FWS"),
            Ok((Some(Op::Write), Flags::PREFLUSH | Flags::SYNC))
        );
        assert_eq!(
            parse("WFS"),
            Ok((Some(Op::Write), Flags::FUA | Flags::SYNC))
        );
        assert_eq!(parse("FF"), Ok((Some(Op::Flush), Flags::NONE)));
        assert_eq!(parse("FN"), Ok((Some(Op::Flush), Flags::NONE)));
        assert_eq!(parse("RA"), Ok((Some(Op::Read), Flags::READAHEAD)));
        assert_eq!(parse("RM"), Ok((Some(Op::Read), Flags::META)));
        assert_eq!(parse("DS"), Ok((Some(Op::Discard), Flags::SYNC)));
        assert_eq!(parse("DES"), Ok((Some(Op::Discard), Flags::SYNC)));
        assert_eq!(parse("N"), Ok((None, Flags::NONE)));
        assert!(parse("X").is_err());
        assert!(parse("RZ").is_err());
        assert!(parse("").is_err());
    }

    #[test]
    fn format_parses_back() {
        for op in [Op::Read, Op::Write, Op::Discard, Op::Flush] {
            for bits in 0..32u8 {
                let flags = Flags(bits);
                for letter in [b'F', b'N'] {
                    let s = format(op, flags, letter);
                    assert_eq!(parse(&s), Ok((Some(op), canonical(op, flags))), "{s}");
                }
            }
        }
    }
}
