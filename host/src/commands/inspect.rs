//! `olm-guard inspect`: the metadata a module embeds, as `kwctl inspect`
//! shows it (kubewarden-controller `crates/kwctl/src/inspect.rs`): readable
//! by default, or the embedded document itself with `-o json|yaml`.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use olm_guard_runtime::metadata::{METADATA_SECTION, Metadata, annotation, custom_section};

use crate::modules::DistArgs;
use crate::output::{one_line, write_json, write_yaml};
use crate::registry::RegistryArgs;

#[derive(Args)]
#[command(after_help = "\
Examples:
  olm-guard inspect catalog-union                 # a name in the module directory
  olm-guard inspect dist/og-intersection.wasm -o yaml
  olm-guard inspect registry://ghcr.io/olm-guard/policies/scope-rbac:v0.1.0

Exit codes: 0 printed; 2 the module cannot be read or pulled, or its
embedded metadata is unreadable.")]
pub struct InspectArgs {
    /// The module: a name in the module directory (--dist), a `.wasm`
    /// path, or a `registry://` reference.
    pub module: String,
    #[command(flatten)]
    pub dist: DistArgs,
    /// How a `registry://` module is fetched.
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Output format.
    #[arg(short, long, value_name = "FORMAT", default_value = "text", value_parser = crate::output::format::<InspectOutput>())]
    pub output: InspectOutput,
}

/// How `inspect` prints.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InspectOutput {
    /// A readable summary.
    Text,
    /// The embedded metadata document itself (usage text included).
    Json,
    /// The same document as YAML.
    Yaml,
}

/// Annotation values longer than this (or spanning lines) are summarised
/// by length in the text view.
const LONG_VALUE: usize = 200;

pub fn inspect(args: InspectArgs) -> anyhow::Result<ExitCode> {
    let path = crate::modules::resolve(&args.module, &args.dist)?;
    let path = crate::registry::local_module(&path, &args.registry)?;
    let wasm = module_bytes(&path.display().to_string())?;
    let section = custom_section(&wasm, METADATA_SECTION)
        // The error says what is wrong ("not a wasm module"); the module is
        // named once, before it.
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.module))?
        .with_context(|| {
            format!(
                "{} has no Kubewarden metadata ({METADATA_SECTION} section); annotate it first: olm-guard annotate -m metadata.yml -u README.md --output-file annotated.wasm {}",
                args.module, args.module
            )
        })?;
    // The document as embedded, not as our types would re-serialise it:
    // fields we do not model are shown too.
    let document: serde_json::Value = serde_json::from_slice(section).with_context(|| {
        format!(
            "{}: the {METADATA_SECTION} section is not JSON; annotate the module again",
            args.module
        )
    })?;
    match args.output {
        InspectOutput::Json => write_json(&mut std::io::stdout().lock(), &document)?,
        InspectOutput::Yaml => write_yaml(&mut std::io::stdout().lock(), &document)?,
        InspectOutput::Text => {
            let metadata: Metadata = serde_json::from_value(document).with_context(|| {
                format!("{}: the embedded metadata is not Kubewarden metadata; annotate the module again", args.module)
            })?;
            std::io::Write::write_all(&mut std::io::stdout().lock(), render(&metadata).as_bytes())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The bytes of the module `reference` names. The one place a reference
/// becomes bytes: `registry://` references are resolved here too once
/// `pull` exists.
pub(crate) fn module_bytes(reference: &str) -> anyhow::Result<Vec<u8>> {
    let path = Path::new(reference);
    std::fs::read(path).with_context(|| format!("cannot read {reference}"))
}

/// The readable view: identity, rules table, grants, annotations.
fn render(m: &Metadata) -> String {
    let get = |key: &str| m.annotations.get(key).map(String::as_str).unwrap_or("-");
    let mut out = String::new();
    let _ = writeln!(out, "title:             {}", get(annotation::TITLE));
    let _ = writeln!(out, "version:           {}", get(annotation::VERSION));
    let _ = writeln!(out, "display name:      {}", get(annotation::DISPLAY_NAME));
    let _ = writeln!(
        out,
        "description:       {}",
        one_line(get(annotation::DESCRIPTION))
    );
    let _ = writeln!(out, "author:            {}", get(annotation::AUTHOR));
    let _ = writeln!(out, "license:           {}", get(annotation::LICENSE));
    let _ = writeln!(out, "source:            {}", get(annotation::SOURCE));
    let _ = writeln!(out, "oci url:           {}", get(annotation::OCI_URL));
    let _ = writeln!(
        out,
        "protocol version:  {}",
        m.protocol_version.as_deref().unwrap_or("-")
    );
    let _ = writeln!(out, "execution mode:    {}", m.execution_mode);
    let _ = writeln!(out, "mutating:          {}", m.mutating);
    let _ = writeln!(out, "background audit:  {}", m.background_audit);
    if let Some(v) = &m.minimum_kubewarden_version {
        let _ = writeln!(out, "minimum Kubewarden: {v}");
    }

    out.push_str("\nrules:\n");
    let header = ["API GROUPS", "API VERSIONS", "RESOURCES", "OPERATIONS"];
    let rows: Vec<[String; 4]> = m
        .rules
        .iter()
        .map(|r| {
            let groups: Vec<String> = r
                .api_groups
                .iter()
                .map(|g| {
                    if g.is_empty() {
                        "\"\" (core)".to_string()
                    } else {
                        g.clone()
                    }
                })
                .collect();
            [
                groups.join(", "),
                r.api_versions.join(", "),
                r.resources.join(", "),
                r.operations.join(", "),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut line = |cells: [&str; 4]| {
        let text: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(out, "  {}", text.join("  ").trim_end());
    };
    line(header);
    for row in &rows {
        line([&row[0], &row[1], &row[2], &row[3]]);
    }

    out.push_str("\ncontext-aware resources:");
    if m.context_aware_resources.is_empty() {
        out.push_str(" none\n");
    } else {
        out.push('\n');
        for r in &m.context_aware_resources {
            let _ = writeln!(out, "  {} {}", r.api_version, r.kind);
        }
    }
    out.push_str("host capabilities:");
    match &m.host_capabilities {
        None => out.push_str(" not declared (kwctl grants every capability, `*`)\n"),
        Some(c) if c.is_empty() => out.push_str(" none (every host call is denied)\n"),
        Some(c) => {
            out.push('\n');
            for capability in c {
                let _ = writeln!(out, "  {capability}");
            }
        }
    }
    out.push_str(
        "settings:          not part of the metadata; the usage annotation (the README) documents them\n",
    );

    out.push_str("\nannotations:\n");
    for (key, value) in &m.annotations {
        let shown = if key == annotation::USAGE
            || value.contains('\n')
            || value.chars().count() > LONG_VALUE
        {
            format!(
                "({} characters, {} lines; -o yaml shows it)",
                value.chars().count(),
                value.lines().count()
            )
        } else {
            value.clone()
        };
        let _ = writeln!(out, "  {key}: {shown}");
    }
    out
}
