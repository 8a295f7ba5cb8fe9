//! `olm-guard run`: evaluate one request, or the objects of a manifest.
//! Its arguments are here; `one` is the flow with one module, `several` the
//! admission sequence with several (or `all`), and `show` prints an
//! evaluation for both.

mod one;
mod several;
mod show;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::cluster::SnapshotArgs;
use crate::limits::LimitArgs;
use crate::live::LiveArgs;
use crate::modules::DistArgs;
use crate::registry::RegistryArgs;
use crate::session::SessionArgs;
use crate::verification::VerificationArgs;

#[derive(Args)]
#[command(group(
    // One message that names every way to give the input (clap's own
    // named only --request).
    clap::ArgGroup::new("input")
        .args(["request", "objects", "old_object", "bundle"])
        .multiple(true)
        .required(true),
))]
#[command(after_help = "\
Examples:
  # A manifest, as the API server would send it (CREATE, or UPDATE of a stored object):
  olm-guard run catalog-union --object cs.yaml
  kubectl get catalogsource ops -n olm -o yaml | olm-guard run catalog-union --object -
  olm-guard run og-intersection --object og.yaml --cluster cluster.yaml --as alice --as-group team-a
  olm-guard run catalog-union --object cs.yaml --settings migrate.yaml   # settings: migrateLegacy: true

  # Would this install pass? Every module (all) on every document, in order:
  olm-guard run all --object quickstart-olm.yaml --cluster cluster.yaml --fail-on-deny
  olm-guard run og-intersection catalog-union --object install.yaml -o junit > junit.xml
  olm-guard run all --object install.yaml --settings catalog-union=cu.yaml -o json

  # A hand-built AdmissionReview (or bare AdmissionRequest), JSON or YAML (`-`: stdin):
  olm-guard run dist/catalog-union.wasm --request review.json --settings settings.yaml

  # Show every host call the module makes, with its answer:
  olm-guard run revision-uniqueness --object cos.yaml --cluster cluster.yaml --trace

  # Against a live cluster (--kubeconfig and --context as kubectl takes them):
  olm-guard run og-intersection --object og.yaml --context prod
  olm-guard run group-authorization --object cos.yaml --kubeconfig k.yaml --as alice
  olm-guard run og-intersection --object og.yaml --no-cluster   # an empty cluster, on purpose

Which cluster, as kubectl chooses it: --kubeconfig or --context, else the
files of KUBECONFIG, else ~/.kube/config when it exists. --cluster FILE
without --kubeconfig or --context is the cluster instead, offline, even when
KUBECONFIG is set; with them, the files answer only for the kinds the server
does not serve. A module that reads the cluster (contextAwareResources, or a
kubernetes/* host capability) with no cluster at all is an error (exit 2):
give one, or --no-cluster to judge against an empty cluster on purpose. A
module that reads nothing needs no cluster.

With a live cluster, one module's lookups are answered by the API server as
Kubewarden's policy-server answers them (lists, gets, and can_i as a
SubjectAccessReview); with several modules, the kinds they read are listed
once into the starting snapshot. A lookup that cannot be answered (the
server stopped, credentials refused, a timeout) stops the run with exit 2
instead of printing its verdict. RBAC the kubeconfig's user needs: list on
the kinds the modules read, get on the kinds of the objects (one module) or
list (several), and create subjectaccessreviews.authorization.k8s.io for
modules that call can_i.

An object the cluster already holds (same apiVersion, kind, namespace and
name) is judged as an UPDATE of it, as `kubectl apply` sends it, with one
module as with several; --old-object or --operation says otherwise. A
namespaced object without a namespace goes in -n's (else `default`).

--as USER is the user as the API server knows it: the --as-group groups,
and system:authenticated, which the server adds to every user; a service
account (system:serviceaccount:NS:NAME) without --as-group is in
system:serviceaccounts and system:serviceaccounts:NS, as the server's
impersonation puts it.

MODULE is a name in the module directory (`catalog-union`), a path to a
.wasm file, or registry://host[:port]/repo:tag. The module directory is
--dist DIR, else $OLM_GUARD_DIST, else ./dist when it holds modules, else the
modules installed with olm-guard (<prefix>/share/olm-guard/modules beside
<prefix>/bin/olm-guard); a name not there is answered with the modules that
are. With --verification-config, only registry modules whose cosign
signatures satisfy it are run (`olm-guard verify --help`), checked before any
evaluation.

Several documents (a file of many, several --object files, a --bundle), with
one module as with several (or `all`, every module in the module directory):
each document goes only to the modules whose metadata rules cover its group,
version, resource and operation, as policy-server's webhooks are registered;
an object no rule covers is listed as `(none)` (with one module, summed up in
one line; -v lists each). The documents are admitted in order, as
`kubectl apply -f` sends them, and each object every module admitted joins
the snapshot for the documents after it (--independent: judge each against
the cluster alone). Mutating modules run first, in name order (the API
server calls mutating webhooks ordered by their configuration's name, and
Kubewarden names it after the policy), each on the object as the ones before
patched it; the others then judge the final object. Unlike the API server,
every module is evaluated even after a denial, so one run names every
reason. --settings MODULE=FILE per module.

A --cluster or --api-resources file that holds no object is an error (exit
2) unless --allow-empty says an empty cluster is meant.

Output (-o): text, by default, the verdict, message, warnings and a diff of
any mutation (several documents or modules: the table, object by module, with the verdict, pass | fail | warn | error, and the message's first
line); json or yaml one document: the AdmissionReview itself for --request or
one object and module, else a v1 List of them, one per object and module,
each naming `policy`, `source` (file and document), `operation` and `object`
(apiVersion, kind, namespace, name) beside `response`, with the patch decoded
(`patchOperations`) and applied (`patchedObject`); junit a test case per
object and module. Write a file by redirecting stdout.

Exit codes: 0 the modules answered (allowed, or denied without --fail-on-deny:
the verdict is in the output); 1 --fail-on-deny and some object was denied;
2 an input could not be read (the message names the file and document), the
settings were refused, a module failed (trap, deadline, memory cap), or a
module that reads the cluster was given none (without --no-cluster).")]
pub struct RunArgs {
    /// The policy module: a name in the module directory (--dist), a .wasm
    /// file or registry://host[:port]/repo:tag.
    /// Several modules, or `all` for every module in the module directory,
    /// evaluate each object with the modules whose metadata rules cover it
    /// (below).
    #[arg(value_name = "MODULE", required_unless_present = "policy")]
    pub modules: Vec<String>,
    /// The policy module, as MODULE (an older spelling, kept for scripts).
    #[arg(long, conflicts_with = "modules", hide = true)]
    pub policy: Option<PathBuf>,
    #[command(flatten)]
    pub dist: DistArgs,
    #[command(flatten)]
    pub registry: RegistryArgs,
    #[command(flatten)]
    pub verification: VerificationArgs,
    /// AdmissionReview or AdmissionRequest, JSON or YAML (`-` for stdin).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["objects", "old_object", "bundle"])]
    pub request: Option<PathBuf>,
    /// A Kubernetes object or manifest (YAML or JSON; `-` for stdin); every
    /// document is evaluated, `List`s are unpacked. Repeatable: the files in
    /// the order given.
    #[arg(long = "object", value_name = "FILE")]
    pub objects: Vec<PathBuf>,
    /// An OLM registry+v1 bundle directory (`manifests/`,
    /// `metadata/annotations.yaml`): evaluate the manifests OLM would create
    /// from it in --namespace, after the --object documents.
    #[arg(long, value_name = "DIR", requires = "namespace")]
    pub bundle: Option<PathBuf>,
    /// The stored object, for an UPDATE (or a DELETE).
    #[arg(long, value_name = "FILE")]
    pub old_object: Option<PathBuf>,
    /// CREATE, UPDATE, DELETE or CONNECT; by default UPDATE with
    /// --old-object, DELETE with --old-object alone, else CREATE.
    #[arg(long)]
    pub operation: Option<String>,
    /// Evaluate the request as sent by this user (request.userInfo), as
    /// kubectl's --as: in the --as-group groups and system:authenticated.
    #[arg(long = "as", alias = "user", value_name = "USER")]
    pub user: Option<String>,
    /// A group of the --as user (repeatable), as kubectl's --as-group.
    #[arg(long = "as-group", alias = "group", value_name = "GROUP")]
    pub groups: Vec<String>,
    /// The namespace of the request, for objects that name none.
    #[arg(long, short = 'n')]
    pub namespace: Option<String>,
    /// Policy settings, JSON or YAML: FILE for the one module, MODULE=FILE
    /// for one of several (repeatable).
    #[arg(long, value_name = "[MODULE=]FILE")]
    pub settings: Vec<String>,
    /// With several modules: judge every document against --cluster alone,
    /// instead of adding each admitted object to the snapshot the documents
    /// after it are judged against.
    #[arg(long)]
    pub independent: bool,
    #[command(flatten)]
    pub snapshot: SnapshotArgs,
    #[command(flatten)]
    pub live: LiveArgs,
    /// Judge against an empty cluster, on purpose: read no kubeconfig (not
    /// even KUBECONFIG's) and no file. Without it, a module that reads the
    /// cluster and is given none is an error.
    #[arg(long, conflicts_with_all = ["cluster", "kubeconfig", "context", "replay"])]
    pub no_cluster: bool,
    #[command(flatten)]
    pub session: SessionArgs,
    /// metadata.yml to use instead of the module's embedded metadata.
    #[arg(long)]
    pub metadata: Option<PathBuf>,
    /// Print every host call to stderr: the request, and the answer's size
    /// and first bytes (or the error), also when the module fails.
    #[arg(long)]
    pub trace: bool,
    /// With one module and several documents, list each document its rules
    /// do not cover on a line of its own (summed up in one otherwise).
    #[arg(short, long)]
    pub verbose: bool,
    /// Exit 1 when a module denies any of the requests (a gate for CI), as
    /// `audit --fail-on-deny`.
    // `--fail-on-violation`, audit's spelling before, is read too.
    #[arg(long, alias = "fail-on-violation")]
    pub fail_on_deny: bool,
    /// Output format.
    #[arg(short, long, value_name = "FORMAT", default_value = "text", value_parser = crate::output::format::<RunOutput>())]
    pub output: RunOutput,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// How `run` prints the response.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RunOutput {
    /// The verdict, message, warnings and a diff of any mutation (with
    /// several modules: the table).
    Text,
    /// Object × module: the verdict and the message's first line.
    Table,
    /// One document: the AdmissionReview (one request), else a List of
    /// them, one per object and module.
    Json,
    /// The same document as YAML.
    Yaml,
    /// JUnit XML: a test case per object and module.
    Junit,
}

/// `run`: with several modules (or `all`, a bundle, or an output only
/// that path has) the admission sequence of `several`, else the one module
/// on each request.
pub fn run(mut args: RunArgs) -> anyhow::Result<ExitCode> {
    // Every registry fetch below (one module or several) is checked.
    args.registry.verification_config = args.verification.verification_config.clone();
    if several::applies(&args) {
        return several::run(args);
    }
    // The module first: a misspelt name is the likelier fault, and stdin
    // is not read for nothing.
    one::module_path(&args)?;
    if several::documents_in(&args)? > 1 {
        return several::run(args);
    }
    one::run(args)
}
