//! Which kinds are cluster-scoped: the API server's discovery, as a table.
//!
//! The snapshot needs it to refuse a namespaced list of a cluster-scoped kind
//! as a real API server does. A built-in table covers the kinds the policies
//! here read; a cluster's own table comes from `kubectl api-resources -o wide`
//! (or without `-o wide`) or from a small YAML list.

use std::collections::HashMap;

use serde::Deserialize;

/// One resource of the discovery table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApiResource {
    /// `group/version` (`v1` for the core group); `None` for an entry that
    /// holds for the kind in every group. Only the group is compared: one
    /// resource has the same scope in every version, and discovery lists
    /// only the preferred one.
    #[serde(default)]
    pub api_version: Option<String>,
    /// The kind, e.g. `ClusterRole`.
    pub kind: String,
    /// Whether objects of the kind live in a namespace.
    pub namespaced: bool,
    /// The resource (plural) name, e.g. `clusterroles`; informational.
    #[serde(default)]
    pub name: String,
}

/// A table of API resources and their scope, looked up by group and kind,
/// with entries for a kind in any group as the fallback.
///
/// [`ApiResources::default`] is the built-in table; [`ApiResources::extend`]
/// layers a cluster's own table over it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiResources {
    by_group_kind: HashMap<(String, String), bool>,
    by_kind: HashMap<String, bool>,
}

/// Kinds Kubernetes serves cluster-scoped among those policies here ask for
/// (in any group, as before discovery tables could be given).
const BUILTIN_CLUSTER_SCOPED: &[&str] = &[
    "Namespace",
    "Node",
    "PersistentVolume",
    "StorageClass",
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "APIService",
    "PriorityClass",
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "ClusterObjectSet",
    "ClusterExtension",
    "ClusterCatalog",
    "ScopeTemplate",
    "ScopeInstance",
    "ClusterAdmissionPolicy",
    "PolicyServer",
];

/// A discovery table that cannot be read; `line` is 1-based (0 when the
/// problem is with the whole text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{reason}", if *.line == 0 { String::new() } else { format!("line {line}: ") })]
pub struct DiscoveryError {
    /// The 1-based line at fault, 0 for the whole text.
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

impl Default for ApiResources {
    /// The built-in table.
    fn default() -> Self {
        ApiResources::builtin()
    }
}

impl ApiResources {
    /// A table with no entry: every kind counts as namespaced.
    pub fn empty() -> ApiResources {
        ApiResources {
            by_group_kind: HashMap::new(),
            by_kind: HashMap::new(),
        }
    }

    /// The built-in table: the cluster-scoped kinds the policies here read,
    /// in any group.
    pub fn builtin() -> ApiResources {
        let mut table = ApiResources::empty();
        for kind in BUILTIN_CLUSTER_SCOPED {
            table.insert(ApiResource {
                api_version: None,
                kind: (*kind).to_string(),
                namespaced: false,
                name: String::new(),
            });
        }
        table
    }

    /// Adds an entry, replacing one for the same group and kind (or the same
    /// kind, for an entry without `apiVersion`).
    pub fn insert(&mut self, resource: ApiResource) {
        match resource.api_version {
            Some(api_version) => {
                self.by_group_kind
                    .insert((group_of(&api_version), resource.kind), resource.namespaced);
            }
            None => {
                self.by_kind.insert(resource.kind, resource.namespaced);
            }
        }
    }

    /// Layers `other` over this table: its entries win.
    pub fn extend(&mut self, other: ApiResources) {
        self.by_group_kind.extend(other.by_group_kind);
        self.by_kind.extend(other.by_kind);
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.by_group_kind.len() + self.by_kind.len()
    }

    /// Whether the table has no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `kind` in `api_version`'s group is namespaced, if the table
    /// knows: an entry for the group and kind first, then one for the kind
    /// in any group.
    pub fn namespaced(&self, api_version: &str, kind: &str) -> Option<bool> {
        self.by_group_kind
            .get(&(group_of(api_version), kind.to_string()))
            .or_else(|| self.by_kind.get(kind))
            .copied()
    }

    /// Whether the table says `kind` is cluster-scoped; an unknown kind is
    /// taken to be namespaced, as most kinds are.
    pub fn is_cluster_scoped(&self, api_version: &str, kind: &str) -> bool {
        self.namespaced(api_version, kind) == Some(false)
    }

    /// Either format, told apart by the `NAME` header of `kubectl`'s table.
    pub fn parse(text: &str) -> Result<ApiResources, DiscoveryError> {
        let first = text.lines().map(str::trim).find(|l| !l.is_empty());
        if first.is_some_and(|l| l.starts_with("NAME ")) {
            ApiResources::from_kubectl(text)
        } else {
            ApiResources::from_yaml(text)
        }
    }

    /// The output of `kubectl api-resources` (with or without `-o wide`):
    /// a header `NAME SHORTNAMES APIVERSION NAMESPACED KIND ...` and one row
    /// per resource. Cells may be empty (SHORTNAMES often is), so rows are cut
    /// at the header's column positions. Older kubectl printed `APIGROUP`
    /// (the group alone) instead of `APIVERSION`; both are read.
    pub fn from_kubectl(text: &str) -> Result<ApiResources, DiscoveryError> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty());
        let Some((header_index, header)) = lines.next() else {
            return Err(DiscoveryError {
                line: 0,
                reason: "no header line (NAME SHORTNAMES APIVERSION NAMESPACED KIND ...)"
                    .to_string(),
            });
        };
        let columns = header_columns(header);
        let find = |name: &str| columns.iter().position(|(n, _)| *n == name);
        let (Some(kind_col), Some(namespaced_col)) = (find("KIND"), find("NAMESPACED")) else {
            return Err(DiscoveryError {
                line: header_index + 1,
                reason: format!(
                    "expected the header of kubectl api-resources with KIND and NAMESPACED \
                     columns, found {:?}",
                    header.trim()
                ),
            });
        };
        let api_version_col = find("APIVERSION");
        let group_col = find("APIGROUP");
        let name_col = find("NAME");
        let mut table = ApiResources::empty();
        for (index, line) in lines {
            let cell = |column: usize| cell(line, &columns, column);
            let kind = cell(kind_col);
            let namespaced = match cell(namespaced_col) {
                "true" => true,
                "false" => false,
                other => {
                    return Err(DiscoveryError {
                        line: index + 1,
                        reason: format!(
                            "NAMESPACED is {other:?}, expected true or false (is the line cut \
                             at the header's columns?)"
                        ),
                    });
                }
            };
            if kind.is_empty() {
                return Err(DiscoveryError {
                    line: index + 1,
                    reason: "the KIND column is empty".to_string(),
                });
            }
            let api_version = match (api_version_col, group_col) {
                (Some(column), _) => Some(cell(column).to_string()),
                // A group alone: any version of it.
                (None, Some(column)) => Some(match cell(column) {
                    "" => "v1".to_string(),
                    group => format!("{group}/v1"),
                }),
                (None, None) => None,
            };
            table.insert(ApiResource {
                api_version,
                kind: kind.to_string(),
                namespaced,
                name: name_col.map(cell).unwrap_or_default().to_string(),
            });
        }
        Ok(table)
    }

    /// A YAML (or JSON) list of `{apiVersion, kind, namespaced}` entries,
    /// `apiVersion` optional (the kind in any group) and `name` allowed:
    ///
    /// ```yaml
    /// - {apiVersion: example.com/v1, kind: Widget, namespaced: false}
    /// - {kind: Gadget, namespaced: true}
    /// ```
    pub fn from_yaml(text: &str) -> Result<ApiResources, DiscoveryError> {
        let entries: Option<Vec<ApiResource>> =
            serde_yaml_ng::from_str(text).map_err(|e| DiscoveryError {
                line: e.location().map_or(0, |l| l.line()),
                reason: format!("expected a list of {{apiVersion, kind, namespaced}} entries: {e}"),
            })?;
        let mut table = ApiResources::empty();
        for entry in entries.unwrap_or_default() {
            table.insert(entry);
        }
        Ok(table)
    }
}

/// The group of an `apiVersion`: `""` for the core group's `v1`.
fn group_of(api_version: &str) -> String {
    api_version
        .rsplit_once('/')
        .map_or("", |(group, _)| group)
        .to_string()
}

/// Each header word with the byte offset it starts at.
fn header_columns(header: &str) -> Vec<(&str, usize)> {
    let mut columns = Vec::new();
    let mut start = None;
    for (offset, c) in header.char_indices().chain([(header.len(), ' ')]) {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(offset),
            (true, Some(s)) => {
                columns.push((header.get(s..offset).unwrap_or(""), s));
                start = None;
            }
            _ => {}
        }
    }
    columns
}

/// The trimmed text of `line` under header column `column`: from where the
/// column starts to where the next one does (the last runs to the end).
fn cell<'a>(line: &'a str, columns: &[(&str, usize)], column: usize) -> &'a str {
    let Some(&(_, start)) = columns.get(column) else {
        return "";
    };
    let end = columns
        .get(column + 1)
        .map_or(line.len(), |&(_, next)| next.min(line.len()));
    line.get(start.min(line.len())..end).unwrap_or("").trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `kubectl api-resources -o wide` of kubectl 1.31 against a kind cluster
    /// with OLM v1 and Kubewarden installed (an excerpt; the spacing is
    /// kubectl's own).
    const KUBECTL_WIDE: &str = "\
NAME                                SHORTNAMES   APIVERSION                          NAMESPACED   KIND                               VERBS                                                        CATEGORIES
bindings                                         v1                                  true         Binding                            create
componentstatuses                   cs           v1                                  false        ComponentStatus                    get,list
configmaps                          cm           v1                                  true         ConfigMap                          create,delete,deletecollection,get,list,patch,update,watch
namespaces                          ns           v1                                  false        Namespace                          create,delete,get,list,patch,update,watch
pods                                po           v1                                  true         Pod                                create,delete,deletecollection,get,list,patch,update,watch   all
customresourcedefinitions           crd,crds     apiextensions.k8s.io/v1             false        CustomResourceDefinition           create,delete,deletecollection,get,list,patch,update,watch   api-extensions
deployments                         deploy       apps/v1                             true         Deployment                         create,delete,deletecollection,get,list,patch,update,watch   all
clusterextensions                                olm.operatorframework.io/v1         false        ClusterExtension                   delete,deletecollection,get,list,patch,create,update,watch
clusterobjectsets                                olm.operatorframework.io/v1         false        ClusterObjectSet                   delete,deletecollection,get,list,patch,create,update,watch
clusterserviceversions              csv,csvs     operators.coreos.com/v1alpha1       true         ClusterServiceVersion              delete,deletecollection,get,list,patch,create,update,watch   olm
operatorgroups                      og           operators.coreos.com/v1             true         OperatorGroup                      delete,deletecollection,get,list,patch,create,update,watch   olm
admissionpolicies                   ap           policies.kubewarden.io/v1           true         AdmissionPolicy                    delete,deletecollection,get,list,patch,create,update,watch   kubewarden
clusteradmissionpolicies            cap          policies.kubewarden.io/v1           false        ClusterAdmissionPolicy             delete,deletecollection,get,list,patch,create,update,watch   kubewarden
clusterrolebindings                              rbac.authorization.k8s.io/v1        false        ClusterRoleBinding                 create,delete,deletecollection,get,list,patch,update,watch
clusterroles                                     rbac.authorization.k8s.io/v1        false        ClusterRole                        create,delete,deletecollection,get,list,patch,update,watch
rolebindings                                     rbac.authorization.k8s.io/v1        true         RoleBinding                        create,delete,deletecollection,get,list,patch,update,watch
roles                                            rbac.authorization.k8s.io/v1        true         Role                               create,delete,deletecollection,get,list,patch,update,watch
widgets                                          example.com/v1beta1                 false        Widget                             delete,deletecollection,get,list,patch,create,update,watch
";

    /// The older layout: `APIGROUP` (empty for the core group), verbs in
    /// brackets with spaces, and no CATEGORIES column.
    const KUBECTL_OLD_WIDE: &str = "\
NAME                              SHORTNAMES   APIGROUP                       NAMESPACED   KIND                             VERBS
bindings                                                                      true         Binding                          [create]
componentstatuses                 cs                                          false        ComponentStatus                  [get list]
namespaces                        ns                                          false        Namespace                        [create delete get list patch update watch]
nodes                             no                                          false        Node                             [create delete deletecollection get list patch proxy update watch]
deployments                       deploy       apps                           true         Deployment                       [create delete deletecollection get list patch update watch]
clusterroles                                   rbac.authorization.k8s.io      false        ClusterRole                      [bind create delete deletecollection escalate get list patch update watch]
roles                                          rbac.authorization.k8s.io      true         Role                             [bind create delete deletecollection escalate get list patch update watch]
";

    #[test]
    fn builtin_table_is_the_default() {
        let table = ApiResources::default();
        assert!(table.is_cluster_scoped("v1", "Namespace"));
        assert!(table.is_cluster_scoped("olm.operatorframework.io/v1", "ClusterObjectSet"));
        // Any group, as before tables could be given.
        assert!(table.is_cluster_scoped("example.com/v1", "ClusterRole"));
        assert!(!table.is_cluster_scoped("v1", "ConfigMap"));
        assert_eq!(table.namespaced("v1", "ConfigMap"), None);
    }

    #[test]
    fn kubectl_wide_output_by_column_positions() {
        let table = ApiResources::from_kubectl(KUBECTL_WIDE).unwrap();
        assert_eq!(table.len(), 18);
        assert_eq!(table.namespaced("v1", "ComponentStatus"), Some(false));
        assert_eq!(table.namespaced("v1", "Binding"), Some(true));
        assert_eq!(
            table.namespaced("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
            Some(false)
        );
        // Another version of the same group: same scope.
        assert_eq!(
            table.namespaced("operators.coreos.com/v1alpha2", "OperatorGroup"),
            Some(true)
        );
        assert!(table.is_cluster_scoped("example.com/v1", "Widget"));
        // The same kind in another group is another resource.
        assert_eq!(table.namespaced("other.io/v1", "Widget"), None);
        assert!(table.is_cluster_scoped("policies.kubewarden.io/v1", "ClusterAdmissionPolicy"));
        assert!(!table.is_cluster_scoped("policies.kubewarden.io/v1", "AdmissionPolicy"));
    }

    #[test]
    fn older_kubectl_output_with_api_group() {
        let table = ApiResources::parse(KUBECTL_OLD_WIDE).unwrap();
        assert_eq!(table.len(), 7);
        assert!(table.is_cluster_scoped("v1", "Node"));
        assert!(!table.is_cluster_scoped("apps/v1", "Deployment"));
        assert!(table.is_cluster_scoped("rbac.authorization.k8s.io/v1", "ClusterRole"));
        assert_eq!(
            table.namespaced("rbac.authorization.k8s.io/v1", "Role"),
            Some(true)
        );
    }

    #[test]
    fn kubectl_output_without_wide_and_with_blank_lines() {
        let text = "\n\
NAME         SHORTNAMES   APIVERSION   NAMESPACED   KIND
namespaces   ns           v1           false        Namespace

pods         po           v1           true         Pod
";
        let table = ApiResources::parse(text).unwrap();
        assert_eq!(table.len(), 2);
        assert!(table.is_cluster_scoped("v1", "Namespace"));
    }

    #[test]
    fn kubectl_errors_name_the_line() {
        let err = ApiResources::from_kubectl("NAME   KIND\npods   Pod\n").unwrap_err();
        assert_eq!(err.line, 1);
        assert!(err.to_string().contains("NAMESPACED"), "{err}");
        let text = "NAME   APIVERSION   NAMESPACED   KIND\npods   v1           maybe        Pod\n";
        let err = ApiResources::from_kubectl(text).unwrap_err();
        assert_eq!(err.line, 2);
        assert!(
            err.to_string()
                .starts_with("line 2: NAMESPACED is \"maybe\""),
            "{err}"
        );
        assert_eq!(ApiResources::from_kubectl("").unwrap_err().line, 0);
    }

    #[test]
    fn yaml_table() {
        let table = ApiResources::parse(
            "- {apiVersion: example.com/v1, kind: Widget, namespaced: false}\n\
             - {kind: Gadget, namespaced: false, name: gadgets}\n\
             - {apiVersion: v1, kind: Namespace, namespaced: true}\n",
        )
        .unwrap();
        assert_eq!(table.len(), 3);
        assert!(table.is_cluster_scoped("example.com/v2", "Widget"));
        assert!(table.is_cluster_scoped("anything.io/v1", "Gadget"));
        let mut layered = ApiResources::default();
        layered.extend(table);
        // The given table wins over the built-in one for its group...
        assert!(!layered.is_cluster_scoped("v1", "Namespace"));
        // ...and the built-in one still answers elsewhere.
        assert!(layered.is_cluster_scoped("example.com/v1", "Namespace"));
        assert!(ApiResources::from_yaml("").unwrap().is_empty());
        let err = ApiResources::from_yaml("- {kind: Widget, namespace: false}").unwrap_err();
        assert!(err.to_string().contains("namespace"), "{err}");
    }
}
