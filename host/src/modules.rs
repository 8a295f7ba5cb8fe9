//! Module resolution: what a MODULE argument names (a name in `--dist`, a
//! path to a `.wasm` file, a `registry://` reference, or `all`, every module
//! in `--dist`), the modules of a directory, where a module built without
//! embedded metadata finds its metadata.yml, and modules loaded with their
//! metadata and settings for the commands that route objects by metadata
//! rules (`run` with several modules, `audit`) and for suite files (`test`).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use olm_guard_evaluator::Policy;
use olm_guard_evaluator::preflight::Module;
use olm_guard_evaluator::scenario::PolicyStore;
use olm_guard_evaluator::suite;
use olm_guard_runtime::{Metadata, Runtime};

use crate::registry::{self, RegistryArgs};

/// The word that stands for every module in `--dist`.
pub const ALL: &str = "all";

/// `policies/` beside `dist/`: where a project's metadata.yml files are,
/// for modules built without embedded metadata.
pub fn policies_dir(dist: &Path) -> PathBuf {
    dist.parent()
        .map_or_else(|| PathBuf::from("policies"), |p| p.join("policies"))
}

/// MODULE as a path (`.wasm`, or with a directory), a registry reference, or
/// a name in `dist`.
pub fn resolve(module: &str, dist: &Path) -> anyhow::Result<PathBuf> {
    let as_path = Path::new(module);
    if module.contains("://") || module.ends_with(".wasm") || as_path.components().count() > 1 {
        return Ok(as_path.to_path_buf());
    }
    let in_dist = dist.join(format!("{module}.wasm"));
    if !in_dist.exists() {
        bail!(
            "no module {module:?}: {} does not exist (build the modules with `make dist`, pass --dist DIR, or give a path to a .wasm file)",
            in_dist.display()
        );
    }
    Ok(in_dist)
}

/// The modules named: `all` (every `.wasm` in `dist`), names in `dist`,
/// paths or registry references (fetched into the cache); each with its
/// name (the file stem, or the reference's last path segment without its
/// tag). A module named twice is taken once; two modules of one name are
/// an error.
pub fn named(
    modules: &[String],
    dist: &Path,
    registry: &RegistryArgs,
) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let mut named: Vec<(String, PathBuf)> = Vec::new();
    for module in modules {
        let found = if module == ALL {
            if registry.verification_config.is_some() {
                bail!("{}", registry::unverifiable(ALL));
            }
            let files = files_in(dist).with_context(|| {
                format!(
                    "`{ALL}` stands for every module in --dist ({})",
                    dist.display()
                )
            })?;
            if files.is_empty() {
                bail!(
                    "`{ALL}`: {} holds no .wasm module (build them with `make dist`, or pass --dist DIR)",
                    dist.display()
                );
            }
            files
        } else {
            let path = resolve(module, dist)?;
            vec![registry::local_module(&path, registry)?]
        };
        for path in found {
            let name = if module != ALL && registry::is_registry(module) {
                registry_name(module)
            } else {
                path.file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default()
            };
            if let Some((_, first)) = named.iter().find(|(n, _)| *n == name) {
                if *first == path {
                    continue;
                }
                bail!(
                    "two modules are named {name}: {} and {}; name each module once",
                    first.display(),
                    path.display()
                );
            }
            named.push((name, path));
        }
    }
    Ok(named)
}

/// `registry://host/org/catalog-union:v1` → `catalog-union`.
fn registry_name(reference: &str) -> String {
    let last = reference.rsplit('/').next().unwrap_or(reference);
    let last = last.split('@').next().unwrap_or(last);
    last.split(':').next().unwrap_or(last).to_string()
}

/// The `.wasm` files of `dir`, sorted by name.
pub fn files_in(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "wasm"))
        .collect();
    paths.sort();
    Ok(paths)
}

/// Whether `dir` can be read and holds a `.wasm` module.
pub fn has_modules(dir: &Path) -> bool {
    files_in(dir).is_ok_and(|files| !files.is_empty())
}

/// A module loaded to be routed objects by its metadata rules: compiled
/// once, with its metadata and the settings it runs with.
pub struct Loaded {
    /// The module's name.
    pub name: String,
    /// Where it was loaded from.
    pub path: PathBuf,
    /// Compiled once; every evaluation gets a fresh instance.
    pub policy: Policy,
    /// Its metadata (required: the rules say what it applies to).
    pub metadata: Metadata,
    /// The settings it runs with (validated by the module).
    pub settings: Value,
}

impl Loaded {
    /// The admission sequence's view of the module.
    pub fn as_module(&self) -> Module<'_> {
        Module {
            name: &self.name,
            policy: &self.policy,
            metadata: &self.metadata,
            settings: &self.settings,
        }
    }
}

/// The modules `modules` (name, file), compiled once, each with its
/// settings from `settings` (`name` → document) or `{}`, checked by the
/// module's `validate_settings`; a module without metadata (embedded, or a
/// `metadata.yml` under `metadata_dir/<name>/`) is an error, as is a
/// settings entry for no module.
pub fn load(
    runtime: &Runtime,
    modules: Vec<(String, PathBuf)>,
    metadata_dir: &Path,
    mut settings: BTreeMap<String, Value>,
) -> anyhow::Result<Vec<Loaded>> {
    let mut loaded = Vec::new();
    for (name, path) in modules {
        let mut policy = Policy::load(runtime, &path, None)?;
        if policy.metadata.is_none() {
            // A module built but not annotated: its project's metadata.yml.
            let file = metadata_dir.join(&name).join("metadata.yml");
            if file.is_file() {
                policy = Policy::load(runtime, &path, Some(&file))?;
            }
        }
        let Some(metadata) = policy.metadata.clone() else {
            bail!(
                "{} has no embedded metadata, so which objects it applies to is unknown: \
                 annotate it (`olm-guard annotate`, or `make dist`)",
                path.display()
            );
        };
        let settings = settings.remove(&name).unwrap_or_else(|| json!({}));
        policy
            .validate_settings(&settings)
            .with_context(|| format!("--settings {name}"))?;
        loaded.push(Loaded {
            name,
            path,
            policy,
            metadata,
            settings,
        });
    }
    if let Some(name) = settings.keys().next() {
        bail!(
            "--settings {name}=...: no module {name} among the modules evaluated ({})",
            loaded
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(loaded)
}

/// The metadata of module `name` at `path` without compiling it: embedded,
/// or its project's `metadata.yml` (`policies/<name>/` beside `dist`).
pub fn metadata_of(name: &str, path: &Path, dist: &Path) -> anyhow::Result<Metadata> {
    let wasm = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    if let Some(metadata) =
        Metadata::from_module(&wasm).with_context(|| format!("{}", path.display()))?
    {
        return Ok(metadata);
    }
    let file = policies_dir(dist).join(name).join("metadata.yml");
    if file.is_file() {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        return Metadata::from_yaml(&text).with_context(|| format!("{}", file.display()));
    }
    bail!(
        "{} has no embedded metadata, so what it reads is unknown: annotate it \
         (`olm-guard annotate`, or `make dist`)",
        path.display()
    )
}

/// A suite's modules: names from `--dist` (through the scenarios' store),
/// paths relative to the suite and registry references, each compiled once.
pub struct SuiteModules<'a> {
    store: PolicyStore<'a>,
    by_path: HashMap<PathBuf, Arc<Policy>>,
    runtime: &'a Runtime,
    dist: &'a Path,
    registry: &'a RegistryArgs,
}

impl<'a> SuiteModules<'a> {
    /// The modules of suites run beside the scenarios `store` loads from
    /// `dist`.
    pub fn new(
        store: PolicyStore<'a>,
        runtime: &'a Runtime,
        dist: &'a Path,
        registry: &'a RegistryArgs,
    ) -> Self {
        SuiteModules {
            store,
            by_path: HashMap::new(),
            runtime,
            dist,
            registry,
        }
    }
}

impl suite::ModuleSource for SuiteModules<'_> {
    fn load(&mut self, module: &str, base: &Path) -> anyhow::Result<Arc<Policy>> {
        if !module.contains("://") && !module.ends_with(".wasm") && !module.contains('/') {
            let file = self.dist.join(format!("{module}.wasm"));
            if !file.is_file() {
                anyhow::bail!(
                    "no module {module} in {} (its modules: {})",
                    self.dist.display(),
                    self.all()?.join(", ")
                );
            }
            return self.store.get(module);
        }
        let file = if module.contains("://") {
            registry::local_module(Path::new(module), self.registry)?
        } else {
            base.join(module)
        };
        if let Some(policy) = self.by_path.get(&file) {
            return Ok(policy.clone());
        }
        let policy = Arc::new(Policy::load(self.runtime, &file, None)?);
        self.by_path.insert(file, policy.clone());
        Ok(policy)
    }

    fn all(&mut self) -> anyhow::Result<Vec<String>> {
        Ok(files_in(self.dist)?
            .iter()
            .filter_map(|path| path.file_stem())
            .map(|stem| stem.to_string_lossy().into_owned())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_references_are_named_by_their_repository() {
        assert_eq!(
            registry_name("registry://ghcr.io/org/catalog-union:v0.1.0"),
            "catalog-union"
        );
        assert_eq!(
            registry_name("registry://localhost:5000/og-intersection@sha256:abc"),
            "og-intersection"
        );
    }
}
