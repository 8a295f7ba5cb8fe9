//! What every command's `-o` shares: a value printed as JSON or YAML, text
//! kept on one line or cut short for a table, and text escaped for JUnit
//! XML. Each command keeps its own `-o` choices (`run` has `table` and
//! `junit`, `audit` `html` and `report`), since each lists different ones.

use std::io::Write;

use serde::Serialize;

/// `value` as pretty JSON and a newline (`-o json`).
pub fn write_json(out: &mut impl Write, value: &impl Serialize) -> anyhow::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value)?;
    writeln!(out)?;
    Ok(())
}

/// `value` as a YAML document (`-o yaml`).
pub fn write_yaml(out: &mut impl Write, value: &impl Serialize) -> anyhow::Result<()> {
    serde_yaml_ng::to_writer(out, value)?;
    Ok(())
}

/// Several documents as one, the way kubectl prints several objects with
/// `-o json` or `-o yaml`: a `v1` `List` with the documents as `items`, so
/// that `-o json` is one JSON document whatever their number.
pub fn list(items: Vec<serde_json::Value>) -> serde_json::Value {
    serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items})
}

/// `n` and `noun`, plural unless `n` is 1: `1 evaluation`, `3 objects`.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `text` on one line: every run of whitespace, newlines included, as one
/// space.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` cut to `max` characters, an ellipsis marking the cut.
pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

/// Text as XML character data or an attribute value (JUnit reports);
/// characters XML 1.0 cannot hold (control characters a message might
/// quote) become U+FFFD.
pub fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}
