//! Picks a few scenarios per rule from `testdata/` and writes them, as the
//! page's editors hold them (YAML text per field), to `$OUT_DIR/examples.json`,
//! which `rules()` embeds: the page's examples are the scenarios `make test`
//! checks, and the crate's tests check them again through the page's own
//! entry point.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

/// Examples per rule: enough to show each verdict, few enough to keep the
/// module small.
const PER_RULE: usize = 6;

/// A scenario larger than this (request, settings and cluster together) is
/// not an example: it would make the module large and the page unreadable.
const MAX_BYTES: u64 = 20_000;

fn main() {
    let testdata = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata");
    println!("cargo:rerun-if-changed=../testdata");
    let mut rules = Map::new();
    for rule_dir in sorted_dirs(&testdata) {
        let Some(rule) = file_name(&rule_dir) else {
            continue;
        };
        let candidates: Vec<Value> = sorted_dirs(&rule_dir)
            .iter()
            .filter_map(|dir| example(dir))
            .collect();
        // testdata/upstream holds upstream files, not a rule's scenarios.
        if candidates.is_empty() {
            continue;
        }
        rules.insert(rule, Value::Array(pick(candidates)));
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("examples.json");
    if let Err(e) = fs::write(&out, Value::Object(rules).to_string()) {
        println!("cargo:warning=cannot write {}: {e}", out.display());
        std::process::exit(1);
    }
}

/// The subdirectories of `dir`, by name; none when it cannot be read.
/// Names starting with `_` or `.` hold fixtures, not scenarios.
fn sorted_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .filter(|path| file_name(path).is_some_and(|n| !n.starts_with(['_', '.'])))
        .collect();
    dirs.sort();
    dirs
}

fn file_name(path: &Path) -> Option<String> {
    path.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_string)
}

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&fs::read_to_string(path).ok()?).ok()
}

fn yaml(value: &Value) -> String {
    serde_yaml_ng::to_string(value).unwrap_or_default()
}

/// A scenario as the page's inputs, or `None` when it is not one the
/// bare-object form reproduces (settings errors, subresources, requests that
/// say more than their object) or too large.
fn example(dir: &Path) -> Option<Value> {
    let expect = read_json(&dir.join("expect.json"))?;
    if expect.get("settings_error_contains").is_some() {
        return None;
    }
    let size: u64 = ["request.json", "settings.json", "cluster.yaml"]
        .iter()
        .filter_map(|f| fs::metadata(dir.join(f)).ok())
        .map(|m| m.len())
        .sum();
    if size > MAX_BYTES {
        return None;
    }
    let review = read_json(&dir.join("request.json"))?;
    let request = review.get("request").unwrap_or(&review);
    let text = |key: &str| request.get(key).and_then(Value::as_str).unwrap_or("");
    if !text("subResource").is_empty() {
        return None;
    }
    let present = |key: &str| request.get(key).filter(|v| !v.is_null());
    let object = present("object");
    let old_object = present("oldObject");
    let subject = object.or(old_object)?;
    // The form builds name, namespace, kind and resource from the object;
    // a request that says otherwise is shown only as a raw request.
    let meta_text = |key: &str| {
        subject
            .pointer(&format!("/metadata/{key}"))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    if text("name") != meta_text("name")
        || (!meta_text("namespace").is_empty() && text("namespace") != meta_text("namespace"))
        || request.pointer("/kind/kind").and_then(Value::as_str)
            != subject.get("kind").and_then(Value::as_str)
    {
        return None;
    }
    let groups: Vec<&str> = request
        .pointer("/userInfo/groups")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let settings = read_json(&dir.join("settings.json"))
        .map(|s| yaml(&s))
        .unwrap_or_default();
    let cluster = fs::read_to_string(dir.join("cluster.yaml")).unwrap_or_default();
    Some(json!({
        "name": file_name(dir)?,
        "description": expect.get("description").and_then(Value::as_str).unwrap_or(""),
        "expect": expect,
        "object": object.map(yaml).unwrap_or_default(),
        "oldObject": old_object.map(yaml).unwrap_or_default(),
        "operation": text("operation"),
        "namespace": if meta_text("namespace").is_empty() { text("namespace") } else { "" },
        "user": request.pointer("/userInfo/username").and_then(Value::as_str).unwrap_or(""),
        "groups": groups.join(", "),
        "settings": settings,
        "cluster": cluster,
    }))
}

/// Up to [`PER_RULE`] examples, the first of each kind first (a denial, an
/// acceptance, a mutation, each with a cluster), then the rest in name order.
fn pick(candidates: Vec<Value>) -> Vec<Value> {
    let allowed = |e: &Value| e.pointer("/expect/allowed").and_then(Value::as_bool);
    let mutated = |e: &Value| e.pointer("/expect/mutated") == Some(&Value::Bool(true));
    let clustered = |e: &Value| e.get("cluster").and_then(Value::as_str) != Some("");
    let wanted: [&dyn Fn(&Value) -> bool; 5] = [
        &|e| allowed(e) == Some(false),
        &|e| allowed(e) == Some(true) && !mutated(e),
        &|e| mutated(e),
        &|e| allowed(e) == Some(false) && clustered(e),
        &|e| allowed(e) == Some(true) && clustered(e),
    ];
    let mut chosen: Vec<usize> = Vec::new();
    for want in wanted {
        if let Some(i) =
            (0..candidates.len()).find(|&i| !chosen.contains(&i) && want(&candidates[i]))
        {
            chosen.push(i);
        }
    }
    for i in 0..candidates.len() {
        if chosen.len() >= PER_RULE {
            break;
        }
        if !chosen.contains(&i) {
            chosen.push(i);
        }
    }
    chosen.truncate(PER_RULE);
    chosen.sort_unstable();
    chosen
        .into_iter()
        .filter_map(|i| candidates.get(i).cloned())
        .collect()
}
