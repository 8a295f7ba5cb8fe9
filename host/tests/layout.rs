//! The CLI's layout holds: every command lives in its own place under
//! `src/commands/` (a file, or a folder whose parts may use each other) and
//! imports no other command; what several commands share lives beside
//! `commands/`, under its own name, and imports no command. A command that
//! needs another's helper moves the helper into a shared module instead
//! (HACKING.md, "The host").
//!
//! The check reads the source: Rust paths outside comments and string
//! literals, so help texts that name other commands (`olm-guard verify
//! --help`) are not imports.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// `host/src`.
fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file below `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The code of a Rust file without its comments and the contents of its
/// string and character literals (each replaced by a space), so that only
/// paths remain to be searched.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let before = |i: usize| if i == 0 { '\0' } else { at(i - 1) };
    while i < chars.len() {
        let c = chars[i];
        if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && matches!(at(i + 1), '"' | '#') && !is_ident(before(i)) {
            // A raw string: r"...", r#"..."#, ...
            let mut j = i + 1;
            let mut hashes = 0;
            while at(j) == '#' {
                hashes += 1;
                j += 1;
            }
            if at(j) != '"' {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            let closes = |j: usize| at(j) == '"' && (1..=hashes).all(|k| at(j + k) == '#');
            while j < chars.len() && !closes(j) {
                j += 1;
            }
            i = j + 1 + hashes;
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && (at(i + 2) == '\'' || at(i + 1) == '\\') {
            // A character literal ('x', '\'', '\u{fffd}'); a lifetime ('a)
            // has no closing quote and is kept.
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The commands: the modules `commands/mod.rs` declares.
fn commands() -> BTreeSet<String> {
    let text = std::fs::read_to_string(src().join("commands/mod.rs")).expect("commands/mod.rs");
    code_only(&text)
        .lines()
        .filter_map(|line| line.trim().strip_prefix("pub mod "))
        .map(|rest| rest.trim_end_matches(';').trim().to_string())
        .collect()
}

/// Where a file sits in the layout.
#[derive(Debug, PartialEq)]
enum Place {
    /// `main.rs`: the list of commands.
    Main,
    /// `commands/mod.rs`.
    CommandList,
    /// A command's own file, or the `mod.rs` of its folder (`super` is
    /// `commands`).
    Command(String),
    /// A part inside a command's folder (`super` is the command).
    Part(String),
    /// A shared module beside `commands/`.
    Shared,
}

fn place(relative: &Path) -> Place {
    let parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    match parts
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["main.rs"] => Place::Main,
        ["commands", "mod.rs"] => Place::CommandList,
        ["commands", file] => Place::Command(file.trim_end_matches(".rs").to_string()),
        ["commands", dir, "mod.rs"] => Place::Command(dir.to_string()),
        ["commands", dir, ..] => Place::Part(dir.to_string()),
        _ => Place::Shared,
    }
}

/// What in `code` (of a file at `place`) reaches into a command other than
/// its own, or, from a shared module, into any command.
fn violations(place: &Place, code: &str, commands: &BTreeSet<String>) -> Vec<String> {
    let code = code_only(code);
    // Paths as sequences of identifiers joined by `::`, with `{a, b}` groups
    // flattened: `crate::commands::{run, test}` names `commands::run` and
    // `commands::test`.
    let mut flat = code.split_whitespace().collect::<Vec<_>>().join(" ");
    for token in ["::", "{", "}", ","] {
        flat = flat
            .replace(&format!(" {token}"), token)
            .replace(&format!("{token} "), token);
    }
    let segments_after = |prefix: &str| -> Vec<String> {
        let mut found = Vec::new();
        let mut rest = flat.as_str();
        while let Some(index) = rest.find(prefix) {
            let before = flat.len() - rest.len() + index;
            rest = &rest[index + prefix.len()..];
            if before > 0 && flat[..before].ends_with(|c: char| is_ident(c)) {
                continue;
            }
            if let Some(group) = rest.strip_prefix('{') {
                let inner = group.split('}').next().unwrap_or("");
                found.extend(
                    inner
                        .split(',')
                        .map(|s| s.split("::").next().unwrap_or("").to_string())
                        .filter(|name| !name.is_empty()),
                );
            } else {
                found.push(rest.chars().take_while(|&c| is_ident(c)).collect());
            }
        }
        found
    };
    let mut problems = Vec::new();
    let own = match place {
        Place::Command(own) | Place::Part(own) => Some(own.as_str()),
        Place::Main | Place::CommandList | Place::Shared => None,
    };
    if matches!(place, Place::Shared) {
        for name in segments_after("commands::") {
            problems.push(format!("a shared module uses commands::{name}"));
        }
        if flat.contains("mod commands;") {
            problems.push("a shared module declares the commands".into());
        }
    }
    if let Some(own) = own {
        for name in segments_after("commands::") {
            if name != own {
                problems.push(format!("imports the command {name}"));
            }
        }
        if flat.contains("super::super") {
            problems.push("reaches above its command with super::super".into());
        }
    }
    if let Place::Command(own) = place {
        for name in segments_after("super::") {
            if commands.contains(&name) && name != *own {
                problems.push(format!("imports the command {name} through super"));
            }
        }
    }
    if matches!(place, Place::Command(_) | Place::Part(_) | Place::Shared) {
        for name in segments_after("crate::") {
            if commands.contains(&name) {
                problems.push(format!(
                    "imports crate::{name}, a command outside commands/"
                ));
            }
        }
    }
    problems
}

#[test]
fn no_command_imports_another_and_shared_modules_import_no_command() {
    let commands = commands();
    assert!(
        commands.len() >= 13 && commands.contains("run") && commands.contains("audit"),
        "commands/mod.rs declares too few commands: {commands:?}"
    );
    let root = src();
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for file in rust_files(&root) {
        let relative = file.strip_prefix(&root).expect("below src").to_path_buf();
        let place = place(&relative);
        if let Place::Command(name) | Place::Part(name) = &place {
            seen.insert(name.clone());
        }
        let text = std::fs::read_to_string(&file).expect("a readable source file");
        for problem in violations(&place, &text, &commands) {
            problems.push(format!("{}: {problem}", relative.display()));
        }
    }
    assert_eq!(
        seen, commands,
        "every command under commands/ is declared in commands/mod.rs, and every one declared has its place"
    );
    assert!(
        problems.is_empty(),
        "a command imports another command, or a shared module imports a command; move what they share into a shared module beside commands/:\n  {}",
        problems.join("\n  ")
    );
}

/// The check itself finds what it is there to find, and only that.
#[test]
fn the_check_finds_a_command_importing_another() {
    let commands: BTreeSet<String> = ["run", "test", "audit", "pull"].map(String::from).into();
    let run = Place::Command("run".into());
    let part = Place::Part("run".into());
    let found = |place: &Place, code: &str| violations(place, code, &commands);

    assert_eq!(
        found(&run, "use crate::commands::test::xml_escape;"),
        ["imports the command test"]
    );
    assert_eq!(
        found(
            &part,
            "use crate::commands::{\n    audit::engine,\n    run::show,\n};"
        ),
        ["imports the command audit"]
    );
    assert_eq!(
        found(&run, "use super::pull::RegistryArgs;"),
        ["imports the command pull through super"]
    );
    assert_eq!(
        found(&part, "use super::super::audit::table;"),
        ["reaches above its command with super::super"]
    );
    assert_eq!(
        found(&part, "let x = crate::audit::counts(&f);"),
        ["imports crate::audit, a command outside commands/"]
    );
    assert_eq!(
        found(&Place::Shared, "use crate::commands::run::RunArgs;"),
        ["a shared module uses commands::run"]
    );

    // Its own parts, shared modules, comments and help texts are fine.
    assert!(
        found(
            &part,
            "use super::{RunArgs, show};\nuse crate::modules::ALL;"
        )
        .is_empty()
    );
    assert!(found(&run, "use crate::commands::run::show;").is_empty());
    assert!(
        found(
            &run,
            "// crate::commands::test::junit\nconst HELP: &str = \"see crate::commands::audit\";"
        )
        .is_empty()
    );
    assert!(
        found(
            &run,
            "let c = '\"'; let r = r#\"crate::commands::test\"#; fn f<'a>(x: &'a str) {}"
        )
        .is_empty()
    );
}

#[test]
fn files_are_placed_by_their_path() {
    assert_eq!(place(Path::new("main.rs")), Place::Main);
    assert_eq!(
        place(Path::new("commands/test.rs")),
        Place::Command("test".into())
    );
    assert_eq!(
        place(Path::new("commands/run/mod.rs")),
        Place::Command("run".into())
    );
    assert_eq!(
        place(Path::new("commands/run/several.rs")),
        Place::Part("run".into())
    );
    assert_eq!(place(Path::new("findings/table.rs")), Place::Shared);
}
