//! One module per subcommand, each holding its clap arguments and its flow
//! (a folder where a command has parts). A command imports no other
//! command: what several share lives beside `commands/`, under its own name
//! (`modules`, `settings`, `inputs`, `cluster`, `live`, `output`,
//! `findings`, `registry`, `verification`, `limits`, `session`); `tests/layout.rs`
//! holds it so.

/// The kinds the six modules of olm-guard judge and read, by API group, as
/// the help of `audit` and `snapshot` lists the RBAC they need on a live
/// cluster (one list, so the two cannot drift apart). A literal, for
/// `concat!` in a `#[command]` attribute; defined before the commands so
/// that they see it. `tests/papercuts.rs` holds it to the modules'
/// embedded metadata (`rules`, `contextAwareResources`, `can_i`).
macro_rules! modules_kinds_help {
    () => {
        "  operators.coreos.com: catalogsources, clusterserviceversions, operatorgroups,
    scopeinstances, scopetemplates
  operators.io.operator-framework: scopeinstances, scopetemplates
  olm.operatorframework.io: clusterobjectsets
  rbac.authorization.k8s.io: clusterrolebindings, clusterroles, rolebindings, roles
  core: namespaces
"
    };
}

pub mod annotate;
pub mod audit;
pub mod bench;
pub mod inspect;
pub mod keygen;
pub mod playground;
pub mod pull;
pub mod push;
pub mod run;
pub mod scaffold;
pub mod sign;
pub mod snapshot;
pub mod test;
pub mod verify;
