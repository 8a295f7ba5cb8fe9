//! Kubernetes RBAC, as the API server evaluates it, for policies and the host.
//!
//! One implementation serves three callers: the host answers `kubernetes/can_i`
//! with [`RbacStore::authorize`] over a snapshot, and the RBAC policies use
//! [`covers()`] and [`RbacStore::rules_for`] inside their modules. Keeping the
//! semantics in one place is what makes a local `can_i` answer agree with the
//! checks a policy performs itself.
//!
//! Upstream sources the modules follow are named in each module's doc.

// Input is untrusted JSON: rules and the code they call answer with a
// verdict, never a panic. Tests may unwrap.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

pub mod aggregation;
pub mod authorize;
pub mod cluster;
pub mod compact;
pub mod covers;
pub mod resolver;
pub mod types;

pub use covers::{Holder, breakdown, covers, full_authority};
pub use resolver::{Decision, RbacStore};
pub use types::*;

/// The group the API server's privileged-group authorizer allows everything,
/// and the `EscalationAllowed` bypass of RBAC's escalation checks.
pub const SYSTEM_MASTERS: &str = "system:masters";

/// `rbac.authorization.k8s.io`, the API group of every RBAC kind.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// `rbac.authorization.k8s.io/v1`, the version the RBAC kinds are listed in.
pub const RBAC_API_VERSION: &str = "rbac.authorization.k8s.io/v1";
