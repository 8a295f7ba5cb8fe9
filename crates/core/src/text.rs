//! Quoting someone else's text in ours: one line, of bounded length.

/// The most of a host's error a denial quotes, in characters.
///
/// A denial is read in `kubectl`'s one-line `Error from server` and kept in
/// the API server's audit log, and a policy-server started with
/// `RUST_BACKTRACE=1` appends a whole backtrace to its errors. 300
/// characters hold every error the Kubernetes API server gives for a lookup
/// whole (the longest, a `forbidden` naming a service account, a resource, an
/// API group and the scope, is about 220), and a transport error with its
/// cause.
pub const QUOTE_MAX: usize = 300;

/// `text` as one line of at most `max` characters: its first non-blank line,
/// with runs of whitespace folded to one space; `…` marks where anything
/// (the rest of the line, or further lines) was left out.
///
/// ```
/// use olm_guard_core::text::one_line;
///
/// assert_eq!(one_line("connection refused", 300), "connection refused");
/// assert_eq!(one_line("refused\nStack backtrace:\n  0: main", 300), "refused …");
/// assert_eq!(one_line("abcdef", 3), "abc…");
/// ```
pub fn one_line(text: &str, max: usize) -> String {
    let mut lines = text.lines().map(str::trim).filter(|line| !line.is_empty());
    let first = lines.next().unwrap_or_default();
    let folded = first.split_whitespace().collect::<Vec<_>>().join(" ");
    let more_lines = lines.next().is_some();
    if folded.chars().count() > max {
        let kept: String = folded.chars().take(max).collect();
        format!("{}…", kept.trim_end())
    } else if more_lines {
        format!("{folded} …")
    } else {
        folded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backtrace_and_a_long_line_are_cut_to_one_bounded_line() {
        let host_error = format!(
            "{}\n\nStack backtrace:\n{}",
            "error trying to connect: connection refused (os error 111); ".repeat(100),
            "   0: policy_server::api::handlers::validate\n".repeat(50)
        );
        let quoted = one_line(&host_error, QUOTE_MAX);
        assert!(!quoted.contains('\n'), "{quoted}");
        // At most QUOTE_MAX characters of the host's, and the ellipsis.
        assert!(quoted.chars().count() <= QUOTE_MAX + 1, "{quoted}");
        assert!(quoted.chars().count() > QUOTE_MAX - 10, "{quoted}");
        assert!(quoted.starts_with("error trying to connect: connection refused"));
        assert!(quoted.ends_with('…'));
    }

    #[test]
    fn a_short_error_is_quoted_whole_and_blank_lines_are_skipped() {
        assert_eq!(one_line("\n  not   found \n", QUOTE_MAX), "not found");
        assert_eq!(one_line("", QUOTE_MAX), "");
        // Characters, not bytes: a cut never splits one.
        assert_eq!(one_line("ééé", 2), "éé…");
    }
}
