//! Exact decimal parsing and printing of times, shared by the text formats.
//!
//! Times are parsed digit by digit into integer nanoseconds (never through `f64`), so that a
//! value written by a writer reads back bit-exact.

/// Parses an unsigned decimal `int[.frac]` in a unit of `unit_ns` nanoseconds (1e9 for
/// seconds, 1e6 for milliseconds, 1e3 for microseconds) into nanoseconds. Fraction digits finer
/// than 1 ns are truncated. Exponent notation (`1.5e3`) is accepted through `f64` as a fallback.
pub(crate) fn parse_decimal_ns(s: &str, unit_ns: u64) -> Result<u64, String> {
    let bad = || format!("'{s}' is not a non-negative decimal number");
    if s.is_empty() {
        return Err(bad());
    }
    if s.contains(['e', 'E']) {
        let v: f64 = s.parse().map_err(|_| bad())?;
        if !v.is_finite() || v < 0.0 {
            return Err(bad());
        }
        let ns = v * unit_ns as f64;
        if ns >= u64::MAX as f64 {
            return Err(format!("'{s}' is too large"));
        }
        return Ok(ns.round() as u64);
    }
    let (int_part, frac_part) = match s.split_once('.') {
        Some((i, f)) => (i, f),
        None => (s, ""),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return Err(bad());
    }
    if !int_part.bytes().all(|b| b.is_ascii_digit())
        || !frac_part.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let too_large = || format!("'{s}' is too large");
    let mut int_value: u64 = 0;
    for b in int_part.bytes() {
        int_value = int_value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
            .ok_or_else(too_large)?;
    }
    let mut ns = int_value.checked_mul(unit_ns).ok_or_else(too_large)?;
    let mut place = unit_ns;
    for b in frac_part.bytes() {
        place /= 10;
        if place == 0 {
            break;
        }
        ns = ns
            .checked_add(u64::from(b - b'0') * place)
            .ok_or_else(too_large)?;
    }
    Ok(ns)
}

/// Prints `ns` in a unit of `unit_ns` nanoseconds with exactly enough fraction digits to be
/// exact (`unit_ns` must be a power of ten).
pub(crate) fn format_ns(ns: u64, unit_ns: u64) -> String {
    let digits = decimal_digits(unit_ns);
    if digits == 0 {
        return ns.to_string();
    }
    format!("{}.{:0width$}", ns / unit_ns, ns % unit_ns, width = digits)
}

fn decimal_digits(power_of_ten: u64) -> usize {
    let mut n = 0;
    let mut v = power_of_ten;
    while v >= 10 {
        v /= 10;
        n += 1;
    }
    n
}

/// Parses an unsigned integer field, naming the field in the error.
pub(crate) fn parse_u64(s: &str, what: &str) -> Result<u64, String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{what} '{s}' is not an unsigned integer"));
    }
    s.parse::<u64>()
        .map_err(|_| format!("{what} '{s}' does not fit in 64 bits"))
}

/// Parses an unsigned 32-bit integer field, naming the field in the error.
pub(crate) fn parse_u32(s: &str, what: &str) -> Result<u32, String> {
    let v = parse_u64(s, what)?;
    u32::try_from(v).map_err(|_| format!("{what} '{s}' does not fit in 32 bits"))
}

/// Tag names hold no control characters, so that every writer that keeps tags can write
/// every tag a reader accepts (one line, no NULs).
pub(crate) fn check_tag_name(name: &str) -> Result<(), String> {
    match name.chars().find(|c| c.is_control()) {
        Some(c) => Err(format!(
            "tag name {name:?} holds the control character {c:?}"
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_seconds_exactly() {
        assert_eq!(
            parse_decimal_ns("477.285816", 1_000_000_000),
            Ok(477_285_816_000)
        );
        assert_eq!(parse_decimal_ns("0.000000001", 1_000_000_000), Ok(1));
        assert_eq!(parse_decimal_ns("12", 1_000_000), Ok(12_000_000));
        assert_eq!(parse_decimal_ns("1.5e3", 1_000_000), Ok(1_500_000_000));
        assert!(parse_decimal_ns("-1", 1).is_err());
        assert!(parse_decimal_ns(".", 1).is_err());
        assert!(parse_decimal_ns("99999999999999999999", 1).is_err());
    }

    #[test]
    fn prints_exactly() {
        assert_eq!(format_ns(477_285_816_000, 1_000_000_000), "477.285816000");
        assert_eq!(format_ns(1_500_001, 1_000_000), "1.500001");
        assert_eq!(format_ns(7, 1), "7");
    }
}
