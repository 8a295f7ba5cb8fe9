//! Module resolution: what a MODULE argument names (a name in the module
//! directory, a path to a `.wasm` file, a `registry://` reference, or `all`,
//! every module there), where the module directory is ([`DistArgs`]: `--dist`,
//! `$OLM_GUARD_DIST`, `./dist`, or the modules installed beside the binary),
//! the modules of a directory, where a module built without embedded
//! metadata finds its metadata.yml, and modules loaded with their metadata
//! and settings for the commands that route objects by metadata rules (`run`
//! with several modules, `audit`) and for suite files (`test`).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Args;
use serde_json::{Value, json};

use olm_guard_evaluator::Policy;
use olm_guard_evaluator::policy::PolicyError;
use olm_guard_evaluator::preflight::Module;
use olm_guard_evaluator::scenario::PolicyStore;
use olm_guard_evaluator::suite;
use olm_guard_runtime::{CallError, Metadata, Runtime};

use crate::registry::{self, RegistryArgs};

/// The word that stands for every module in the module directory.
pub const ALL: &str = "all";

/// The environment variable naming the module directory when `--dist` is
/// not given.
pub const DIST_ENV: &str = "OLM_GUARD_DIST";

/// Where the modules installed with olm-guard are, relative to the
/// directory above the binary's (`<prefix>/bin/olm-guard` →
/// `<prefix>/share/olm-guard/modules`), as `make install PREFIX=...` lays
/// them out.
pub const INSTALLED: &str = "share/olm-guard/modules";

/// `--dist`: where modules named by name are.
#[derive(Args, Clone, Debug, Default)]
pub struct DistArgs {
    /// The module directory: where a MODULE given by name (`catalog-union`)
    /// is found, as DIR/<name>.wasm, and what `all` stands for. Default:
    /// $OLM_GUARD_DIST, else ./dist when it holds modules, else the modules
    /// installed with olm-guard (<prefix>/share/olm-guard/modules beside
    /// <prefix>/bin/olm-guard).
    #[arg(long, value_name = "DIR")]
    pub dist: Option<PathBuf>,
}

/// The module directory in use, and how it was chosen (for messages).
#[derive(Debug, Clone)]
pub struct ModuleDir {
    /// The directory.
    pub dir: PathBuf,
    /// `--dist`, `$OLM_GUARD_DIST`, `./dist`, `installed with olm-guard`...
    pub chosen_by: String,
}

impl DistArgs {
    /// The module directory: `--dist`, else [`DIST_ENV`], else [`fallback`].
    pub fn locate(&self) -> anyhow::Result<ModuleDir> {
        self.locate_with(None)
    }

    /// As [`DistArgs::locate`], with `project` (a directory of the user's
    /// project, found by the command) tried after the environment variable.
    pub fn locate_with(&self, project: Option<ModuleDir>) -> anyhow::Result<ModuleDir> {
        if let Some(dir) = &self.dist {
            if !dir.is_dir() {
                bail!(
                    "--dist {}: no such directory (it names the directory holding <module>.wasm files)",
                    dir.display()
                );
            }
            return Ok(ModuleDir {
                dir: dir.clone(),
                chosen_by: "--dist".into(),
            });
        }
        if let Some(dir) = std::env::var_os(DIST_ENV).filter(|d| !d.is_empty()) {
            let dir = PathBuf::from(dir);
            if !dir.is_dir() {
                bail!(
                    "${DIST_ENV} is {}, which is no directory: set it to the directory holding <module>.wasm files, or unset it",
                    dir.display()
                );
            }
            return Ok(ModuleDir {
                dir,
                chosen_by: format!("${DIST_ENV}"),
            });
        }
        if let Some(project) = project {
            return Ok(project);
        }
        fallback()
    }
}

/// `./dist` when it holds modules, else the installed modules; an error
/// naming every place looked at when neither is there.
fn fallback() -> anyhow::Result<ModuleDir> {
    let here = PathBuf::from("dist");
    if has_modules(&here) {
        return Ok(ModuleDir {
            dir: here,
            chosen_by: "./dist, in the current directory".into(),
        });
    }
    let installed = installed_dir();
    if let Some(dir) = installed.as_ref().filter(|dir| dir.is_dir()) {
        return Ok(ModuleDir {
            dir: dir.clone(),
            chosen_by: "installed with olm-guard".into(),
        });
    }
    bail!(
        "no module directory: --dist is not given, ${DIST_ENV} is not set, ./dist holds no module, and {}: \
         build the modules (`make dist`) and pass --dist DIR, set {DIST_ENV}=DIR, or install them (`make install PREFIX=...`)",
        match installed {
            Some(dir) => format!("{} does not exist", dir.display()),
            None => "the directory of this olm-guard binary cannot be told".into(),
        }
    )
}

/// `<prefix>/share/olm-guard/modules` for this binary at
/// `<prefix>/bin/olm-guard` (`/proc/self/exe` on Linux: symbolic links
/// resolved, so a link to the binary finds its modules).
pub fn installed_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.join(INSTALLED))
}

/// `policies/` beside the module directory: where a project's metadata.yml
/// files are, for modules built without embedded metadata.
pub fn policies_dir(dist: &Path) -> PathBuf {
    dist.parent()
        .map_or_else(|| PathBuf::from("policies"), |p| p.join("policies"))
}

/// [`policies_dir`] for the module file `module` (its directory's).
fn policies_dir_of(module: &Path) -> PathBuf {
    policies_dir(module.parent().unwrap_or(Path::new(".")))
}

/// Whether MODULE names a file or a reference rather than a name in the
/// module directory: a `.wasm` file, a path with a directory, or a URL.
pub fn is_path(module: &str) -> bool {
    module.contains("://")
        || module.ends_with(".wasm")
        || Path::new(module).components().count() > 1
}

/// MODULE as a path (`.wasm`, or with a directory), a registry reference, or
/// a name in the module directory; a name not there is answered with the
/// modules that are, and where they were looked for.
pub fn resolve(module: &str, dist: &DistArgs) -> anyhow::Result<PathBuf> {
    if is_path(module) {
        return Ok(PathBuf::from(module));
    }
    in_dir(module, &dist.locate()?)
}

/// Module `name` in `dir`, or an error listing the modules there (and the
/// closest name, for a misspelling).
pub fn in_dir(name: &str, dir: &ModuleDir) -> anyhow::Result<PathBuf> {
    let file = dir.dir.join(format!("{name}.wasm"));
    if file.is_file() {
        return Ok(file);
    }
    let names = names_in(&dir.dir)?;
    let closest = names
        .iter()
        .map(|n| (strsim::jaro_winkler(name, n), n))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, n)| format!(" Did you mean {n}?"))
        .unwrap_or_default();
    let there = if names.is_empty() {
        "it holds no module (build them with `make dist`)".to_string()
    } else {
        format!("its modules are {}", names.join(", "))
    };
    bail!(
        "no module {name:?} in {} ({}): {there}; give one of them, a path to a .wasm file, or \
         another module directory with --dist DIR.{closest}",
        dir.dir.display(),
        dir.chosen_by
    )
}

/// The module names (file stems) of `dir`, sorted.
pub fn names_in(dir: &Path) -> anyhow::Result<Vec<String>> {
    Ok(files_in(dir)?
        .iter()
        .filter_map(|path| path.file_stem())
        .map(|stem| stem.to_string_lossy().into_owned())
        .collect())
}

/// The modules named: `all` (every `.wasm` in `dist`), names in `dist`,
/// paths or registry references (fetched into the cache); each with its
/// name (the file stem, or the reference's last path segment without its
/// tag). A module named twice is taken once; two modules of one name are
/// an error.
pub fn named(
    modules: &[String],
    dist: &DistArgs,
    registry: &RegistryArgs,
) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let mut named: Vec<(String, PathBuf)> = Vec::new();
    for module in modules {
        let found = if module == ALL {
            if registry.verification_config.is_some() {
                bail!("{}", registry::unverifiable(ALL));
            }
            let dir = dist.locate()?;
            let files = files_in(&dir.dir).with_context(|| {
                format!(
                    "`{ALL}` stands for every module in {} ({})",
                    dir.dir.display(),
                    dir.chosen_by
                )
            })?;
            if files.is_empty() {
                bail!(
                    "`{ALL}`: {} ({}) holds no .wasm module (build them with `make dist`, or pass --dist DIR)",
                    dir.dir.display(),
                    dir.chosen_by
                );
            }
            files
        } else {
            let path = resolve(module, dist)?;
            vec![registry::local_module(&path, registry)?]
        };
        for path in found {
            let name = if module == ALL {
                name_of(&path.display().to_string(), &path)
            } else {
                name_of(module, &path)
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

/// The name of the module MODULE `module` names, found at `path`: a
/// registry reference's repository, else the file's stem.
pub fn name_of(module: &str, path: &Path) -> String {
    if registry::is_registry(module) {
        registry_name(module)
    } else {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
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
/// `metadata.yml` in the project's `policies/<name>/` beside its
/// directory) is an error, as is a settings entry for no module.
pub fn load(
    runtime: &Runtime,
    modules: Vec<(String, PathBuf)>,
    mut settings: BTreeMap<String, Value>,
) -> anyhow::Result<Vec<Loaded>> {
    let mut loaded = Vec::new();
    for (name, path) in modules {
        let mut policy = Policy::load(runtime, &path, None)?;
        if policy.metadata.is_none() {
            // A module built but not annotated: its project's metadata.yml.
            let file = policies_dir_of(&path).join(&name).join("metadata.yml");
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
            .map_err(|e| settings_refused(&name, e))?;
        loaded.push(Loaded {
            name,
            path,
            policy,
            metadata,
            settings,
        });
    }
    if let Some(name) = settings.keys().next() {
        // `settings::by_module` checks the names first; this is its bug.
        bail!("settings for {name}, which is not among the modules loaded");
    }
    Ok(loaded)
}

/// The metadata of module `name` at `path` without compiling it: embedded,
/// or its project's `metadata.yml` (`policies/<name>/` beside its directory).
pub fn metadata_of(name: &str, path: &Path) -> anyhow::Result<Metadata> {
    let wasm = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    if let Some(metadata) =
        Metadata::from_module(&wasm).with_context(|| format!("{}", path.display()))?
    {
        return Ok(metadata);
    }
    let file = policies_dir_of(path).join(name).join("metadata.yml");
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

/// A suite's modules: names from the module directory (through the
/// scenarios' store), paths relative to the suite and registry references,
/// each compiled once.
pub struct SuiteModules<'a> {
    store: PolicyStore<'a>,
    by_path: HashMap<PathBuf, Arc<Policy>>,
    runtime: &'a Runtime,
    dist: &'a ModuleDir,
    registry: &'a RegistryArgs,
}

impl<'a> SuiteModules<'a> {
    /// The modules of suites run beside the scenarios `store` loads from
    /// `dist`.
    pub fn new(
        store: PolicyStore<'a>,
        runtime: &'a Runtime,
        dist: &'a ModuleDir,
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
        if !is_path(module) {
            in_dir(module, self.dist)?;
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
        names_in(&self.dist.dir)
    }
}

/// Why module `name` did not take its settings: a limit it ran into is named
/// as the limit, not as the settings (which were never judged).
fn settings_refused(name: &str, error: PolicyError) -> anyhow::Error {
    match &error {
        PolicyError::Call {
            error: limit @ (CallError::MemoryLimitExceeded(_) | CallError::DeadlineExceeded(_)),
            ..
        } => {
            let flag = match limit {
                CallError::MemoryLimitExceeded(_) => "--memory-limit-mib",
                _ => "--timeout-ms",
            };
            anyhow::anyhow!(
                "{name}: {limit} while validating its settings, before any evaluation: raise \
                 {flag}"
            )
        }
        _ => anyhow::Error::new(error).context(format!("--settings {name}")),
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
