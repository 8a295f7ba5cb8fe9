//! `olm-guard scaffold`: files Kubewarden users need, written from a
//! module's embedded metadata, as `kwctl scaffold` does.

use std::process::ExitCode;

use clap::{Args, Subcommand};

use crate::scaffold_manifest;

#[derive(Args)]
pub struct ScaffoldArgs {
    #[command(subcommand)]
    pub what: ScaffoldCommand,
}

#[derive(Subcommand)]
pub enum ScaffoldCommand {
    /// A ClusterAdmissionPolicy or AdmissionPolicy for a module, as `kwctl
    /// scaffold manifest`.
    Manifest(scaffold_manifest::ManifestArgs),
    /// A `policies.yml` for a bare policy-server, granting each module
    /// exactly the host capabilities and resources its metadata declares.
    Policies(scaffold_manifest::PoliciesArgs),
}

pub fn scaffold(args: ScaffoldArgs) -> anyhow::Result<ExitCode> {
    match args.what {
        ScaffoldCommand::Manifest(args) => scaffold_manifest::manifest(args),
        ScaffoldCommand::Policies(args) => scaffold_manifest::policies(args),
    }
}
