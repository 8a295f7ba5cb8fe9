//! Settings files: one for one module (`--settings FILE`, or
//! `--settings NAME=FILE` naming it), or one per module of several
//! (`--settings NAME=FILE`, repeatable), each JSON or YAML and a mapping, as
//! Kubewarden passes settings.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::Value;

use olm_guard_evaluator::input as admission;

/// The settings in `path`, `{}` without one.
pub fn read(path: Option<&Path>) -> anyhow::Result<Value> {
    admission::settings_object(match path {
        Some(path) => Some(admission::read_document(path)?),
        None => None,
    })
    .context("--settings")
}

/// The settings file of the one module at `module`: `--settings FILE`, or
/// `--settings NAME=FILE` naming it (a file whose name holds a `=` is
/// still a file).
pub fn for_one_module(given: &[String], module: &Path) -> anyhow::Result<Option<PathBuf>> {
    match given {
        [] => Ok(None),
        [one] => {
            let path = PathBuf::from(one);
            match one.split_once('=') {
                Some((name, file)) if !path.exists() => {
                    let stem = module.file_stem().map(|s| s.to_string_lossy());
                    if stem.as_deref() != Some(name) {
                        bail!(
                            "--settings {one}: the module is {}, not {name}",
                            module.display()
                        );
                    }
                    Ok(Some(PathBuf::from(file)))
                }
                _ => Ok(Some(path)),
            }
        }
        _ => bail!("--settings is given {} times for one module", given.len()),
    }
}

/// `--settings NAME=FILE` → name → settings document.
pub fn by_module(pairs: &[String]) -> anyhow::Result<BTreeMap<String, Value>> {
    let mut settings = BTreeMap::new();
    for pair in pairs {
        let Some((name, file)) = pair.split_once('=') else {
            bail!("--settings {pair}: expected <module>=<file>, e.g. catalog-union=cu.yaml");
        };
        let document = admission::read_document(Path::new(file))?;
        let value = admission::settings_object(Some(document))
            .with_context(|| format!("--settings {name}={file}"))?;
        if settings.insert(name.to_string(), value).is_some() {
            bail!("--settings {name} is given twice");
        }
    }
    Ok(settings)
}

/// [`by_module`] for a command that also takes a bare `--settings FILE`
/// with one module: with several, a bare file cannot say which module it
/// is for, and is refused with the fix, before any file is read.
pub fn by_named_module(pairs: &[String]) -> anyhow::Result<BTreeMap<String, Value>> {
    for pair in pairs {
        if !pair.contains('=') {
            bail!(
                "--settings {pair}: with several modules, say which module the settings are for: --settings <module>={pair}"
            );
        }
    }
    by_module(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_settings_files_are_refused_with_the_fix() {
        let err = by_named_module(&["cu.yaml".into()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--settings cu.yaml: with several modules, say which module the settings are for: --settings <module>=cu.yaml"
        );
    }
}
