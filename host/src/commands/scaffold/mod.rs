//! `olm-guard scaffold`: files derived from a policy's metadata, as
//! `kwctl scaffold` writes them (kubewarden-controller `crates/kwctl/src/scaffold.rs`).
//! One variant per kind of file, each in its own part: `manifest` (also
//! `policies`), `artifacthub`, `vap`.

mod artifacthub;
mod manifest;
mod vap;

use std::process::ExitCode;

use clap::{Args, Subcommand};

#[derive(Args)]
pub struct ScaffoldArgs {
    #[command(subcommand)]
    pub command: ScaffoldCommand,
}

#[derive(Subcommand)]
pub enum ScaffoldCommand {
    /// A ClusterAdmissionPolicy or AdmissionPolicy for a module, as `kwctl
    /// scaffold manifest`.
    Manifest(manifest::ManifestArgs),
    /// A `policies.yml` for a bare policy-server, granting each module
    /// exactly the host capabilities and resources its metadata declares.
    Policies(manifest::PoliciesArgs),
    /// Artifact Hub package files (`artifacthub-pkg.yml`) from a policy's
    /// metadata.yml, README.md and settings, as `kwctl scaffold artifacthub`.
    Artifacthub(artifacthub::ArtifacthubArgs),
    /// ValidatingAdmissionPolicies, bindings and CRD patches enforcing the
    /// rules natively, for clusters without Kubewarden.
    Vap(vap::VapArgs),
}

pub fn scaffold(args: ScaffoldArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        ScaffoldCommand::Manifest(args) => manifest::manifest(args),
        ScaffoldCommand::Policies(args) => manifest::policies(args),
        ScaffoldCommand::Artifacthub(args) => artifacthub::artifacthub(args),
        ScaffoldCommand::Vap(args) => vap::vap(args),
    }
}
