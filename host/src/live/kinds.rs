//! The kinds a set of modules judges (their admission rules) and reads
//! (`contextAwareResources`), which of them the server serves, and reading
//! their objects into a snapshot.

use serde_json::Value;

use olm_guard_runtime::Metadata;
use olm_guard_snapshot::Snapshot;

use super::Session;
/// Whether a module reads the cluster: it may list or get kinds
/// (`contextAwareResources`) or call a `kubernetes/*` host capability
/// (every capability when its metadata lists none).
pub fn reads_cluster(metadata: &Metadata) -> bool {
    !metadata.context_aware_resources.is_empty()
        || metadata
            .host_capabilities
            .as_ref()
            .is_none_or(|capabilities| {
                capabilities
                    .iter()
                    .any(|c| c == "*" || c.starts_with("kubernetes/"))
            })
}

/// A served kind, as the commands need it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Kind {
    /// `group/version`, or `v1`.
    pub api_version: String,
    /// The kind.
    pub kind: String,
    /// `catalogsources.operators.coreos.com`.
    pub qualified: String,
    /// The plural resource name.
    pub plural: String,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
}

/// The discovery table of `kinds`, for a snapshot of their objects.
pub fn api_resources(kinds: &[Kind]) -> olm_guard_snapshot::ApiResources {
    let mut table = olm_guard_snapshot::ApiResources::empty();
    for kind in kinds {
        table.insert(olm_guard_snapshot::ApiResource {
            api_version: Some(kind.api_version.clone()),
            kind: kind.kind.clone(),
            namespaced: kind.namespaced,
            name: kind.plural.clone(),
        });
    }
    table
}

/// What the modules' admission rules cover for CREATE, as
/// (`group/version` or `v1`, plural resource): the kinds an audit judges.
/// Rules with a wildcard group, version or resource name no kind and are
/// returned apart, to be said.
pub fn kinds_judged(modules: &[&Metadata]) -> (Vec<(String, String)>, Vec<String>) {
    let mut kinds = Vec::new();
    let mut wildcards = Vec::new();
    for metadata in modules {
        for rule in &metadata.rules {
            if !rule.operations.iter().any(|o| o == "CREATE" || o == "*") {
                continue;
            }
            for group in &rule.api_groups {
                for version in &rule.api_versions {
                    for resource in &rule.resources {
                        if resource.contains('/') {
                            continue;
                        }
                        if [group, version, resource].iter().any(|part| *part == "*") {
                            wildcards.push(format!("{group}/{version}/{resource}"));
                            continue;
                        }
                        let api_version = if group.is_empty() {
                            version.clone()
                        } else {
                            format!("{group}/{version}")
                        };
                        kinds.push((api_version, resource.clone()));
                    }
                }
            }
        }
    }
    kinds.sort();
    kinds.dedup();
    wildcards.sort();
    wildcards.dedup();
    (kinds, wildcards)
}

/// The kinds the modules may read (`contextAwareResources`), as
/// (`apiVersion`, kind).
pub fn kinds_read(modules: &[&Metadata]) -> Vec<(String, String)> {
    let mut kinds: Vec<(String, String)> = modules
        .iter()
        .flat_map(|m| &m.context_aware_resources)
        .map(|r| (r.api_version.clone(), r.kind.clone()))
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

/// The RBAC kinds a snapshot answers `can_i` from.
pub const RBAC_KINDS: [(&str, &str); 4] = [
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
];

/// Whether a module may call `kubernetes/can_i` (every capability when its
/// metadata lists none).
pub fn calls_can_i(metadata: &Metadata) -> bool {
    metadata
        .host_capabilities
        .as_ref()
        .is_none_or(|capabilities| {
            capabilities
                .iter()
                .any(|c| c == "*" || c == "kubernetes/*" || c == "kubernetes/can_i")
        })
}

/// A kind named by modules: by kind (`contextAwareResources`) or by
/// resource (admission rules).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Wanted {
    /// `apiVersion`, kind.
    Kind(String, String),
    /// `apiVersion`, plural resource.
    Resource(String, String),
}

/// The kinds the server serves among `wanted` (each once), and what it does
/// not serve, named by group version and resource (`v1 namespaces;
/// operators.coreos.com/v1alpha1 scopeinstances, scopetemplates`); empty
/// when it serves them all.
pub fn resolve(session: &Session, wanted: &[Wanted]) -> anyhow::Result<(Vec<Kind>, String)> {
    let mut served: Vec<Kind> = Vec::new();
    let mut missing: std::collections::BTreeMap<&str, std::collections::BTreeSet<String>> =
        Default::default();
    for entry in wanted {
        let (found, api_version, name) = match entry {
            // Both named by resource, as the message names them.
            Wanted::Kind(api_version, kind) => (
                session.kind(api_version, kind)?,
                api_version,
                olm_guard_evaluator::input::guess_resource(kind),
            ),
            Wanted::Resource(api_version, plural) => (
                session.kind_by_plural(api_version, plural)?,
                api_version,
                plural.clone(),
            ),
        };
        match found {
            Some(kind) if !served.contains(&kind) => served.push(kind),
            Some(_) => {}
            None => {
                missing.entry(api_version).or_default().insert(name);
            }
        }
    }
    served.sort();
    let missing = missing
        .into_iter()
        .map(|(api_version, names)| {
            format!(
                "{api_version} {}",
                names.into_iter().collect::<Vec<_>>().join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    Ok((served, missing))
}

/// Every object of `kinds`, page by page, the kinds listed at once (one
/// thread each: the server and the decoding overlap); the first list that
/// fails fails the whole read. In the order of `kinds`.
pub fn read(
    session: &Session,
    kinds: &[Kind],
    page_size: u32,
) -> anyhow::Result<Vec<(Kind, Vec<Value>)>> {
    std::thread::scope(|scope| {
        let lists: Vec<_> = kinds
            .iter()
            .map(|kind| scope.spawn(move || session.list(kind, page_size)))
            .collect();
        kinds
            .iter()
            .zip(lists)
            .map(|(kind, list)| {
                let objects = list
                    .join()
                    .map_err(|_| anyhow::anyhow!("listing {} panicked", kind.qualified))??;
                Ok((kind.clone(), objects))
            })
            .collect()
    })
}

/// The objects of `files` (the `--cluster` snapshot) whose kinds the server
/// does not serve, with where each was read, for a cluster the files
/// complete; the others are counted on stderr, since the server's own
/// objects of those kinds win.
pub fn unserved_objects(
    session: &Session,
    files: &Snapshot,
) -> anyhow::Result<Vec<(olm_guard_snapshot::Location, Value)>> {
    let mut kept = Vec::new();
    let mut ignored = 0;
    for object in files.objects() {
        let meta = olm_guard_core::ObjectMeta::of(object);
        let object_ref = olm_guard_snapshot::ObjectRef {
            api_version: object["apiVersion"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            kind: object["kind"].as_str().unwrap_or_default().to_string(),
            namespace: meta.namespace,
            name: meta.name,
        };
        if session
            .kind(&object_ref.api_version, &object_ref.kind)?
            .is_some()
        {
            ignored += 1;
        } else {
            let at = files.location(&object_ref).cloned().unwrap_or_default();
            kept.push((at, object.clone()));
        }
    }
    if ignored > 0 {
        eprintln!(
            "olm-guard: note: {} of --cluster of kinds the API server {} serves: its own objects \
             of those kinds are used instead",
            crate::output::count(ignored, "object"),
            session.server()
        );
    }
    Ok(kept)
}

/// A snapshot of the `wanted` kinds the server serves (the ones it does not
/// said on stderr), completed by the objects of `files` of kinds it does
/// not serve: the cluster as several modules see it, read once.
pub fn snapshot_of(
    session: &Session,
    wanted: &[Wanted],
    page_size: u32,
    files: Option<&Snapshot>,
) -> anyhow::Result<Snapshot> {
    let (kinds, missing) = resolve(session, wanted)?;
    if !missing.is_empty() && files.is_none() {
        eprintln!(
            "olm-guard: note: the API server {} does not serve {missing}: none of them is seen \
             (give them with --cluster FILE)",
            session.server(),
        );
    }
    let at = olm_guard_snapshot::Location {
        source: session.server(),
        ..Default::default()
    };
    let mut located: Vec<(olm_guard_snapshot::Location, Value)> = read(session, &kinds, page_size)?
        .into_iter()
        .flat_map(|(_, objects)| objects)
        .map(|object| (at.clone(), object))
        .collect();
    let mut snapshot = Snapshot::new();
    if let Some(files) = files {
        snapshot.add_api_resources(files.api_resources().clone());
        located.extend(unserved_objects(session, files)?);
    }
    snapshot.add_api_resources(api_resources(&kinds));
    snapshot.add_located(located, olm_guard_snapshot::LoadOptions::STRICT)?;
    Ok(snapshot)
}
