//! # aggregation-escalation
//!
//! Guards ClusterRole aggregation, on CREATE and UPDATE of
//! `rbac.authorization.k8s.io/v1` ClusterRoles. An aggregated ClusterRole
//! (one with an `aggregationRule`) gets its rules written by the aggregation
//! controller from every ClusterRole its label selectors match, so both
//! setting the selectors and labelling a role so that a selector matches it
//! hand out permissions.
//!
//! 1. Always allowed: members of `system:masters`, users allowed the
//!    `escalate` verb on `clusterroles` (for that role's name on UPDATE; on
//!    CREATE only an unrestricted grant counts), and UPDATEs that change
//!    nothing but `metadata.ownerReferences`/`metadata.finalizers`.
//! 2. A ClusterRole whose new (or, on UPDATE, stored) version has an
//!    `aggregationRule` with at least one selector may only be written by a
//!    user whose cluster-wide rules include everything `cluster-admin` holds
//!    (`*` verbs on `*` resources in `*` groups, and `*` on non-resource URL
//!    `*`). This is the API server's own rule, checked at admission.
//! 3. With `mode: covers`, it is enough to hold the rules of every other
//!    ClusterRole the selectors match today; the denial lists the rules
//!    missing, in the API server's compact form.
//! 4. A ClusterRole whose labels another ClusterRole T aggregates (for
//!    example `rbac.authorization.k8s.io/aggregate-to-admin: "true"` feeds
//!    `admin`) may be created, or updated to newly match T or to add rules,
//!    only by a user allowed to `update` ClusterRole T (or holding
//!    `escalate`). Roles listed in `allowFeeding` may be fed by anyone.

olm_guard_kubewarden::policy_module!(
    olm_guard_rules::aggregation_escalation::Settings,
    olm_guard_rules::aggregation_escalation::validate
);
