//! scope-rbac: stops the oria operator from being used as a confused deputy.
//!
//! oria turns a ScopeTemplate into ClusterRoles and a ScopeInstance into
//! RoleBindings (or a ClusterRoleBinding) of those ClusterRoles, using its
//! own `escalate` and `bind` permissions. This policy makes sure the person
//! asking could have created those objects directly. It checks CREATE and
//! UPDATE of ScopeTemplates and ScopeInstances in `operators.coreos.com/v1alpha1`
//! and `operators.io.operator-framework/v1alpha1`; everything else passes.
//!
//! ScopeTemplate:
//! 1. Every `spec.clusterRoles[].generateName` is a valid ClusterRole name
//!    (non-empty, not `.` or `..`, no `/` or `%`): oria creates a ClusterRole
//!    with exactly that name.
//! 2. Every ServiceAccount in `spec.clusterRoles[].subjects` has a namespace.
//! 3. With `forbidClusterScopedResources: true`, no rule names a
//!    cluster-scoped resource (a built-in list, and `*`) or a non-resource URL.
//! 4. Members of `system:masters`, and users who may `escalate` clusterroles
//!    cluster-wide, may create any template; everyone else must already hold,
//!    cluster-wide, every rule of every entry. The message lists the entries
//!    and the missing rules.
//!
//! ScopeInstance:
//! 1. `spec.scopeTemplateName` is set and each `spec.namespaces[]` entry is a
//!    namespace name.
//! 2. The named ScopeTemplate exists in the instance's own API group, else the
//!    request is denied with `ScopeTemplateNotFound`; with
//!    `allowPendingTemplate: true` it is accepted with a warning instead.
//! 3. For each template entry and each target (each listed namespace, or the
//!    whole cluster when the list is empty), the user may `bind` that
//!    ClusterRole there, or already holds its rules there. Otherwise the
//!    request is denied, naming the entry and the target.
//!
//! Lookups that fail deny the request (the policy fails closed).

olm_guard_kubewarden::policy_module!(
    olm_guard_rules::scope_rbac::Settings,
    olm_guard_rules::scope_rbac::validate
);
