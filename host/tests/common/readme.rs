//! The README's command blocks, run as written: the commands of a block
//! read out of README.md, and a shell like a user's checkout to run them in.

use std::path::Path;
use std::process::{Command, Output};

use olm_guard_kube_harness::cluster::kubectl;

/// The commands of the first `sh` block after the README heading
/// `heading`: comment lines dropped, `\`-continued lines joined.
pub fn readme_commands(heading: &str) -> Vec<String> {
    readme_commands_after(&format!("\n{heading}\n"))
}

/// The commands of the first `sh` block after the README text `marker`, as
/// [`readme_commands`].
pub fn readme_commands_after(marker: &str) -> Vec<String> {
    let readme = std::fs::read_to_string(super::root().join("README.md")).expect("README.md");
    let after = readme
        .split_once(marker)
        .unwrap_or_else(|| panic!("README.md has no {marker:?}"))
        .1;
    let block = after
        .split_once("```sh\n")
        .and_then(|(_, rest)| rest.split_once("\n```"))
        .unwrap_or_else(|| panic!("no sh block after {marker:?}"))
        .0;
    joined_lines(block)
        .into_iter()
        .filter(|line| !line.trim_start().starts_with('#') && !line.trim().is_empty())
        .collect()
}

/// The lines of a shell block, each `\`-continued line joined to the next.
pub fn joined_lines(block: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut pending = String::new();
    for line in block.lines() {
        let line = line.trim_end();
        match line.strip_suffix('\\') {
            Some(head) => pending.push_str(head),
            None => {
                pending.push_str(line);
                lines.push(std::mem::take(&mut pending));
            }
        }
    }
    lines
}

/// A directory like a checkout a user works in: the repository's
/// `deploy/`, `examples/`, `testdata/` and `dist/` (linked), a `settings.yaml` of their
/// own, and a `bin/` with `olm-guard` and `kubectl`.
pub struct Shell {
    pub dir: tempfile::TempDir,
}

impl Shell {
    pub fn new() -> Shell {
        let dir = tempfile::tempdir().expect("a directory");
        for name in ["deploy", "examples", "testdata"] {
            std::os::unix::fs::symlink(super::root().join(name), dir.path().join(name))
                .expect("linked");
        }
        std::os::unix::fs::symlink(super::dist(), dir.path().join("dist")).expect("linked");
        // catalog-union with a setting of the user's own.
        std::fs::write(dir.path().join("settings.yaml"), "warnLegacy: true\n").expect("written");
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).expect("bin/");
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_olm-guard"), bin.join("olm-guard"))
            .expect("linked");
        std::os::unix::fs::symlink(kubectl().expect("kubectl"), bin.join("kubectl"))
            .expect("linked");
        Shell { dir }
    }

    /// `command` run by bash here (the README's commands use `<(...)`), with
    /// `kubeconfig` as `KUBECONFIG`.
    pub fn run(&self, command: &str, kubeconfig: &Path) -> Output {
        let path = format!(
            "{}:{}",
            self.dir.path().join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Command::new("bash")
            .args(["-c", command])
            .current_dir(self.dir.path())
            .env("PATH", path)
            .env("KUBECONFIG", kubeconfig)
            .env("HOME", self.dir.path())
            .output()
            .expect("sh runs")
    }

    /// `command`, which must succeed: its stdout.
    pub fn ok(&self, command: &str, kubeconfig: &Path) -> String {
        let output = self.run(command, kubeconfig);
        assert!(
            output.status.success(),
            "`{command}` failed:\n{}{}",
            super::text(&output.stdout),
            super::text(&output.stderr)
        );
        eprintln!("ran: {command}");
        super::text(&output.stdout)
    }
}
