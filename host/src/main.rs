//! `olm-guard`: evaluate Kubewarden policy modules against AdmissionReviews
//! and cluster snapshots, run scenario suites, and annotate modules.

// The doc comments of clap's arguments are their --help text, written for a
// terminal (`registry://host[:port]/...`, `DIR/<name>.wasm`), not for
// rustdoc, whose link and HTML checks would read them as Markdown.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

// The standard `eprintln!` and `eprint!` panic when stderr is a closed
// pipe (`olm-guard ... 2>&1 | head` once head has left), and a panic is
// exit 101 with a message nobody reads. These drop the line instead: there
// is no reader left for it. Defined before the modules, they are the ones
// every module below calls (a `macro_rules!` is in scope in the modules
// declared after it).
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

// The standard `println!` panics when stdout is a closed pipe. Most output
// is written with `writeln!` and `?`, so that main ends quietly
// (`output::is_broken_pipe`); the few commands that print line by line
// (`bench`, `keygen`, `playground`) end here the same way, with exit 0,
// as a Unix tool ends on SIGPIPE. Any other failure to write still panics,
// as the standard macro does.
macro_rules! println {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if let Err(e) = writeln!(std::io::stdout(), $($arg)*) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                std::process::exit(0);
            }
            panic!("failed printing to stdout: {e}");
        }
    }};
}

// The commands, one place each (`commands/`); what several of them share,
// one module each, below.
mod commands;

mod cluster;
mod file_text;
mod findings;
mod inputs;
mod limits;
mod live;
mod modules;
mod output;
mod registry;
mod requester;
mod session;
mod settings;
mod verification;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use commands::snapshot as snapshot_command;
use commands::{
    annotate, audit, bench, inspect, keygen, playground, pull, push, run, scaffold, sign, test,
    verify,
};
use output::one_line;

#[derive(Parser)]
#[command(
    name = "olm-guard",
    version,
    about = "Run olm-guard (Kubewarden waPC) policy modules locally",
    after_help = "\
Exit codes (every subcommand): 0 success; 1 a verdict failed (run or audit
--fail-on-deny saw a denial, test saw a failed scenario); 2 an input could not
be read, the settings were refused, or a module failed (trap, deadline, memory
cap). A reader that closes the output early (`| head`) ends the command
quietly with exit 0, as ripgrep and fd do.

-o is the output format on every command (json, yaml, text, ... as each
lists them); a file is --output-file FILE where a command writes one, or a
redirect.

Examples:
  olm-guard run catalog-union --object cs.yaml
  olm-guard run all --object install.yaml --cluster cluster.yaml
  olm-guard test testdata
  olm-guard audit --context prod                # the live cluster of a kubeconfig context
  olm-guard snapshot --output-file cluster.yaml  # ... written to a file, to replay offline
  olm-guard inspect dist/og-intersection.wasm -o yaml"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    // Boxed: the largest arguments by far (clippy's large_enum_variant).
    /// Evaluate one request, or the objects of a manifest; prints the
    /// AdmissionReview response (with several modules or `all`, a table of
    /// every object's verdicts).
    Run(Box<run::RunArgs>),
    /// Run every scenario directory below the given ones.
    Test(test::TestArgs),
    /// Measure modules against the same rules compiled natively (ratio of medians).
    Bench(bench::BenchArgs),
    /// Embed metadata.yml into a module (`io.kubewarden.metadata`), as `kwctl annotate`.
    Annotate(annotate::AnnotateArgs),
    /// Print the metadata a module embeds (readable, or -o json|yaml).
    Inspect(inspect::InspectArgs),
    /// Write Kubewarden resources and Artifact Hub packages from a module's
    /// metadata, as `kwctl scaffold`.
    Scaffold(scaffold::ScaffoldArgs),
    /// Push an annotated module to an OCI registry, as `kwctl push`.
    Push(push::PushArgs),
    /// Pull a module from an OCI registry (into the cache, or --output-file FILE).
    Pull(pull::PullArgs),
    /// Write a cosign key pair (cosign.key, cosign.pub), as `cosign generate-key-pair`.
    Keygen(keygen::KeygenArgs),
    /// Sign a pushed module with a cosign key, as `cosign sign --key`.
    Sign(sign::SignArgs),
    /// Check a module's cosign signatures with keys or a Kubewarden
    /// verification config, as `kwctl verify`.
    Verify(verify::VerifyArgs),
    /// Audit a cluster (live, or a snapshot): what the policies would reject
    /// today, as a table, JSON, an HTML page or policy reports.
    Audit(audit::AuditArgs),
    /// Write what the modules read and judge in a live cluster as a file
    /// `--cluster` reads, to replay it offline.
    Snapshot(snapshot_command::SnapshotArgs),
    /// Serve the browser playground (`make playground`) on 127.0.0.1.
    Playground(playground::PlaygroundArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run::run(*args),
        Command::Test(args) => test::test(args),
        Command::Bench(args) => bench::bench(args),
        Command::Annotate(args) => annotate::annotate(args),
        Command::Inspect(args) => inspect::inspect(args),
        Command::Scaffold(args) => scaffold::scaffold(args),
        Command::Push(args) => push::push(args),
        Command::Pull(args) => pull::pull(args),
        Command::Keygen(args) => keygen::keygen(args),
        Command::Sign(args) => sign::sign(args),
        Command::Verify(args) => verify::verify(args),
        Command::Audit(args) => audit::audit(args),
        Command::Snapshot(args) => snapshot_command::snapshot(args),
        Command::Playground(args) => playground::playground(args),
    };
    match result {
        Ok(code) => code,
        // The reader of stdout left (`| head`): nothing is said, since
        // nobody reads it, and the output it took was right.
        Err(e) if output::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("olm-guard: {}", one_line(&format!("{e:#}")));
            // 1 is kept for a verdict that fails (`run --fail-on-deny`,
            // `test` with a failed scenario), as diff and grep keep 2 for
            // trouble: a pipeline can tell a denial from a broken input.
            ExitCode::from(2)
        }
    }
}
