//! Loading RBAC objects through the Kubewarden host capabilities, for rules
//! that evaluate RBAC themselves (Covers checks) instead of asking `can_i`.

use std::rc::Rc;

use olm_guard_core::protocol::{ListAllResourcesRequest, ListResourcesByNamespaceRequest};
use olm_guard_core::{Cluster, ClusterExt, ContextError};
use serde::de::DeserializeOwned;

use crate::{RBAC_API_VERSION, RbacStore};

/// The RBAC objects a rule needs for `namespace`: every ClusterRole and
/// ClusterRoleBinding (`list_resources_all`) and, when `namespace` is not
/// empty, its Roles and RoleBindings (`list_resources_by_namespace`), all as
/// `rbac.authorization.k8s.io/v1`.
///
/// A module that calls this must declare those kinds in its
/// `contextAwareResources` (the Role kinds only when it passes a namespace).
///
/// In a batch ([`Cluster::shared_answers`]) the store is built once per
/// namespace and shared by every evaluation of the batch.
pub fn load(cluster: &dyn Cluster, namespace: &str) -> Result<Rc<RbacStore>, ContextError> {
    let build = || build(cluster, namespace);
    match cluster.shared_answers() {
        Some(shared) => {
            shared.get_or_try_insert(format!("RBAC objects for \"{namespace}\""), build)
        }
        None => build().map(Rc::new),
    }
}

fn build(cluster: &dyn Cluster, namespace: &str) -> Result<RbacStore, ContextError> {
    let cluster_roles = list_all(cluster, "ClusterRole")?;
    let cluster_role_bindings = list_all(cluster, "ClusterRoleBinding")?;
    let (roles, role_bindings) = if namespace.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        (
            list_in(cluster, "Role", namespace)?,
            list_in(cluster, "RoleBinding", namespace)?,
        )
    };
    Ok(RbacStore::new(
        cluster_roles,
        roles,
        cluster_role_bindings,
        role_bindings,
    ))
}

fn list_all<T: DeserializeOwned>(
    cluster: &dyn Cluster,
    kind: &str,
) -> Result<Vec<T>, ContextError> {
    cluster
        .list_all_as(&ListAllResourcesRequest::new(RBAC_API_VERSION, kind))
        .map_err(|e| {
            let message = format!("listing {kind}s: {e}");
            e.with_message(message)
        })
}

fn list_in<T: DeserializeOwned>(
    cluster: &dyn Cluster,
    kind: &str,
    namespace: &str,
) -> Result<Vec<T>, ContextError> {
    cluster
        .list_by_namespace_as(&ListResourcesByNamespaceRequest::new(
            RBAC_API_VERSION,
            kind,
            namespace,
        ))
        .map_err(|e| {
            let message = format!("listing {kind}s in namespace \"{namespace}\": {e}");
            e.with_message(message)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use olm_guard_core::protocol::{CanIRequest, GetResourceRequest, SubjectAccessReviewStatus};
    use olm_guard_core::{ContextErrorKind, NoCluster, UserInfo};
    use serde_json::json;
    use std::cell::RefCell;

    /// Answers lists from fixed JSON and records what was asked, to check
    /// that `load` asks for exactly the kinds a module declares.
    struct Fake {
        asked: RefCell<Vec<String>>,
    }

    impl Cluster for Fake {
        fn list_all(&self, r: &ListAllResourcesRequest) -> Result<Vec<u8>, ContextError> {
            self.asked
                .borrow_mut()
                .push(format!("{} {}", r.api_version, r.kind));
            let items = match r.kind.as_str() {
                "ClusterRole" => json!([{"metadata": {"name": "reader"},
                    "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}]),
                "ClusterRoleBinding" => json!([{"metadata": {"name": "b"},
                    "subjects": [{"kind": "User", "name": "alice"}],
                    "roleRef": {"kind": "ClusterRole", "name": "reader"}}]),
                _ => {
                    return Err(ContextError::new(
                        ContextErrorKind::NotFound,
                        format!("unexpected {}", r.kind),
                    ));
                }
            };
            Ok(serde_json::to_vec(&json!({"items": items})).unwrap())
        }
        fn list_by_namespace(
            &self,
            r: &ListResourcesByNamespaceRequest,
        ) -> Result<Vec<u8>, ContextError> {
            self.asked
                .borrow_mut()
                .push(format!("{} {} in {}", r.api_version, r.kind, r.namespace));
            let items = match r.kind.as_str() {
                "Role" => json!([{"metadata": {"name": "cm", "namespace": r.namespace},
                    "rules": [{"verbs": ["update"], "apiGroups": [""], "resources": ["configmaps"]}]}]),
                "RoleBinding" => json!([{"metadata": {"name": "rb", "namespace": r.namespace},
                    "subjects": [{"kind": "User", "name": "alice"}],
                    "roleRef": {"kind": "Role", "name": "cm"}}]),
                _ => json!(null),
            };
            Ok(serde_json::to_vec(&json!({"items": items})).unwrap())
        }
        fn get(&self, _: &GetResourceRequest) -> Result<Vec<u8>, ContextError> {
            Err(ContextError::new(ContextErrorKind::Unavailable, "no get"))
        }
        fn can_i(&self, _: &CanIRequest) -> Result<SubjectAccessReviewStatus, ContextError> {
            Err(ContextError::new(ContextErrorKind::Unavailable, "no can_i"))
        }
    }

    fn alice() -> UserInfo {
        UserInfo {
            username: "alice".into(),
            ..UserInfo::default()
        }
    }

    #[test]
    fn cluster_wide_load_lists_cluster_kinds_only() {
        let fake = Fake {
            asked: RefCell::new(vec![]),
        };
        let store = load(&fake, "").unwrap();
        assert_eq!(
            *fake.asked.borrow(),
            vec![
                "rbac.authorization.k8s.io/v1 ClusterRole",
                "rbac.authorization.k8s.io/v1 ClusterRoleBinding"
            ]
        );
        assert_eq!(store.rules_for(&alice(), "").len(), 1);
    }

    #[test]
    fn namespaced_load_adds_roles_and_bindings() {
        let fake = Fake {
            asked: RefCell::new(vec![]),
        };
        let store = load(&fake, "team").unwrap();
        assert_eq!(fake.asked.borrow().len(), 4);
        assert_eq!(store.rules_for(&alice(), "team").len(), 2);
    }

    #[test]
    fn failures_name_the_lookup() {
        let err = load(&NoCluster, "").unwrap_err();
        assert!(err.message.starts_with("listing ClusterRoles: "), "{err}");
    }
}
