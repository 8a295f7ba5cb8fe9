//! RFC 3339 timestamps, as Artifact Hub and Kubewarden's metadata check
//! read them; a module of its own so that both can use it.

/// `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`, the RFC 3339 `date-time` that
/// Artifact Hub parses (`time.Parse(time.RFC3339, ..)`).
pub fn is_rfc3339(text: &str) -> bool {
    let b = text.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|s| s.iter().all(u8::is_ascii_digit));
    if b.len() < 20
        || !digits(0..4)
        || b[4] != b'-'
        || !digits(5..7)
        || b[7] != b'-'
        || !digits(8..10)
        || !matches!(b[10], b'T' | b't')
        || !digits(11..13)
        || b[13] != b':'
        || !digits(14..16)
        || b[16] != b':'
        || !digits(17..19)
    {
        return false;
    }
    let mut rest = &text[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return false;
        }
        rest = &frac[n..];
    }
    let zone_ok = match rest.as_bytes() {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => [h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit()),
        _ => false,
    };
    let field = |r: std::ops::Range<usize>| {
        text.get(r)
            .and_then(|s| s.parse::<u32>().ok())
            .unwrap_or(99)
    };
    zone_ok
        && (1..=12).contains(&field(5..7))
        && (1..=31).contains(&field(8..10))
        && field(11..13) < 24
        && field(14..16) < 60
        && field(17..19) < 61
}
