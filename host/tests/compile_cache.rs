//! The compile cache through the built binary: a one-shot `run` keeps the
//! compiled module and the next one reuses it with the same verdict; a
//! damaged entry is compiled again; an unusable directory is a warning;
//! `--no-compile-cache` writes nothing. (How much time it saves is measured
//! in docs/performance.md, never asserted here.)

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::module;

const CATALOG_SOURCE: &str = "apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata: {name: broken, namespace: olm}
spec: {sourceType: grpc}
";

fn run(dir: &Path, cache: &[&str]) -> Output {
    let object = dir.join("cs.yaml");
    std::fs::write(&object, CATALOG_SOURCE).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_olm-guard"))
        .arg("run")
        .arg(module("catalog-union"))
        .arg("--object")
        .arg(&object)
        .args(cache)
        .env_remove("OLM_GUARD_NO_COMPILE_CACHE")
        .env_remove("OLM_GUARD_COMPILE_CACHE_DIR")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Every file below `dir`.
fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                found.extend(files(&path));
            } else {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn a_second_run_reuses_the_compiled_module_with_the_same_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("compiled");
    let flag = ["--compile-cache-dir", cache.to_str().unwrap()];
    let first = run(dir.path(), &flag);
    let entries = files(&cache);
    assert!(
        !entries.is_empty(),
        "the first run stored nothing in {cache:?}"
    );
    let second = run(dir.path(), &flag);
    assert_eq!(first.stdout, second.stdout);
    assert!(String::from_utf8_lossy(&second.stdout).contains("DENIED"));
    // The second run read the entry rather than adding another module.
    let modules =
        |paths: &[std::path::PathBuf]| paths.iter().filter(|p| p.extension().is_none()).count();
    assert_eq!(modules(&files(&cache)), modules(&entries));
}

#[test]
fn a_damaged_entry_is_compiled_again() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("compiled");
    let flag = ["--compile-cache-dir", cache.to_str().unwrap()];
    let first = run(dir.path(), &flag);
    for entry in files(&cache) {
        std::fs::write(&entry, b"not a compiled module").unwrap();
    }
    let again = run(dir.path(), &flag);
    assert_eq!(first.stdout, again.stdout);
}

#[test]
fn an_unusable_cache_is_a_warning_and_no_cache_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let not_a_dir = dir.path().join("file");
    std::fs::write(&not_a_dir, "").unwrap();
    let out = run(
        dir.path(),
        &["--compile-cache-dir", not_a_dir.to_str().unwrap()],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: cannot use the compile cache in")
            && stderr.contains("compiling without it"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("DENIED"));

    let cache = dir.path().join("unused");
    run(
        dir.path(),
        &[
            "--compile-cache-dir",
            cache.to_str().unwrap(),
            "--no-compile-cache",
        ],
    );
    assert!(
        files(&cache).is_empty(),
        "--no-compile-cache wrote {:?}",
        files(&cache)
    );
}
