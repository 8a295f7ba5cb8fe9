//! A live cluster for `run`, `audit` and `snapshot`: `--kubeconfig`,
//! `--context`, `--request-timeout` and `--chunk-size` as kubectl takes
//! them, the connection ([`Session`]), the host calls it answers
//! ([`LiveContext`]), and the kinds a set of modules judges and reads
//! ([`kinds_judged`], [`kinds_read`]).
//!
//! Live-cluster support is the `live` cargo feature (on by default). A
//! build without it (`make examples`) keeps every flag and refuses them
//! with one line that says how to build it in.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde_json::Value;

use olm_guard_evaluator::ClusterContext;
use olm_guard_runtime::Metadata;
use olm_guard_snapshot::Snapshot;

/// Which cluster to read, as kubectl chooses it.
#[derive(Args, Clone, Debug, Default)]
pub struct LiveArgs {
    /// The kubeconfig of the cluster to read, as kubectl's --kubeconfig;
    /// without it, the files of KUBECONFIG, else ~/.kube/config.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current-context).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// How long one request to the API server may take: 30s, 2m, 500ms;
    /// 0 for no limit.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub request_timeout: Duration,
    /// Objects per page when listing the cluster, as kubectl's
    /// --chunk-size.
    #[arg(long, value_name = "N", default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..))]
    pub chunk_size: u32,
}

/// `30s`, `2m`, `1h`, `500ms`, a bare number of seconds; `0`: no limit.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration: write 30s, 2m, 1h or 500ms"))?;
    let seconds = match unit {
        "" | "s" => number,
        "ms" => number / 1000.0,
        "m" => number * 60.0,
        "h" => number * 3600.0,
        _ => {
            return Err(format!(
                "{text:?}: unknown unit {unit:?}; use ms, s, m or h"
            ));
        }
    };
    if seconds == 0.0 {
        // kubectl's 0: no limit; ten years stands in for it.
        return Ok(Duration::from_secs(10 * 365 * 24 * 3600));
    }
    Ok(Duration::from_secs_f64(seconds))
}

impl LiveArgs {
    /// Whether a live cluster was asked for (`--kubeconfig` or `--context`).
    pub fn given(&self) -> bool {
        self.kubeconfig.is_some() || self.context.is_some()
    }

    /// Whether a kubeconfig names a cluster, as kubectl finds one:
    /// `--kubeconfig` or `--context`, else `KUBECONFIG` set, else
    /// `~/.kube/config` present.
    pub fn available(&self) -> bool {
        self.given()
            || kubeconfig_variable().is_some()
            || home_kubeconfig().is_some_and(|p| p.is_file())
    }

    /// The kubeconfig files that will be read, checked before connecting:
    /// each `KUBECONFIG` file exists, and a file given is a kubeconfig, so
    /// that a wrong one is named with the fix instead of an OS error or a
    /// missing current-context.
    #[cfg(feature = "live")]
    fn check_kubeconfig(&self) -> anyhow::Result<()> {
        if let Some(path) = &self.kubeconfig {
            return check_kubeconfig_file(&path.display().to_string(), path, "--kubeconfig");
        }
        let Some(value) = kubeconfig_variable() else {
            return match home_kubeconfig().filter(|path| path.is_file()) {
                Some(path) => check_kubeconfig_file("~/.kube/config", &path, "~/.kube/config"),
                None => Ok(()),
            };
        };
        for path in std::env::split_paths(&value).filter(|p| !p.as_os_str().is_empty()) {
            let shown = format!("{} (from KUBECONFIG)", path.display());
            if !path.exists() {
                anyhow::bail!(
                    "kubeconfig {shown}: no such file; set KUBECONFIG to the kubeconfig kubectl \
                     uses, unset it to use ~/.kube/config, or pass --kubeconfig PATH"
                );
            }
            check_kubeconfig_file(&shown, &path, "KUBECONFIG")?;
        }
        Ok(())
    }
}

/// `KUBECONFIG`, when set and not empty.
fn kubeconfig_variable() -> Option<std::ffi::OsString> {
    std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty())
}

/// `~/.kube/config`, where kubectl looks without `KUBECONFIG`.
fn home_kubeconfig() -> Option<PathBuf> {
    std::env::home_dir().map(|home| home.join(".kube").join("config"))
}

/// Refuses a file that is no kubeconfig: a Kubernetes object of another
/// kind (a manifest given as --kubeconfig instead of --cluster), or YAML
/// with no cluster, context or user. Only `kind` is quoted, never the
/// file's contents (a kubeconfig holds credentials). A file that cannot be
/// read or parsed is left to the client, which says why.
#[cfg(feature = "live")]
fn check_kubeconfig_file(shown: &str, path: &std::path::Path, flag: &str) -> anyhow::Result<()> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(());
    };
    let Ok(document) = serde_yaml_ng::from_str::<Value>(&text) else {
        return Ok(());
    };
    let kind = document.get("kind").and_then(Value::as_str).unwrap_or("");
    let has = |key: &str| document.get(key).is_some_and(|v| !v.is_null());
    let what = if !kind.is_empty() && kind != "Config" {
        format!("a {kind}, not a kubeconfig (kind: Config)")
    } else if document.is_object() && !has("clusters") && !has("contexts") && !has("users") {
        "not a kubeconfig: it has no clusters, contexts or users".to_string()
    } else {
        return Ok(());
    };
    let hint = match flag {
        "--kubeconfig" => {
            "; pass the file kubectl uses as --kubeconfig, and objects to read as a cluster \
             with --cluster FILE"
        }
        "KUBECONFIG" => "; point KUBECONFIG at the file kubectl uses, or pass --kubeconfig PATH",
        _ => "; fix it, or pass --kubeconfig PATH",
    };
    anyhow::bail!("kubeconfig {shown}: {what}{hint}")
}

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

/// A permission a command needs from RBAC: a verb on a resource of a
/// group, in every namespace (or at the cluster scope), and what needs it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Permission {
    /// `list`, `create`.
    pub verb: String,
    /// The API group; `""` for the core group.
    pub group: String,
    /// The plural resource.
    pub resource: String,
    /// What needs it (`judged by og-intersection`), said when it is
    /// missing.
    pub needed_by: Vec<String>,
}

impl Permission {
    /// `list` on `kind`, for `why`.
    pub fn list(kind: &Kind, why: String) -> Permission {
        Permission {
            verb: "list".into(),
            group: kind
                .api_version
                .split_once('/')
                .map_or("", |(group, _)| group)
                .to_string(),
            resource: kind.plural.clone(),
            needed_by: vec![why],
        }
    }

    /// What writing an audit's reports of `kind` needs, for `why`: get,
    /// list, create, update and deletecollection
    /// (`olm_guard_live::Live::write_reports`).
    pub fn write_reports(kind: &Kind, why: &str) -> Vec<Permission> {
        ["get", "list", "create", "update", "deletecollection"]
            .into_iter()
            .map(|verb| Permission {
                verb: verb.into(),
                ..Permission::list(kind, why.to_string())
            })
            .collect()
    }

    /// `create subjectaccessreviews`, which `can_i` asks for, for `why`.
    pub fn create_subject_access_reviews(why: String) -> Permission {
        Permission {
            verb: "create".into(),
            group: "authorization.k8s.io".into(),
            resource: "subjectaccessreviews".into(),
            needed_by: vec![why],
        }
    }

    /// `list catalogsources.operators.coreos.com`, as `kubectl auth can-i`
    /// takes it.
    pub fn display(&self) -> String {
        if self.group.is_empty() {
            format!("{} {}", self.verb, self.resource)
        } else {
            format!("{} {}.{}", self.verb, self.resource, self.group)
        }
    }
}

/// `needs` with each permission once, what needs it merged.
pub fn merge(needs: Vec<Permission>) -> Vec<Permission> {
    let mut merged: Vec<Permission> = Vec::new();
    for need in needs {
        match merged
            .iter_mut()
            .find(|p| (&p.verb, &p.group, &p.resource) == (&need.verb, &need.group, &need.resource))
        {
            Some(known) => {
                for why in need.needed_by {
                    if !known.needed_by.contains(&why) {
                        known.needed_by.push(why);
                    }
                }
            }
            None => merged.push(need),
        }
    }
    merged.sort();
    merged
}

/// The permissions of `needs` the kubeconfig's user lacks, each asked of
/// the server at once (SelfSubjectAccessReviews); `None`, said on stderr,
/// when the server cannot be asked (it refuses SelfSubjectAccessReviews):
/// the command then meets any refusal as it comes.
pub fn missing(session: &Session, needs: &[Permission]) -> Option<Vec<Permission>> {
    let answers: Vec<anyhow::Result<bool>> = std::thread::scope(|scope| {
        let asked: Vec<_> = needs
            .iter()
            .map(|need| scope.spawn(move || session.can_i(&need.verb, &need.group, &need.resource)))
            .collect();
        asked
            .into_iter()
            .map(|answer| {
                answer
                    .join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("the check panicked")))
            })
            .collect()
    });
    let mut missing = Vec::new();
    for (need, answer) in needs.iter().zip(answers) {
        match answer {
            Ok(true) => {}
            Ok(false) => missing.push(need.clone()),
            Err(e) => {
                eprintln!(
                    "olm-guard: note: cannot check the permissions needed in advance ({}); any \
                     refusal is said as it comes",
                    crate::output::one_line(&format!("{e:#}"))
                );
                return None;
            }
        }
    }
    Some(missing)
}

/// The ClusterRoles `deploy/audit-rbac.yaml` ships, with what each grants:
/// everything `audit` and `snapshot` read (and `create
/// subjectaccessreviews`), and writing an audit's reports.
const AUDITOR: &str = "olm-guard-auditor";
const REPORT_WRITER: &str = "olm-guard-report-writer";

/// The roles of `deploy/audit-rbac.yaml` that grant `missing`.
fn roles_granting(missing: &[Permission]) -> Vec<&'static str> {
    let writes_reports = |p: &Permission| p.resource.ends_with("reports");
    let mut roles = Vec::new();
    if missing.iter().any(|p| !writes_reports(p)) {
        roles.push(AUDITOR);
    }
    if missing.iter().any(writes_reports) {
        roles.push(REPORT_WRITER);
    }
    roles
}

/// One line naming every permission in `missing` and what needs each, for
/// the user whom `session` connects as, and the ClusterRoles of
/// `deploy/audit-rbac.yaml` that grant them.
pub fn missing_line(session: &Session, missing: &[Permission]) -> String {
    let each = missing
        .iter()
        .map(|p| format!("{} ({})", p.display(), p.needed_by.join("; ")))
        .collect::<Vec<_>>()
        .join(", ");
    let roles = roles_granting(missing);
    let bind = roles
        .iter()
        .map(|role| {
            format!("kubectl create clusterrolebinding {role} --clusterrole {role} --user USER")
        })
        .collect::<Vec<_>>()
        .join(" and ");
    format!(
        "the kubeconfig's user may not do what this needs on the API server {} (asked with \
         SelfSubjectAccessReviews, as `kubectl auth can-i` asks): {each}; deploy/audit-rbac.yaml \
         (olm-guard's repository) grants {} in the ClusterRole{} {}: kubectl apply -f \
         deploy/audit-rbac.yaml, then {bind}; or use a user that has {}",
        session.server(),
        if missing.len() == 1 { "it" } else { "them" },
        if roles.len() == 1 { "" } else { "s" },
        roles.join(" and "),
        if missing.len() == 1 { "it" } else { "them" },
    )
}

pub use imp::{LiveContext, ReportTarget, Session};

/// What writing an audit's reports into the cluster did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReportsWritten {
    /// Reports that were not there.
    pub created: usize,
    /// Reports of the same name overwritten.
    pub updated: usize,
    /// Reports of an earlier audit deleted.
    pub deleted: usize,
}

#[cfg(feature = "live")]
impl From<olm_guard_live::ReportsWritten> for ReportsWritten {
    fn from(written: olm_guard_live::ReportsWritten) -> Self {
        ReportsWritten {
            created: written.created,
            updated: written.updated,
            deleted: written.deleted,
        }
    }
}

#[cfg(feature = "live")]
mod imp {
    use std::sync::Arc;

    use std::io::IsTerminal;

    use olm_guard_live::{Live, LiveCluster, Resource, Target};

    use super::*;

    /// A connection to the cluster the flags name.
    pub struct Session {
        live: Arc<Live>,
    }

    /// Where an audit's reports are written ([`Session::report_target`]).
    pub struct ReportTarget {
        /// The namespaced kind and the cluster kind.
        pub kinds: Vec<Kind>,
        resources: olm_guard_live::ReportKinds,
    }

    /// The host calls of an evaluation, answered by the cluster (and by a
    /// snapshot for what it does not serve).
    pub struct LiveContext {
        cluster: Arc<LiveCluster>,
    }

    impl LiveContext {
        /// The context an evaluation is answered from.
        pub fn cluster(&self) -> ClusterContext {
            self.cluster.clone()
        }

        /// The first failure to read the cluster, if a lookup met one
        /// (it failed closed): the command must not report as complete.
        pub fn failure(&self) -> Option<String> {
            self.cluster.access_failure().map(|e| e.to_string())
        }

        /// Takes the objects of `kind` just listed (every one, unselected)
        /// as the server's answer to the lookups that list them, as a synced
        /// reflector answers: they are not listed a second time.
        pub fn seed(&self, kind: &Kind, objects: &[Value]) -> anyhow::Result<()> {
            if let Some(resource) = self
                .cluster
                .live()
                .resource(&kind.api_version, &kind.kind)?
            {
                self.cluster.seed(&resource, objects.to_vec());
            }
            Ok(())
        }
    }

    /// Reports the progress of listing one kind: a spinner on a terminal,
    /// else one line once the kind is read.
    pub struct ListProgress {
        bar: Option<indicatif::ProgressBar>,
        qualified: String,
        server: String,
        started: std::time::Instant,
    }

    impl ListProgress {
        /// Listing `kind` from `server` begins.
        pub fn start(kind: &Kind, server: &str) -> ListProgress {
            let bar = std::io::stderr().is_terminal().then(|| {
                let bar = indicatif::ProgressBar::new_spinner();
                bar.set_message(format!("listing {}", kind.qualified));
                bar.enable_steady_tick(Duration::from_millis(120));
                bar
            });
            ListProgress {
                bar,
                qualified: kind.qualified.clone(),
                server: server.to_string(),
                started: std::time::Instant::now(),
            }
        }

        /// `read` objects so far.
        pub fn update(&self, read: usize) {
            if let Some(bar) = &self.bar {
                bar.set_message(format!(
                    "listing {}: {}",
                    self.qualified,
                    crate::output::count(read, "object")
                ));
            }
        }

        /// The kind is read: `count` objects.
        pub fn finish(self, count: usize) {
            if let Some(bar) = &self.bar {
                bar.finish_and_clear();
            }
            eprintln!(
                "olm-guard: read {} of {} from {} in {:.2?}",
                crate::output::count(count, "object"),
                self.qualified,
                self.server,
                self.started.elapsed()
            );
        }
    }

    fn kind_of(resource: Resource) -> Kind {
        Kind {
            qualified: resource.qualified(),
            api_version: resource.api_version,
            kind: resource.kind,
            plural: resource.plural,
            namespaced: resource.namespaced,
        }
    }

    impl LiveArgs {
        /// Connects (reading the kubeconfig and the server's `/version`).
        pub fn session(&self) -> anyhow::Result<Session> {
            self.check_kubeconfig()?;
            let target = Target {
                kubeconfig: self.kubeconfig.clone(),
                context: self.context.clone(),
                timeout: self.request_timeout,
            };
            Ok(Session {
                live: Arc::new(Live::connect(&target)?),
            })
        }
    }

    impl Session {
        /// The server's URL.
        pub fn server(&self) -> String {
            self.live.server().to_string()
        }

        /// The host calls answered by the cluster; `fallback` answers for
        /// the kinds it does not serve.
        pub fn context(&self, fallback: Option<Snapshot>) -> LiveContext {
            LiveContext {
                cluster: Arc::new(LiveCluster::new(self.live.clone(), fallback)),
            }
        }

        /// The served kind `kind` of `api_version`, if served.
        pub fn kind(&self, api_version: &str, kind: &str) -> anyhow::Result<Option<Kind>> {
            Ok(self.live.resource(api_version, kind)?.map(kind_of))
        }

        /// The served resource `plural` of `api_version`, if served.
        pub fn kind_by_plural(
            &self,
            api_version: &str,
            plural: &str,
        ) -> anyhow::Result<Option<Kind>> {
            Ok(self
                .live
                .resource_by_plural(api_version, plural)?
                .map(kind_of))
        }

        /// Where an audit's reports go: `api_version`'s `kinds` (the
        /// namespaced kind and the cluster kind), which the server must
        /// serve.
        pub fn report_target(
            &self,
            api_version: &str,
            kinds: (&str, &str),
        ) -> anyhow::Result<ReportTarget> {
            let served = |kind: &str| -> anyhow::Result<olm_guard_live::Resource> {
                self.live.resource(api_version, kind)?.ok_or_else(|| {
                    anyhow::anyhow!(
                        "the API server {} does not serve {api_version} {kind}, which \
                         --write-reports writes: install its CRD first (openreports/reports-api \
                         config/crd, or wg-policy-prototypes' for --report-kind policyreport)",
                        self.server()
                    )
                })
            };
            let namespaced = served(kinds.0)?;
            let cluster = served(kinds.1)?;
            Ok(ReportTarget {
                kinds: vec![kind_of(namespaced.clone()), kind_of(cluster.clone())],
                resources: olm_guard_live::ReportKinds {
                    namespaced,
                    cluster,
                },
            })
        }

        /// Writes an audit's `reports` to `target`, then deletes the reports
        /// labelled `owner` of runs other than `run` (both `key=value`).
        pub fn write_reports(
            &self,
            target: &ReportTarget,
            reports: &[Value],
            owner: &str,
            run: &str,
        ) -> anyhow::Result<ReportsWritten> {
            Ok(self
                .live
                .write_reports(&target.resources, reports, owner, run)?
                .into())
        }

        /// Whether the kubeconfig's user may `verb` `resource` of `group`
        /// in every namespace (a SelfSubjectAccessReview).
        pub fn can_i(&self, verb: &str, group: &str, resource: &str) -> anyhow::Result<bool> {
            Ok(self.live.can_i(verb, group, resource)?)
        }

        /// Every object of `kind`, page by page, with their types.
        pub fn list(&self, kind: &Kind, page_size: u32) -> anyhow::Result<Vec<Value>> {
            let resource = self
                .live
                .resource(&kind.api_version, &kind.kind)?
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "the API server {} no longer serves {}",
                        self.server(),
                        kind.qualified
                    )
                })?;
            let progress = ListProgress::start(kind, &self.server());
            let listed = self
                .live
                .list_pages(&resource, page_size, &mut |read| progress.update(read))?;
            progress.finish(listed.objects.len());
            Ok(listed.objects)
        }
    }
}

#[cfg(not(feature = "live"))]
mod imp {
    use std::sync::Arc;

    use super::*;

    /// What a build without the `live` feature says of its flags.
    fn without_live() -> anyhow::Error {
        anyhow::anyhow!(
            "this olm-guard was built without live-cluster support (cargo feature `live`, which \
             `make examples` leaves out); build it with `cargo build -p olm-guard-host`, or read \
             the cluster from files with --cluster"
        )
    }

    /// A connection, which this build never makes ([`LiveArgs::session`]
    /// refuses).
    pub struct Session {
        _never: (),
    }

    /// A live context, which this build never makes.
    pub struct LiveContext {
        _never: (),
    }

    /// A report target, which this build never makes.
    pub struct ReportTarget {
        /// None.
        pub kinds: Vec<Kind>,
    }

    impl LiveContext {
        /// No cluster: every lookup fails closed.
        pub fn cluster(&self) -> ClusterContext {
            Arc::new(olm_guard_core::NoCluster)
        }

        /// Nothing was read, so nothing failed.
        pub fn failure(&self) -> Option<String> {
            None
        }

        /// Nothing to keep.
        pub fn seed(&self, _: &Kind, _: &[Value]) -> anyhow::Result<()> {
            Ok(())
        }
    }

    impl LiveArgs {
        /// Refuses: this build has no live-cluster support.
        pub fn session(&self) -> anyhow::Result<Session> {
            Err(without_live())
        }
    }

    impl Session {
        /// No server.
        pub fn server(&self) -> String {
            String::new()
        }

        /// No live context.
        pub fn context(&self, _: Option<Snapshot>) -> LiveContext {
            LiveContext { _never: () }
        }

        /// Refuses, as [`LiveArgs::session`] does.
        pub fn kind(&self, _: &str, _: &str) -> anyhow::Result<Option<Kind>> {
            Err(without_live())
        }

        /// Refuses, as [`LiveArgs::session`] does.
        pub fn kind_by_plural(&self, _: &str, _: &str) -> anyhow::Result<Option<Kind>> {
            Err(without_live())
        }

        /// Refuses, as [`LiveArgs::session`] does.
        pub fn list(&self, _: &Kind, _: u32) -> anyhow::Result<Vec<Value>> {
            Err(without_live())
        }

        /// Refuses, as [`LiveArgs::session`] does.
        pub fn report_target(&self, _: &str, _: (&str, &str)) -> anyhow::Result<ReportTarget> {
            Err(without_live())
        }

        /// Refuses, as [`LiveArgs::session`] does.
        pub fn write_reports(
            &self,
            _: &ReportTarget,
            _: &[Value],
            _: &str,
            _: &str,
        ) -> anyhow::Result<ReportsWritten> {
            Err(without_live())
        }

        /// Refuses, as [`LiveArgs::session`] does.
        pub fn can_i(&self, _: &str, _: &str, _: &str) -> anyhow::Result<bool> {
            Err(without_live())
        }
    }
}
