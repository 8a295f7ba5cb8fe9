//! Artifact Hub package files for a policy, as `kwctl scaffold artifacthub`
//! writes them (kubewarden-controller `crates/policy-evaluator/src/policy_artifacthub.rs`,
//! `ArtifactHubPkg::from_metadata`; `crates/kwctl/src/scaffold/artifacthub.rs`),
//! with the `kubewarden/questions-ui` annotation built from the policy's
//! settings instead of a hand-written `questions-ui.yml`.
//!
//! The output is deterministic: `createdAt` is the release date the
//! metadata carries (`org.opencontainers.image.created`), not the time of
//! generation, so a committed file can be compared with a fresh one.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::metadata::{Metadata, MetadataError, annotation};
pub use crate::rfc3339::is_rfc3339;

/// The annotation holding the release date (RFC 3339) that becomes
/// `createdAt` (OCI image-spec `annotations.md`: "date and time on which
/// the image was built").
pub const CREATED_ANNOTATION: &str = annotation::CREATED;

/// Why a package file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactHubError {
    /// The metadata lacks or misforms something the package needs.
    #[error(transparent)]
    Metadata(#[from] MetadataError),
    /// The settings and the README's settings table disagree, or the
    /// release date is missing; the text names the fix.
    #[error("{0}")]
    Invalid(String),
    /// Serialising the package failed.
    #[error("cannot write the package as YAML")]
    Yaml(#[source] serde_yaml_ng::Error),
}

/// One setting of a policy, for `kubewarden/questions-ui`.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    /// The settings key, e.g. `allowLegacy`.
    pub name: String,
    /// Its default value.
    pub default: Value,
    /// What it does (the README's settings table, markdown stripped).
    pub description: String,
    /// The allowed values, when the README lists them (`a` | `b`).
    pub options: Vec<String>,
}

/// A row of a README `## Settings` table: `| `name` | type | default | effect |`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingRow {
    /// The setting's name (without backticks).
    pub name: String,
    /// The type column (empty for tables without one).
    pub kind: String,
    /// The last column: what the setting does.
    pub description: String,
}

/// The rows of the first table under the README's `## Settings` heading;
/// a row whose name is `—` or `-` (no settings) is skipped.
pub fn settings_table(readme: &str) -> Vec<SettingRow> {
    let mut rows = Vec::new();
    let mut in_section = false;
    let mut header: Option<Vec<String>> = None;
    for line in readme.lines() {
        if line.starts_with("## ") {
            if in_section {
                break;
            }
            in_section = line
                .trim_start_matches('#')
                .trim()
                .eq_ignore_ascii_case("settings");
            continue;
        }
        let line = line.trim();
        if !in_section {
            continue;
        }
        if !line.starts_with('|') {
            if header.is_some() {
                break; // the table ended
            }
            continue;
        }
        let cells = table_cells(line);
        if cells
            .iter()
            .all(|c| c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')))
        {
            continue; // the |---| separator
        }
        let Some(columns) = &header else {
            header = Some(cells.iter().map(|c| c.to_lowercase()).collect());
            continue;
        };
        let name = cells
            .first()
            .map(|c| c.trim_matches('`').to_string())
            .unwrap_or_default();
        if name.is_empty() || name == "—" || name == "-" {
            continue;
        }
        let kind = columns
            .iter()
            .position(|c| c == "type")
            .and_then(|i| cells.get(i))
            .cloned()
            .unwrap_or_default();
        let description = cells.last().map(|c| plain(c)).unwrap_or_default();
        rows.push(SettingRow {
            name,
            kind,
            description,
        });
    }
    rows
}

/// The cells of a markdown table row; `\|` inside a cell is kept.
fn table_cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    let mut cells = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                chars.next();
                if let Some(cell) = cells.last_mut() {
                    cell.push('|');
                }
            }
            '|' => cells.push(String::new()),
            c => {
                if let Some(cell) = cells.last_mut() {
                    cell.push(c);
                }
            }
        }
    }
    cells.into_iter().map(|c| c.trim().to_string()).collect()
}

/// Markdown cell text as plain text (no backticks or emphasis).
fn plain(cell: &str) -> String {
    cell.replace('`', "").replace("**", "")
}

/// The settings of a policy: every key of `defaults` (the settings a policy
/// runs with when given none), described by its README row. Both must name
/// the same settings.
pub fn settings(
    defaults: &Value,
    rows: &[SettingRow],
    readme_name: &str,
) -> Result<Vec<Setting>, ArtifactHubError> {
    let empty = serde_json::Map::new();
    let defaults = match defaults {
        Value::Object(map) => map,
        Value::Null => &empty,
        other => {
            return Err(ArtifactHubError::Invalid(format!(
                "the default settings are {other}, not an object; the rule's Settings must serialise as a mapping"
            )));
        }
    };
    for row in rows {
        if !defaults.contains_key(&row.name) {
            return Err(ArtifactHubError::Invalid(format!(
                "{readme_name}: the Settings table lists `{}`, which the policy's Settings do not have; remove the row or add the setting",
                row.name
            )));
        }
    }
    defaults
        .iter()
        .map(|(name, default)| {
            let row = rows.iter().find(|r| &r.name == name).ok_or_else(|| {
                ArtifactHubError::Invalid(format!(
                    "{readme_name}: setting `{name}` has no row in the ## Settings table; add | `{name}` | type | default | effect |"
                ))
            })?;
            let options = if default.is_string() && row.kind.contains('|') {
                row.kind.split('|').map(|o| o.trim().trim_matches('`').to_string()).collect()
            } else {
                Vec::new()
            };
            Ok(Setting {
                name: name.clone(),
                default: default.clone(),
                description: row.description.clone(),
                options,
            })
        })
        .collect()
}

/// One Rancher UI question (the format of Kubewarden's `questions-ui.yml`,
/// e.g. kubewarden/policies `policies/probes-policy/questions-ui.yml`).
#[derive(Serialize)]
struct Question {
    default: Value,
    description: String,
    group: &'static str,
    label: String,
    required: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    hide_input: bool,
    #[serde(rename = "type")]
    kind: &'static str,
    variable: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    options: Vec<String>,
}

#[derive(Serialize)]
struct Questions {
    questions: Vec<Question>,
}

/// The `kubewarden/questions-ui` document: the policy's description, then
/// one question per setting.
pub fn questions_ui(description: &str, settings: &[Setting]) -> Result<String, ArtifactHubError> {
    let mut questions = vec![Question {
        default: Value::Null,
        description: one_line(description),
        group: "Settings",
        label: "Description".into(),
        required: false,
        hide_input: true,
        kind: "string",
        variable: "description".into(),
        options: Vec::new(),
    }];
    for s in settings {
        let kind = match &s.default {
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_i64() || n.is_u64() => "int",
            Value::Number(_) => "float",
            Value::String(_) if !s.options.is_empty() => "enum",
            Value::Array(_) => "array[",
            Value::Object(_) => "map[",
            Value::String(_) | Value::Null => "string",
        };
        questions.push(Question {
            default: s.default.clone(),
            description: one_line(&s.description),
            group: "Settings",
            label: label(&s.name),
            required: false,
            hide_input: false,
            kind,
            variable: s.name.clone(),
            options: s.options.clone(),
        });
    }
    serde_yaml_ng::to_string(&Questions { questions }).map_err(ArtifactHubError::Yaml)
}

/// `allowLegacy` → `Allow legacy`.
fn label(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if i == 0 {
            out.extend(c.to_uppercase());
        } else if c.is_uppercase() {
            out.push(' ');
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `artifacthub-pkg.yml`, field for field as kwctl's `ArtifactHubPkg`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Package {
    version: String,
    name: String,
    display_name: String,
    created_at: String,
    description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    license: Option<String>,
    #[serde(rename = "homeURL", skip_serializing_if = "Option::is_none")]
    home_url: Option<String>,
    containers_images: Vec<ContainerImage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    keywords: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    links: Option<Vec<Link>>,
    install: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    maintainers: Option<Vec<Maintainer>>,
    provider: Provider,
    recommendations: Vec<Recommendation>,
    annotations: BTreeMap<String, String>,
}

#[derive(Serialize)]
struct ContainerImage {
    name: &'static str,
    image: String,
}

#[derive(Serialize)]
struct Link {
    name: &'static str,
    url: String,
}

#[derive(Serialize)]
struct Maintainer {
    name: String,
    email: String,
}

#[derive(Serialize)]
struct Provider {
    name: &'static str,
}

#[derive(Serialize)]
struct Recommendation {
    url: &'static str,
}

/// The header of every generated package file.
pub const HEADER: &str = "\
# Kubewarden Artifacthub Package config, generated from the policy's
# metadata.yml and README.md by `olm-guard scaffold artifacthub` (the fields
# `kwctl scaffold artifacthub` writes, plus kubewarden/questions-ui built from
# the policy's settings). Do not edit: change metadata.yml or README.md and
# regenerate.
";

/// `artifacthub-pkg.yml` for `metadata` (which must pass
/// [`Metadata::check_publishable`]), with `questions_ui` as the
/// `kubewarden/questions-ui` annotation and `created_at` (RFC 3339) as
/// `createdAt`.
pub fn package_yaml(
    metadata: &Metadata,
    created_at: &str,
    questions_ui: &str,
) -> Result<String, ArtifactHubError> {
    metadata.check_publishable()?;
    if !is_rfc3339(created_at) {
        return Err(ArtifactHubError::Invalid(format!(
            "createdAt {created_at:?} is not an RFC 3339 date; write e.g. 2026-11-23T00:00:00Z"
        )));
    }
    let get = |key: &str| metadata.annotations.get(key).map(|v| v.trim().to_string());
    let required = |key: &str| {
        get(key).ok_or_else(|| {
            ArtifactHubError::Metadata(MetadataError::Invalid(format!(
                "annotations.{key:?}: missing"
            )))
        })
    };
    let version = required(annotation::VERSION)?;
    let oci = required(annotation::OCI_URL)?;
    let image = format!("{oci}:v{version}");
    let links = get(annotation::SOURCE).map(|source| {
        let mut links = Vec::new();
        // kwctl links the release asset when the source is on GitHub.
        if url::Url::parse(&source).is_ok_and(|u| u.host_str() == Some("github.com")) {
            let tag = get(annotation::RELEASE_TAG).unwrap_or_else(|| format!("v{version}"));
            links.push(Link {
                name: "policy",
                url: format!(
                    "{}/releases/download/{tag}/policy.wasm",
                    source.trim_end_matches('/')
                ),
            });
        }
        links.push(Link {
            name: "source",
            url: source,
        });
        links
    });
    let keywords =
        get(annotation::KEYWORDS).map(|k| k.split(',').map(|w| w.trim().to_string()).collect());
    let maintainers = get(annotation::AUTHOR).map(|a| {
        a.split(',')
            .map(|person| {
                let person = person.trim();
                match person.split_once('<') {
                    Some((name, email)) => Maintainer {
                        name: name.trim().to_string(),
                        email: email.trim_end_matches('>').trim().to_string(),
                    },
                    None => Maintainer {
                        name: String::new(),
                        email: person.to_string(),
                    },
                }
            })
            .collect()
    });
    let install = format!(
        "The policy can be obtained using [`kwctl`](https://github.com/kubewarden/kwctl):\n\
         ```console\n\
         kwctl pull {image}\n\
         ```\n\
         Then, generate the policy manifest and tune it to your liking. For example:\n\
         ```console\n\
         kwctl scaffold manifest -t ClusterAdmissionPolicy registry://{image}\n\
         ```\n"
    );
    let mut annotations = BTreeMap::new();
    annotations.insert(
        "kubewarden/mutation".to_string(),
        metadata.mutating.to_string(),
    );
    annotations.insert(
        "kubewarden/rules".to_string(),
        serde_yaml_ng::to_string(&metadata.rules).map_err(ArtifactHubError::Yaml)?,
    );
    if !metadata.context_aware_resources.is_empty() {
        annotations.insert(
            "kubewarden/contextAwareResources".to_string(),
            serde_yaml_ng::to_string(&metadata.context_aware_resources)
                .map_err(ArtifactHubError::Yaml)?,
        );
    }
    // Not written by kwctl: what a policies.yml must grant the module.
    if let Some(capabilities) = &metadata.host_capabilities {
        annotations.insert(
            "kubewarden/hostCapabilities".to_string(),
            serde_yaml_ng::to_string(capabilities).map_err(ArtifactHubError::Yaml)?,
        );
    }
    if let Some(resources) = get(annotation::RESOURCES) {
        annotations.insert("kubewarden/resources".to_string(), resources);
    }
    if let Some(hidden) = get(annotation::HIDDEN_UI) {
        annotations.insert("kubewarden/hidden-ui".to_string(), hidden);
    }
    annotations.insert(
        "kubewarden/questions-ui".to_string(),
        questions_ui.to_string(),
    );
    let package = Package {
        version: version.clone(),
        name: required(annotation::TITLE)?,
        display_name: required(annotation::DISPLAY_NAME)?,
        created_at: created_at.to_string(),
        description: one_line(&required(annotation::DESCRIPTION)?),
        license: get(annotation::LICENSE),
        home_url: get(annotation::URL),
        containers_images: vec![ContainerImage {
            name: "policy",
            image,
        }],
        keywords,
        links,
        install,
        maintainers,
        provider: Provider { name: "kubewarden" },
        recommendations: vec![Recommendation {
            url: "https://artifacthub.io/packages/helm/kubewarden/kubewarden-controller",
        }],
        annotations,
    };
    let body = serde_yaml_ng::to_string(&package).map_err(ArtifactHubError::Yaml)?;
    Ok(format!("{HEADER}{body}"))
}

/// `artifacthub-repo.yml`: the repository's owners (Artifact Hub's
/// `docs/metadata/artifacthub-repo.yml`), from the policies' authors.
pub fn repository_yaml(metadata: &[Metadata]) -> Result<String, ArtifactHubError> {
    #[derive(Serialize)]
    struct Repo {
        owners: Vec<Maintainer>,
    }
    let mut owners: BTreeMap<String, String> = BTreeMap::new();
    for m in metadata {
        for person in m
            .annotations
            .get(annotation::AUTHOR)
            .into_iter()
            .flat_map(|a| a.split(','))
        {
            if let Some((name, email)) = person.trim().split_once('<') {
                owners.insert(
                    email.trim_end_matches('>').trim().to_string(),
                    name.trim().to_string(),
                );
            }
        }
    }
    let owners = owners
        .into_iter()
        .map(|(email, name)| Maintainer { name, email })
        .collect();
    let body = serde_yaml_ng::to_string(&Repo { owners }).map_err(ArtifactHubError::Yaml)?;
    Ok(format!(
        "# Artifact Hub repository metadata (kind: Kubewarden policies), generated by\n\
         # `olm-guard scaffold artifacthub` from the policies' authors. Artifact Hub\n\
         # assigns a repositoryID when the repository is registered; add it here then.\n{body}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const README: &str = "# x\n\n## Settings\n\n| setting | type | default | effect |\n|---|---|---|---|\n| `mode` | `strict` \\| `covers` | `strict` | Which **check**. |\n| `allowFeeding` | list | `[]` | Names `x`. |\n\n## Next\n| a | b |\n";

    #[test]
    fn the_settings_table_is_read_with_escaped_pipes() {
        let rows = settings_table(README);
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert_eq!(rows[0].name, "mode");
        assert_eq!(rows[0].kind, "`strict` | `covers`");
        assert_eq!(rows[0].description, "Which check.");
        assert_eq!(rows[1].description, "Names x.");
    }

    #[test]
    fn settings_and_table_must_agree() {
        let rows = settings_table(README);
        let defaults = serde_json::json!({"mode": "strict", "allowFeeding": [], "extra": true});
        let err = settings(&defaults, &rows, "README.md")
            .unwrap_err()
            .to_string();
        assert!(err.contains("setting `extra` has no row"), "{err}");
        let defaults = serde_json::json!({"mode": "strict"});
        let err = settings(&defaults, &rows, "README.md")
            .unwrap_err()
            .to_string();
        assert!(err.contains("lists `allowFeeding`"), "{err}");
        let defaults = serde_json::json!({"mode": "strict", "allowFeeding": []});
        let s = settings(&defaults, &rows, "README.md").unwrap();
        assert_eq!(s[1].options, ["strict", "covers"]);
        let q = questions_ui("Does things.", &s).unwrap();
        assert!(q.contains("type: enum"), "{q}");
        assert!(q.contains("type: array["), "{q}");
        assert!(q.contains("label: Allow feeding"), "{q}");
    }

    #[test]
    fn rfc3339_dates() {
        for ok in [
            "2026-11-23T00:00:00Z",
            "2023-01-19T14:46:21+02:00",
            "2026-01-24T01:51:05.597707235Z",
        ] {
            assert!(is_rfc3339(ok), "{ok}");
        }
        for bad in [
            "2026-11-23",
            "2026-13-01T00:00:00Z",
            "2026-11-23T00:00:00",
            "2026-11-23 00:00:00Z",
            "2026-11-23T00:00:00.Z",
        ] {
            assert!(!is_rfc3339(bad), "{bad}");
        }
    }
}
