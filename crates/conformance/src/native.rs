//! What the native policies are held to: the module's answer reduced to
//! what a native policy can say ([`module_answer`]), the API server's words
//! without its prefixes ([`denial_text`], [`warning_text`]), and the
//! authorizer of a native policy's evaluation in Kubernetes' own admission
//! code (`olm_guard_kube_harness::authorizer`), answered from a scenario's
//! snapshot as the API server's RBAC authorizer answers them on that
//! cluster ([`SnapshotAuthorizer`]).

use std::sync::Arc;

use olm_guard_evaluator::{Policy, PolicyError};
use serde_json::Value;

use olm_guard_core::protocol::ResourceAttributes;
use olm_guard_core::{ClusterExt, UserInfo};
use olm_guard_kube_harness::AuthorizerAnswer;
use olm_guard_snapshot::Snapshot;

/// A snapshot as the API server's authorizer.
pub struct SnapshotAuthorizer(pub Arc<Snapshot>);

impl SnapshotAuthorizer {
    /// Whether the user of `check` may do what it asks: a resource check
    /// through the snapshot's SubjectAccessReview answer, so that a
    /// scenario's injected lookup failures reach the policy as authorizer
    /// errors (`Err`, the error's text); a non-resource check (a `path`)
    /// through olm-guard's RBAC engine.
    pub fn answer(&self, check: &AuthorizerAnswer) -> Result<bool, String> {
        let user = UserInfo {
            username: check.user.clone(),
            groups: check.groups.clone(),
            ..UserInfo::default()
        };
        if !check.path.is_empty() {
            return Ok(self
                .0
                .rbac()
                .authorize_non_resource(&user, &check.verb, &check.path)
                .allowed);
        }
        let given = |text: &str| Some(text.to_string()).filter(|t| !t.is_empty());
        let attributes = ResourceAttributes {
            group: Some(check.api_group.clone()),
            resource: check.resource.clone(),
            subresource: given(&check.subresource),
            namespace: given(&check.namespace),
            name: given(&check.name),
            verb: check.verb.clone(),
            // Kubernetes' CEL authorizer library asks for every version
            // (k8s.io/apiserver `pkg/cel/library/authz.go`,
            // `resourceCheckCheck`).
            version: Some("*".into()),
        };
        self.0
            .authorized(&user, attributes)
            .map_err(|e| e.to_string())
    }
}

/// A module's answer, reduced to what a native policy can say.
#[derive(Debug, Clone, PartialEq)]
pub enum ModuleAnswer {
    /// `validate_settings` refused the settings.
    SettingsRefused,
    /// Allowed as it is, with these warnings.
    Allowed(Vec<String>),
    /// Allowed with a patch: the object as the patch leaves it.
    Mutated {
        /// The patched object.
        object: Value,
    },
    /// Denied, with this message.
    Denied(String),
}

/// The module's answer to `request` with `settings` on `cluster`.
pub fn module_answer(
    policy: &Policy,
    request: &Value,
    settings: &Value,
    cluster: Arc<Snapshot>,
) -> anyhow::Result<ModuleAnswer> {
    match policy.validate_settings(settings) {
        Ok(()) => {}
        Err(PolicyError::InvalidSettings(_)) => return Ok(ModuleAnswer::SettingsRefused),
        Err(e) => anyhow::bail!("validate_settings: {e}"),
    }
    let response = policy.validate(request, settings, cluster)?.response;
    Ok(if !response.allowed {
        ModuleAnswer::Denied(response.status.and_then(|s| s.message).unwrap_or_default())
    } else if response.patch.is_some() {
        let object = request.get("object").cloned().unwrap_or(Value::Null);
        let patched = crate::apply_patch(response.patch.as_deref(), &object)?;
        ModuleAnswer::Mutated {
            object: patched.unwrap_or(object),
        }
    } else {
        ModuleAnswer::Allowed(response.warnings.unwrap_or_default())
    })
}

/// A native warning without the API server's prefix
/// ("Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': ").
pub fn warning_text(warning: &str) -> &str {
    warning
        .split_once("': ")
        .map(|(_, text)| text)
        .unwrap_or(warning)
}

/// A native denial without the API server's prefix (`<resource> "<name>"
/// is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied
/// request: `).
pub fn denial_text(message: &str) -> &str {
    message
        .split_once("denied request: ")
        .map(|(_, text)| text)
        .unwrap_or(message)
}
