//! Every `olm-guard` command line of the README, docs/ and the policies' and
//! examples' READMEs is one the CLI
//! takes: each is read out of its `sh` block (continuations joined, comments
//! and what the shell does around it dropped) and given to this build with
//! `--help` appended, which clap answers only once every flag before it is
//! known and every value parses (`-o native`, a flag renamed, a subcommand
//! gone all fail). The blocks that install into a cluster are also run for
//! real, as written (`control_plane.rs`, `kubewarden.rs`); this holds the
//! rest to the CLI as it is.

mod common;

use std::path::Path;
use std::process::Command;

/// The `sh` blocks of `text`, each as its command lines.
fn command_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut block: Option<String> = None;
    for line in text.lines() {
        match (&mut block, line.trim()) {
            (None, "```sh") => block = Some(String::new()),
            (Some(_), fence) if fence.starts_with("```") => {
                lines.extend(common::readme::joined_lines(
                    &block.take().unwrap_or_default(),
                ));
            }
            (Some(body), _) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, _) => {}
        }
    }
    lines
}

/// The inline code spans of `text` that are an `olm-guard` command
/// (`` `olm-guard audit --as USER` ``), a span broken over lines joined.
fn inline_commands(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut in_fence = false;
    let mut prose = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            prose.push('\n');
            continue;
        }
        if !in_fence {
            prose.push_str(line);
            prose.push(' ');
        }
    }
    for (i, span) in prose.split('`').enumerate() {
        let span = span.split_whitespace().collect::<Vec<_>>().join(" ");
        // `olm-guard run --as` names a flag in prose; it is no command.
        let names_a_flag = span.split(' ').count() <= 3
            && span.rsplit(' ').next().is_some_and(|w| w.starts_with("--"));
        if i % 2 == 1 && span.starts_with("olm-guard ") && !names_a_flag {
            found.push(span);
        }
    }
    found
}

/// The line without its comment (a `#` after a space, outside quotes).
fn without_comment(line: &str) -> &str {
    let mut quote = None;
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if previous.is_whitespace() => return &line[..i],
            _ => {}
        }
        previous = c;
    }
    line
}

/// The words of one simple command, as the shell would split them, with
/// what the shell itself stands for replaced: `<(...)` and `$(...)` by a
/// path, `$VAR` left as text, redirections dropped.
fn words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = command.chars().peekable();
    let mut quote: Option<char> = None;
    let flush = |word: &mut String, words: &mut Vec<String>| {
        if !word.is_empty() {
            words.push(std::mem::take(word));
        }
    };
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => quote = Some(c),
            (None, '<' | '$') if chars.peek() == Some(&'(') => {
                // A process or command substitution: skip to its `)`.
                let mut depth = 0;
                for c in chars.by_ref() {
                    match c {
                        '(' => depth += 1,
                        ')' if depth == 1 => break,
                        ')' => depth -= 1,
                        _ => {}
                    }
                }
                word.push_str("/dev/null");
            }
            (None, c) if c.is_whitespace() => flush(&mut word, &mut words),
            (None, c) => word.push(c),
        }
    }
    flush(&mut word, &mut words);
    // Redirections: `> file`, `2>&1`, `>file`; `<w>` is a placeholder.
    let mut kept = Vec::new();
    let mut skip_next = false;
    for word in words {
        if word.len() > 2 && word.starts_with('<') && word.ends_with('>') {
            kept.push("x".to_string());
            continue;
        }
        if skip_next {
            skip_next = false;
            continue;
        }
        if word == ">" || word == ">>" || word == "<" || word == "2>" {
            skip_next = true;
        } else if !(word.starts_with('>') || word.starts_with("2>") || word.starts_with('<')) {
            kept.push(word);
        }
    }
    kept
}

/// The `olm-guard` invocations of a command line: each simple command of
/// its pipes and lists that runs olm-guard, its arguments.
fn invocations(line: &str) -> Vec<Vec<String>> {
    let line = without_comment(line.trim().trim_start_matches("$ "));
    let mut found = Vec::new();
    // A pipe has spaces around it; `json|yaml` and `[--trace]` are the
    // usage notation of alternatives and options: the first alternative,
    // the option given.
    for segment in line
        .split(" | ")
        .flat_map(|s| s.split(';'))
        .flat_map(|s| s.split("&&"))
    {
        let mut words: Vec<String> = words(segment)
            .into_iter()
            .map(|w| {
                let w = w.trim_start_matches('[').trim_end_matches(']');
                w.split('|').next().unwrap_or(w).to_string()
            })
            .filter(|w| !w.is_empty())
            .collect();
        // Environment assignments and `time` before the command.
        while words
            .first()
            .is_some_and(|w| w == "time" || (w.contains('=') && !w.starts_with('-')))
        {
            words.remove(0);
        }
        if words.first().is_some_and(|w| w == "olm-guard") {
            found.push(words[1..].to_vec());
        }
    }
    found
}

/// The Markdown files whose commands are held: the top level's (README.md,
/// HACKING.md), docs/*.md, each policy's README and examples/'s.
fn documents() -> Vec<std::path::PathBuf> {
    let root = common::root();
    let markdown_in = |dir: &Path| -> Vec<std::path::PathBuf> {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        files.sort();
        files
    };
    let mut files = markdown_in(&root);
    files.extend(markdown_in(&root.join("docs")));
    let mut nested: Vec<_> = ["policies", "examples"]
        .iter()
        .flat_map(|top| std::fs::read_dir(root.join(top)).into_iter().flatten())
        .map(|e| e.unwrap().path().join("README.md"))
        .filter(|p| p.is_file())
        .collect();
    nested.sort();
    files.extend(nested);
    files
}

#[test]
fn every_olm_guard_command_in_the_readme_and_docs_is_one_the_cli_takes() {
    let mut checked = 0;
    let mut refused = Vec::new();
    for file in documents() {
        let text = std::fs::read_to_string(&file).unwrap();
        let shown = file
            .strip_prefix(common::root())
            .unwrap_or(Path::new(&file))
            .display()
            .to_string();
        for line in command_lines(&text)
            .into_iter()
            .chain(inline_commands(&text))
        {
            for args in invocations(&line) {
                let output = Command::new(env!("CARGO_BIN_EXE_olm-guard"))
                    .args(&args)
                    .arg("--help")
                    .current_dir(common::root())
                    .output()
                    .unwrap();
                checked += 1;
                if !output.status.success() {
                    refused.push(format!(
                        "{shown}: `olm-guard {}`:\n{}",
                        args.join(" "),
                        common::text(&output.stderr)
                    ));
                }
            }
        }
    }
    eprintln!("doc commands: {checked} olm-guard command lines of the READMEs and docs/ checked");
    assert!(checked > 50, "only {checked} command lines found");
    assert!(
        refused.is_empty(),
        "{} command lines the CLI refuses:\n{}",
        refused.len(),
        refused.join("\n")
    );
}

#[test]
fn the_reader_splits_lines_as_the_shell_does() {
    let line = "olm-guard scaffold vap catalog-union --settings catalog-union=migrate.yaml \
                --api-resources <(kubectl api-resources -o wide) -o native   # v1 or v1beta1";
    assert_eq!(
        invocations(line),
        vec![
            [
                "scaffold",
                "vap",
                "catalog-union",
                "--settings",
                "catalog-union=migrate.yaml",
                "--api-resources",
                "/dev/null",
                "-o",
                "native"
            ]
            .map(String::from)
            .to_vec()
        ]
    );
    assert_eq!(
        invocations(
            "kubectl get cs -o yaml | OLM_GUARD_DIST=d olm-guard run x --object - > out.json"
        ),
        vec![["run", "x", "--object", "-"].map(String::from).to_vec()]
    );
    assert!(invocations("kubectl apply -f deploy/kubewarden/").is_empty());
    assert_eq!(
        invocations("olm-guard inspect dist/x.wasm [-o json|yaml]   # the metadata"),
        vec![
            ["inspect", "dist/x.wasm", "-o", "json"]
                .map(String::from)
                .to_vec()
        ]
    );
    // The drifted README line is refused by the CLI, so the test can fail.
    let output = Command::new(env!("CARGO_BIN_EXE_olm-guard"))
        .args(&invocations(line)[0])
        .arg("--help")
        .output()
        .unwrap();
    assert!(!output.status.success());
}
