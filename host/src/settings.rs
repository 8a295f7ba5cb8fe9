//! Settings files, one flag on every command that takes them:
//! `--settings FILE` for the one module evaluated, `--settings MODULE=FILE`
//! (repeatable) to say which module a file is for. Each file is JSON or
//! YAML, one document, and a mapping, as Kubewarden passes settings.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::Value;

use olm_guard_evaluator::input as admission;

/// The settings in `path`, `{}` without one.
pub fn read(path: Option<&Path>) -> anyhow::Result<Value> {
    let flag = || match path {
        Some(path) => format!("--settings {}", path.display()),
        None => "--settings".into(),
    };
    let document = match path {
        Some(path) => Some(admission::read_document(path).with_context(flag)?),
        None => None,
    };
    admission::settings_object(document).with_context(flag)
}

/// The settings file of the one module `module` (its name): `--settings
/// FILE`, or `--settings NAME=FILE` naming it (a file whose name holds a
/// `=` is still a file).
pub fn for_one_module(given: &[String], module: &str) -> anyhow::Result<Option<PathBuf>> {
    match given {
        [] => Ok(None),
        [one] => match split(one) {
            Some((name, file)) => {
                if name != module {
                    bail!("--settings {one}: the module is {module}, not {name}");
                }
                Ok(Some(PathBuf::from(file)))
            }
            None => Ok(Some(PathBuf::from(one))),
        },
        _ => bail!(
            "--settings is given {} times for one module {module}",
            given.len()
        ),
    }
}

/// `NAME=FILE` as (name, file), unless a file of that whole name exists.
fn split(given: &str) -> Option<(&str, &str)> {
    if Path::new(given).exists() {
        return None;
    }
    given.split_once('=')
}

/// The settings of each of `modules` (their names) given: `--settings
/// NAME=FILE` per module, or a bare `--settings FILE` when there is one
/// module. A bare file with several modules, a module named twice or a
/// name that is none of `modules` is refused with the fix, before any
/// file is read.
pub fn by_module(given: &[String], modules: &[&str]) -> anyhow::Result<BTreeMap<String, Value>> {
    let mut files = Vec::new();
    for entry in given {
        let (name, file) = match (split(entry), modules) {
            (Some((name, file)), _) => (name, file),
            (None, [one]) => (*one, entry.as_str()),
            (None, _) => bail!(
                "--settings {entry}: with several modules, say which module the settings are for: --settings <module>={entry}"
            ),
        };
        if !modules.contains(&name) {
            bail!(
                "--settings {name}={file}: no module {name} among the modules ({})",
                modules.join(", ")
            );
        }
        if files.iter().any(|(n, _)| *n == name) {
            bail!("--settings {name} is given twice");
        }
        files.push((name, file));
    }
    let mut settings = BTreeMap::new();
    for (name, file) in files {
        let document = admission::read_document(Path::new(file))
            .with_context(|| format!("--settings {name}={file}"))?;
        let value = admission::settings_object(Some(document))
            .with_context(|| format!("--settings {name}={file}"))?;
        settings.insert(name.to_string(), value);
    }
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_settings_files_are_refused_with_the_fix() {
        let err = by_module(&["cu.yaml".into()], &["a", "b"]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--settings cu.yaml: with several modules, say which module the settings are for: --settings <module>=cu.yaml"
        );
        let err = by_module(&["c=cu.yaml".into()], &["a", "b"]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--settings c=cu.yaml: no module c among the modules (a, b)"
        );
    }
}
