//! The committed Artifact Hub files are what `olm-guard scaffold
//! artifacthub` writes now, and have the shape Artifact Hub accepts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use olm_guard_rules::registry::RULES;
use olm_guard_runtime::Metadata;

/// The command that regenerates `artifacthub/` (run from the repository root).
const REGENERATE: &str =
    "cargo run -p olm-guard-host -- scaffold artifacthub policies/*/ --dir artifacthub";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

fn policy_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("policies"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    dirs
}

fn scaffold(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_olm-guard"))
        .current_dir(root())
        .arg("scaffold")
        .arg("artifacthub")
        .args(args)
        .output()
        .unwrap()
}

fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().to_path_buf();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// Regenerates into a temp dir and returns it with the generated files.
fn generate() -> (tempfile::TempDir, BTreeMap<PathBuf, Vec<u8>>) {
    let dir = tempfile::tempdir().unwrap();
    let mut args: Vec<&std::ffi::OsStr> = Vec::new();
    let policies = policy_dirs();
    for p in &policies {
        args.push(p.as_os_str());
    }
    args.push("--dir".as_ref());
    args.push(dir.path().as_os_str());
    let out = scaffold(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let generated = files(dir.path());
    (dir, generated)
}

#[test]
fn committed_files_are_what_the_generator_writes_now() {
    let (_dir, generated) = generate();
    let committed_dir = root().join("artifacthub");
    let mut committed = files(&committed_dir);
    // The directory's own README is hand-written.
    committed.remove(Path::new("README.md"));
    for (path, bytes) in &generated {
        match committed.get(path) {
            Some(c) if c == bytes => {}
            Some(_) => panic!(
                "artifacthub/{} differs from what the generator writes now; regenerate: {REGENERATE}",
                path.display()
            ),
            None => panic!(
                "artifacthub/{} is missing; generate it: {REGENERATE}",
                path.display()
            ),
        }
    }
    for path in committed.keys() {
        assert!(
            generated.contains_key(path),
            "artifacthub/{} is not generated from any policy; remove it or regenerate: {REGENERATE}",
            path.display()
        );
    }
    // One package per policy, at its version.
    assert_eq!(
        generated
            .keys()
            .filter(|p| p.ends_with("artifacthub-pkg.yml"))
            .count(),
        policy_dirs().len()
    );
}

/// Artifact Hub's checks (artifacthub/hub `internal/pkg/metadata.go`,
/// `ValidatePackageMetadata`, and `docs/metadata/artifacthub-pkg.yml`), and
/// that the Kubewarden annotations say what the metadata says.
#[test]
fn packages_have_the_shape_artifact_hub_accepts() {
    let (dir, generated) = generate();
    for path in generated
        .keys()
        .filter(|p| p.ends_with("artifacthub-pkg.yml"))
    {
        let text = std::fs::read_to_string(dir.path().join(path)).unwrap();
        let pkg: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
        let field = |k: &str| {
            pkg[k]
                .as_str()
                .unwrap_or_else(|| panic!("{}: no {k}", path.display()))
        };
        let name = field("name");
        let policy = root().join("policies").join(name);
        let metadata =
            Metadata::from_yaml(&std::fs::read_to_string(policy.join("metadata.yml")).unwrap())
                .unwrap();
        let version = field("version");
        semver::Version::parse(version).unwrap();
        assert_eq!(
            path,
            &PathBuf::from(name)
                .join(version)
                .join("artifacthub-pkg.yml")
        );
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'),
            "{name}"
        );
        assert!(!field("displayName").is_empty());
        assert!(!field("description").is_empty());
        assert!(olm_guard_runtime::artifacthub::is_rfc3339(field(
            "createdAt"
        )));
        assert_eq!(field("license"), "Apache-2.0");
        let image = pkg["containersImages"][0]["image"].as_str().unwrap();
        assert_eq!(
            image,
            format!("ghcr.io/olm-guard/policies/{name}:v{version}")
        );
        assert_eq!(pkg["containersImages"][0]["name"], "policy");
        for link in pkg["links"].as_sequence().unwrap() {
            assert!(link["name"].as_str().is_some_and(|n| !n.is_empty()));
            url::Url::parse(link["url"].as_str().unwrap()).unwrap();
        }
        for m in pkg["maintainers"].as_sequence().unwrap() {
            assert!(m["name"].as_str().is_some_and(|n| !n.is_empty()));
            assert!(m["email"].as_str().is_some_and(|e| e.contains('@')));
        }
        assert!(field("install").contains(&format!("kwctl pull {image}")));
        assert_eq!(pkg["provider"]["name"], "kubewarden");
        let annotations = pkg["annotations"].as_mapping().unwrap();
        assert!(
            annotations.values().all(|v| v.is_string()),
            "annotations must be strings"
        );
        let ann = |k: &str| pkg["annotations"][k].as_str();
        assert_eq!(
            ann("kubewarden/mutation"),
            Some(metadata.mutating.to_string().as_str())
        );
        let rules: Vec<olm_guard_runtime::metadata::Rule> =
            serde_yaml_ng::from_str(ann("kubewarden/rules").unwrap()).unwrap();
        assert_eq!(rules, metadata.rules, "{name}");
        match ann("kubewarden/contextAwareResources") {
            Some(car) => {
                let car: Vec<olm_guard_runtime::metadata::ContextAwareResource> =
                    serde_yaml_ng::from_str(car).unwrap();
                assert_eq!(car, metadata.context_aware_resources, "{name}");
            }
            None => assert!(metadata.context_aware_resources.is_empty(), "{name}"),
        }
        assert_eq!(
            ann("kubewarden/resources"),
            metadata
                .annotations
                .get("io.artifacthub.resources")
                .map(String::as_str)
        );
        // Every setting of the rule is a question, with its default.
        let questions: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(ann("kubewarden/questions-ui").unwrap()).unwrap();
        let questions = questions["questions"].as_sequence().unwrap();
        let rule = RULES.iter().find(|r| r.name == name).unwrap();
        let defaults = rule.default_settings();
        let defaults = defaults.as_object().cloned().unwrap_or_default();
        assert_eq!(
            questions.len(),
            defaults.len() + 1,
            "{name}: description + one per setting"
        );
        for (setting, default) in &defaults {
            let q = questions
                .iter()
                .find(|q| q["variable"].as_str() == Some(setting))
                .unwrap_or_else(|| panic!("{name}: no question for {setting}"));
            let shown: serde_json::Value = serde_yaml_ng::from_value(q["default"].clone()).unwrap();
            assert_eq!(&shown, default, "{name}.{setting}");
            assert!(
                q["description"].as_str().is_some_and(|d| d.len() > 10),
                "{name}.{setting}"
            );
        }
    }
    let repo: serde_yaml_ng::Value =
        serde_yaml_ng::from_slice(&generated[Path::new("artifacthub-repo.yml")]).unwrap();
    assert_eq!(repo["owners"][0]["email"], "olm-guard@example.com");
}

#[test]
fn one_policy_goes_to_standard_output_or_a_file_and_the_version_must_match() {
    let policy = root().join("policies/og-intersection");
    let printed = scaffold(&[policy.as_os_str()]);
    assert!(
        printed.status.success(),
        "{}",
        String::from_utf8_lossy(&printed.stderr)
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pkg.yml");
    let written = scaffold(&[
        policy.as_os_str(),
        "--version".as_ref(),
        "0.1.0".as_ref(),
        "--output-file".as_ref(),
        file.as_os_str(),
    ]);
    assert!(
        written.status.success(),
        "{}",
        String::from_utf8_lossy(&written.stderr)
    );
    assert_eq!(std::fs::read(&file).unwrap(), printed.stdout);

    let wrong = scaffold(&[policy.as_os_str(), "--version".as_ref(), "0.2.0".as_ref()]);
    assert!(!wrong.status.success());
    let err = String::from_utf8_lossy(&wrong.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("--version 0.2.0 differs from io.kubewarden.policy.version 0.1.0"),
        "{err}"
    );
}

#[test]
fn a_setting_missing_from_the_readme_table_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("catalog-union");
    std::fs::create_dir(&policy).unwrap();
    let src = root().join("policies/catalog-union");
    std::fs::copy(src.join("metadata.yml"), policy.join("metadata.yml")).unwrap();
    let readme = std::fs::read_to_string(src.join("README.md")).unwrap();
    let readme: String = readme
        .lines()
        .filter(|l| !l.starts_with("| `warnLegacy`"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(policy.join("README.md"), readme).unwrap();
    let out = scaffold(&[policy.as_os_str()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("setting `warnLegacy` has no row in the ## Settings table"),
        "{err}"
    );
}
