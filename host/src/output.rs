//! What every command's `-o` shares: `-o` is the output format on every
//! command, as kubectl's (a file has its own flag, `--output-file`), parsed
//! by [`format()`] (a file name given to `-o` is refused with the flag to
//! use); a value printed as JSON or YAML; text kept on one line or cut
//! short for a table; text escaped for JUnit XML; and a closed stdout
//! told apart from a failure ([`is_broken_pipe`]). Each command keeps its
//! own formats (`run` has `table` and `junit`, `audit` `html` and
//! `report`), with the same names where they mean the same.

use std::ffi::OsStr;
use std::io::Write;

use clap::ValueEnum;
use clap::builder::{EnumValueParser, PossibleValue, TypedValueParser};
use clap::error::{ContextKind, ContextValue};
use serde::Serialize;

/// `value` as pretty JSON and a newline (`-o json`). The document is built
/// before it is written, so that a failed write is the `std::io::Error`
/// [`is_broken_pipe`] recognises.
pub fn write_json(out: &mut impl Write, value: &impl Serialize) -> anyhow::Result<()> {
    let mut text = serde_json::to_vec_pretty(value)?;
    text.push(b'\n');
    out.write_all(&text)?;
    Ok(())
}

/// `value` as a YAML document (`-o yaml`), built before it is written as
/// [`write_json`]'s.
pub fn write_yaml(out: &mut impl Write, value: &impl Serialize) -> anyhow::Result<()> {
    out.write_all(serde_yaml_ng::to_string(value)?.as_bytes())?;
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

/// `-o`'s parser: the command's output formats `E`, listed in its help as
/// clap lists a `ValueEnum`'s. A value that is none of them is refused
/// listing them, as clap refuses one; a value that looks like a file name
/// (`out.json`, `dir/x`) is also told where a file goes: `-o` is the
/// format, as kubectl's, and a file has its own flag (`file_flag`) or a
/// redirect.
#[derive(Clone)]
pub struct Format<E: ValueEnum + Clone + Send + Sync + 'static> {
    formats: EnumValueParser<E>,
    file_flag: Option<&'static str>,
}

/// `-o` of a command that writes its output to stdout only.
pub fn format<E: ValueEnum + Clone + Send + Sync + 'static>() -> Format<E> {
    Format {
        formats: EnumValueParser::new(),
        file_flag: None,
    }
}

/// `-o` of a command that also writes a file, with `flag`
/// (`--output-file`).
pub fn format_or_file<E: ValueEnum + Clone + Send + Sync + 'static>(
    flag: &'static str,
) -> Format<E> {
    Format {
        formats: EnumValueParser::new(),
        file_flag: Some(flag),
    }
}

/// Whether `value` given to `-o` looks like a file rather than a format
/// name: no format name holds a dot or a path separator.
fn looks_like_a_file(value: &str) -> bool {
    value.contains(['.', '/', '\\'])
}

/// The tip of a refused `-o FILE`.
fn file_tip(value: &str, file_flag: Option<&str>) -> String {
    match file_flag {
        Some(flag) => format!(
            "-o is the output format, as kubectl's: write a file with {flag} {value} (or redirect \
             stdout: > {value})"
        ),
        None => format!(
            "-o is the output format, as kubectl's: write a file by redirecting stdout (> {value})"
        ),
    }
}

impl<E: ValueEnum + Clone + Send + Sync + 'static> TypedValueParser for Format<E> {
    type Value = E;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<E, clap::Error> {
        self.formats
            .parse_ref(cmd, arg, value)
            .map_err(|mut error| {
                let text = value.to_string_lossy();
                if looks_like_a_file(&text) {
                    error.insert(
                        ContextKind::Suggested,
                        ContextValue::StyledStrs(vec![file_tip(&text, self.file_flag).into()]),
                    );
                }
                error
            })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        self.formats.possible_values()
    }
}

/// The parser of the hidden `-o` of a command whose output is a file and
/// has no format (`annotate`): every value is refused, naming `file_flag`.
pub fn no_format(file_flag: &'static str) -> impl Fn(&str) -> Result<String, String> + Clone {
    move |value: &str| {
        Err(format!(
            "this command writes a file and has no output format: give the file with {file_flag} \
             {value}"
        ))
    }
}

/// Whether `error` is a write to a closed pipe (`olm-guard ... | head`):
/// the reader left, so the command ends quietly (exit 0), as a Unix tool
/// killed by SIGPIPE prints nothing either.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
