//! `olm-guard snapshot`: the part of a live cluster the modules read or
//! judge, written as the file `--cluster` reads, so that any later `run`,
//! `test` or `audit` replays that cluster offline.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use serde_json::Value;

use crate::live::{self, LiveArgs, Wanted};
use crate::modules::{self, ALL, DistArgs};
use crate::output::count;
use crate::registry::RegistryArgs;

#[derive(Args)]
#[command(after_long_help = concat!("\
Which kinds: those the modules' admission rules cover (the objects an audit
judges), those their metadata lets them read (contextAwareResources), and the
RBAC kinds when a module calls kubernetes/can_i (a snapshot answers can_i from
the cluster's RBAC). A kind the server does not serve is named on stderr: the
snapshot holds none of it.

Examples:
  olm-guard snapshot --output-file cluster.yaml       # current context, every module
  olm-guard snapshot og-intersection --context prod > og.yaml
  olm-guard snapshot --kubeconfig k.yaml -o json --output-file cluster.json   # one JSON List
  olm-guard audit --cluster cluster.yaml              # later, offline

-o yaml, the default, writes YAML documents; -o json one JSON List. Without
-o, an --output-file whose name ends in .json gets JSON.

Needs from RBAC: list, at the cluster scope (every namespace), on every kind
written; for the six modules of olm-guard:
", modules_kinds_help!(), "Each is checked first (SelfSubjectAccessReviews, as `kubectl auth can-i`
asks), and every one missing is named at once.

Exit codes: 0 written; 2 the cluster could not be read (kubeconfig,
connection, credentials, a permission the user lacks, timeout: nothing is
written), or a module or file could not be read."))]
pub struct SnapshotArgs {
    /// The modules whose kinds to read: names in the module directory
    /// (--dist), .wasm paths, or `all` (the default: every module there).
    #[arg(value_name = "MODULE")]
    pub modules: Vec<String>,
    #[command(flatten)]
    pub dist: DistArgs,
    #[command(flatten)]
    pub live: LiveArgs,
    /// Output format.
    #[arg(short, long, value_name = "FORMAT", value_parser = crate::output::format_or_file::<SnapshotFormat>("--output-file"))]
    pub output: Option<SnapshotFormat>,
    /// Write the output to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output_file: Option<PathBuf>,
}

/// How `snapshot` writes the cluster.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SnapshotFormat {
    /// YAML documents, one per object, after a comment naming the server.
    Yaml,
    /// One JSON document: a v1 List of the objects.
    Json,
}

pub fn snapshot(args: SnapshotArgs) -> anyhow::Result<ExitCode> {
    let session = args.live.session()?;
    let names = if args.modules.is_empty() {
        vec![ALL.to_string()]
    } else {
        args.modules.clone()
    };
    let named = modules::named(&names, &args.dist, &RegistryArgs::default())?;
    let mut metadata = Vec::new();
    for (name, path) in &named {
        metadata.push(modules::metadata_of(name, path)?);
    }
    let metadata: Vec<&olm_guard_runtime::Metadata> = metadata.iter().collect();
    let mut wanted: Vec<Wanted> = Vec::new();
    let (judged, wildcards) = live::kinds_judged(&metadata);
    for rule in wildcards {
        eprintln!("olm-guard: note: a rule covers {rule}, which names no kind to read");
    }
    wanted.extend(
        judged
            .into_iter()
            .map(|(v, plural)| Wanted::Resource(v, plural)),
    );
    wanted.extend(
        live::kinds_read(&metadata)
            .into_iter()
            .map(|(v, kind)| Wanted::Kind(v, kind)),
    );
    if metadata.iter().any(|m| live::calls_can_i(m)) {
        wanted.extend(
            live::RBAC_KINDS
                .iter()
                .map(|(v, kind)| Wanted::Kind(v.to_string(), kind.to_string())),
        );
    }
    let (kinds, missing) = live::resolve(&session, &wanted)?;
    if !missing.is_empty() {
        eprintln!(
            "olm-guard: note: the API server {} does not serve {missing}: the snapshot holds none of them",
            session.server()
        );
    }
    // Every list is checked before any is made, and all those the user
    // may not make are named at once.
    let needs: Vec<live::Permission> = kinds
        .iter()
        .map(|kind| live::Permission::list(kind, "written".into()))
        .collect();
    if let Some(missing) = live::missing(&session, &live::merge(needs))
        && !missing.is_empty()
    {
        anyhow::bail!("{}", live::missing_line(&session, &missing));
    }
    // Everything is read before anything is written: a list that fails
    // leaves no partial file behind.
    let listed = live::read(&session, &kinds, args.live.chunk_size)?;
    let objects: Vec<Value> = listed
        .iter()
        .flat_map(|(_, objects)| objects.iter().cloned())
        .map(|mut object| {
            // What the server adds for its own bookkeeping; a snapshot
            // drops it when it reads the file anyway.
            olm_guard_snapshot::strip_server_noise(&mut object);
            object
        })
        .collect();
    let json = match args.output {
        Some(format) => format == SnapshotFormat::Json,
        None => args
            .output_file
            .as_ref()
            .is_some_and(|path| path.extension().is_some_and(|e| e == "json")),
    };
    // The kinds that had objects; the others were listed and found empty.
    let filled = listed
        .iter()
        .filter(|(_, objects)| !objects.is_empty())
        .count();
    let of_kinds = if filled == kinds.len() {
        count(filled, "kind")
    } else {
        format!("{} ({} listed)", count(filled, "kind"), kinds.len())
    };
    let mut text = Vec::new();
    if json {
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": objects});
        serde_json::to_writer_pretty(&mut text, &list)?;
        text.push(b'\n');
    } else {
        writeln!(
            text,
            "# olm-guard snapshot of {}: {} of {of_kinds}, for {}",
            session.server(),
            count(objects.len(), "object"),
            named
                .iter()
                .map(|(name, _)| name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )?;
        if !missing.is_empty() {
            writeln!(text, "# not served, so none here: {missing}")?;
        }
        if objects.is_empty() {
            writeln!(text, "{EMPTY_NOTE}")?;
        }
        for object in &objects {
            writeln!(text, "---")?;
            serde_yaml_ng::to_writer(&mut text, object)?;
        }
    }
    match &args.output_file {
        Some(path) => {
            std::fs::write(path, &text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!(
                "olm-guard: wrote {} of {of_kinds} to {}",
                count(objects.len(), "object"),
                path.display()
            );
        }
        None => std::io::stdout().lock().write_all(&text)?,
    }
    if objects.is_empty() {
        eprintln!(
            "olm-guard: note: the cluster holds none of these kinds, so the snapshot holds no object: read it back with --allow-empty"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// What a snapshot with no object says of itself: `--cluster` refuses a
/// file with no object unless `--allow-empty` says an empty cluster is
/// meant.
const EMPTY_NOTE: &str =
    "# no object: the cluster holds none of these kinds; read this file with --allow-empty";
