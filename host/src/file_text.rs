//! The text of a file argument, read from the file system once.
//!
//! A shell's process substitution (`--api-resources <(kubectl api-resources
//! -o wide)`) hands the command a pipe, `/dev/fd/63`, which gives its text
//! to the first reader only; so do `/dev/stdin` and a named pipe. A command
//! that reads one flag's file in two places (checking it up front, then
//! using it) would see it empty the second time. Every file argument is
//! read through [`read`], which keeps the text of anything that is not a
//! regular file for the rest of the process; a regular file is read again
//! each time, so that a large `--cluster` dump is not held twice. Standard
//! input (`-`) is kept the same way ([`read_stdin`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// Texts of the pipes and devices read so far, by the path given.
static PIPES: Mutex<Option<HashMap<PathBuf, String>>> = Mutex::new(None);

/// The text of standard input (a file argument `-`), once read.
static STDIN: Mutex<Option<String>> = Mutex::new(None);

/// The text of standard input, read once: `run` looks at `--object -`
/// first to count its documents, then evaluates them.
pub fn read_stdin() -> std::io::Result<String> {
    let mut kept = STDIN.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(text) = kept.as_ref() {
        return Ok(text.clone());
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)?;
    *kept = Some(text.clone());
    Ok(text)
}

/// The text of `path`; a pipe or device is read once, and later calls get
/// the same text.
pub fn read(path: &Path) -> std::io::Result<String> {
    let is_regular = std::fs::metadata(path).is_ok_and(|m| m.is_file());
    if is_regular {
        return std::fs::read_to_string(path);
    }
    let mut pipes = PIPES.lock().unwrap_or_else(PoisonError::into_inner);
    let pipes = pipes.get_or_insert_with(HashMap::new);
    if let Some(text) = pipes.get(path) {
        return Ok(text.clone());
    }
    let text = std::fs::read_to_string(path)?;
    pipes.insert(path.to_path_buf(), text.clone());
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_pipe_gives_the_same_text_to_every_reader() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("api-resources");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                let mut pipe = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
                pipe.write_all(b"NAME APIVERSION\n").unwrap();
            })
        };
        assert_eq!(read(&fifo).unwrap(), "NAME APIVERSION\n");
        writer.join().unwrap();
        // Read again with no writer: the pipe itself would block or be empty.
        assert_eq!(read(&fifo).unwrap(), "NAME APIVERSION\n");
    }

    #[test]
    fn a_regular_file_is_read_anew() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cluster.yaml");
        std::fs::write(&file, "a").unwrap();
        assert_eq!(read(&file).unwrap(), "a");
        std::fs::write(&file, "b").unwrap();
        assert_eq!(read(&file).unwrap(), "b");
    }
}
