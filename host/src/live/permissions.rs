//! The RBAC a command needs on a live cluster, asked of the server before
//! the command starts (SelfSubjectAccessReviews), and the one line that
//! names what is missing and the ClusterRole of `deploy/audit-rbac.yaml`
//! that grants it.

use super::{Kind, Session};
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
