//! Host calls as a [`Cluster`], limited when the module is compiled to the
//! host capabilities it declares.
//!
//! `kwctl annotate` finds the capabilities a module can call by looking for
//! each operation's name (`list_resources_all`, `can_i`, ...) in the
//! module's data segments (kubewarden-controller
//! `crates/kwctl/src/wasm_scanner.rs`, `scan`), and warns when that differs
//! from the metadata's `hostCapabilities`. A rule reaches the host through
//! `&dyn Cluster`, whose vtable holds all four operations, so without a limit
//! every module would carry every operation's name. [`HostCluster`] takes the
//! declared set as a const parameter: an operation outside it answers a
//! refusal ([`undeclared`]) on a condition decided in a `const` block, so the
//! compiler drops the host call and the operation's name from the module
//! (`host/tests/metadata.rs` scans every built module). A const parameter
//! rather than cargo
//! features, because `scripts/build-wasm.sh` builds every module in one cargo
//! command, and cargo would give each module the union of their features.

use olm_guard_core::protocol::{
    CanIRequest, GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
    SubjectAccessReviewStatus,
};
use olm_guard_core::{Capability, Cluster, ContextError, ContextErrorKind};
use serde::Serialize;

/// A set of Kubernetes host capabilities, one bit each (a `u8`, so that it
/// can be a const generic parameter).
pub type Capabilities = u8;

/// The bit of `capability` in a [`Capabilities`] set.
const fn bit(capability: Capability) -> Capabilities {
    match capability {
        Capability::ListAll => 1,
        Capability::ListByNamespace => 2,
        Capability::Get => 4,
        Capability::CanI => 8,
    }
}

/// The set of `list`, evaluated when the module compiles
/// (`policy_module!`'s `host_capabilities`).
pub const fn capabilities(list: &[Capability]) -> Capabilities {
    let mut set = 0;
    let mut rest = list;
    while let [first, tail @ ..] = rest {
        set |= bit(*first);
        rest = tail;
    }
    set
}

/// Whether `set` holds `capability`.
pub const fn holds(set: Capabilities, capability: Capability) -> bool {
    set & bit(capability) != 0
}

/// The refusal of a lookup whose capability the module is built without:
/// `Forbidden`, as policy-server refuses a capability the metadata does not
/// grant (so the module fails closed either way), naming what the rule
/// wanted to look up and the fix.
pub fn undeclared(capability: Capability, target: String) -> ContextError {
    // The text does not spell the operation's name: that name in the data
    // segment is what a capability scan looks for.
    ContextError::new(
        ContextErrorKind::Forbidden,
        format!(
            "this module is built without the host capability to look up {target}; \
             add it to policy_module!'s host_capabilities and to metadata.yml's hostCapabilities"
        ),
    )
    .on(capability, target)
}

/// The cluster as the Kubewarden host exposes it (`kubernetes/*`
/// capabilities), limited to the capabilities in `DECLARED`.
pub struct HostCluster<const DECLARED: Capabilities>;

impl<const DECLARED: Capabilities> HostCluster<DECLARED> {
    /// One `kubernetes/<operation>` host call. Each caller first tests its
    /// capability against `DECLARED` in a `const` block, so that in a module
    /// built without it the call is dead code. `operation` is a literal at
    /// each call site (not `Capability::operation`, whose table would put
    /// every name into every module).
    fn call<T: Serialize>(
        &self,
        capability: Capability,
        operation: &'static str,
        target: String,
        request: &T,
    ) -> Result<Vec<u8>, ContextError> {
        let payload = serde_json::to_vec(request).map_err(|e| {
            ContextError::new(
                ContextErrorKind::InvalidRequest,
                format!("cannot encode the {operation} request: {e}"),
            )
            .on(capability, target.clone())
        })?;
        wapc_guest::host_call("kubewarden", "kubernetes", operation, &payload).map_err(|e| {
            ContextError::from_host(format!(
                "host capability kubernetes/{operation} failed: {e}"
            ))
            .on(capability, target)
        })
    }
}

impl<const DECLARED: Capabilities> Cluster for HostCluster<DECLARED> {
    fn list_all(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, ContextError> {
        let target = format!("{}/{}", request.api_version, request.kind);
        if !const { holds(DECLARED, Capability::ListAll) } {
            return Err(undeclared(Capability::ListAll, target));
        }
        self.call(Capability::ListAll, "list_resources_all", target, request)
    }

    fn list_by_namespace(
        &self,
        request: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, ContextError> {
        let target = format!(
            "{}/{} in namespace \"{}\"",
            request.api_version, request.kind, request.namespace
        );
        if !const { holds(DECLARED, Capability::ListByNamespace) } {
            return Err(undeclared(Capability::ListByNamespace, target));
        }
        self.call(
            Capability::ListByNamespace,
            "list_resources_by_namespace",
            target,
            request,
        )
    }

    fn get(&self, request: &GetResourceRequest) -> Result<Vec<u8>, ContextError> {
        let target = format!(
            "{}/{} \"{}\"",
            request.api_version, request.kind, request.name
        );
        if !const { holds(DECLARED, Capability::Get) } {
            return Err(undeclared(Capability::Get, target));
        }
        self.call(Capability::Get, "get_resource", target, request)
    }

    fn can_i(&self, request: &CanIRequest) -> Result<SubjectAccessReviewStatus, ContextError> {
        let attributes = &request.subject_access_review.resource_attributes;
        let target = format!("{} {}", attributes.verb, attributes.resource);
        if !const { holds(DECLARED, Capability::CanI) } {
            return Err(undeclared(Capability::CanI, target));
        }
        let bytes = self.call(Capability::CanI, "can_i", target.clone(), request)?;
        serde_json::from_slice(&bytes).map_err(|e| {
            ContextError::new(
                ContextErrorKind::Decode,
                format!("the host's can_i answer is not valid: {e}"),
            )
            .on(Capability::CanI, target)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Capability; 4] = [
        Capability::ListAll,
        Capability::ListByNamespace,
        Capability::Get,
        Capability::CanI,
    ];

    #[test]
    fn a_set_holds_exactly_what_it_was_made_of() {
        for (i, &capability) in ALL.iter().enumerate() {
            let alone = capabilities(&[capability]);
            for &other in &ALL {
                assert_eq!(holds(alone, other), other == capability, "{capability:?}");
            }
            let others: Vec<Capability> = ALL
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, &c)| c)
                .collect();
            assert!(!holds(capabilities(&others), capability), "{capability:?}");
        }
        assert_eq!(capabilities(&[]), 0);
        assert!(ALL.iter().all(|&c| holds(capabilities(&ALL), c)));
    }

    /// A cluster built without a capability answers its lookups with the
    /// refusal, without calling the host (natively there is no host to
    /// call: reaching it would not even link).
    #[test]
    fn a_cluster_without_a_capability_refuses_it_without_a_host_call() {
        use olm_guard_core::protocol::{ResourceAttributes, SubjectAccessReview};
        let cluster = HostCluster::<{ capabilities(&[]) }>;
        let list = ListAllResourcesRequest {
            api_version: "v1".into(),
            kind: "Namespace".into(),
            ..Default::default()
        };
        let by_namespace = ListResourcesByNamespaceRequest {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: "olm".into(),
            ..Default::default()
        };
        let get = GetResourceRequest {
            api_version: "v1".into(),
            kind: "Namespace".into(),
            name: "olm".into(),
            ..Default::default()
        };
        let can_i = CanIRequest {
            subject_access_review: SubjectAccessReview {
                groups: None,
                resource_attributes: ResourceAttributes {
                    verb: "escalate".into(),
                    resource: "clusterroles".into(),
                    ..Default::default()
                },
                user: "alice".into(),
            },
            disable_cache: false,
        };
        let errors = [
            (Capability::ListAll, cluster.list_all(&list).unwrap_err()),
            (
                Capability::ListByNamespace,
                cluster.list_by_namespace(&by_namespace).unwrap_err(),
            ),
            (Capability::Get, cluster.get(&get).unwrap_err()),
            (Capability::CanI, cluster.can_i(&can_i).unwrap_err()),
        ];
        for (capability, error) in errors {
            assert_eq!(error.kind, ContextErrorKind::Forbidden, "{capability:?}");
            assert_eq!(error.capability, Some(capability));
            assert!(error.message.contains("built without"), "{error}");
        }
    }

    /// The refusal of an undeclared lookup names what was looked up and
    /// the fix, is `Forbidden` like policy-server's, and does not spell the
    /// operation's name (a scan would find it in the module).
    #[test]
    fn an_undeclared_lookup_is_refused_naming_the_target_and_the_fix() {
        let error = undeclared(
            Capability::ListByNamespace,
            "rbac.authorization.k8s.io/v1/Role in namespace \"ns\"".into(),
        );
        assert_eq!(error.kind, ContextErrorKind::Forbidden);
        assert_eq!(error.capability, Some(Capability::ListByNamespace));
        let message = error.to_string();
        assert!(message.contains("Role in namespace \"ns\""), "{message}");
        assert!(message.contains("policy_module!"), "{message}");
        assert!(message.contains("hostCapabilities"), "{message}");
        for capability in ALL {
            assert!(!message.contains(capability.operation()), "{message}");
        }
    }
}
