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
use crate::registry::RegistryArgs;
use crate::session::SessionArgs;
use crate::verification::VerificationArgs;

#[derive(Args)]
#[command(after_help = "\
Examples:
  # A manifest, as the API server would send it on CREATE (UPDATE with --old-object):
  olm-guard run catalog-union --object cs.yaml
  kubectl get catalogsource ops -n olm -o yaml | olm-guard run catalog-union --object -
  olm-guard run og-intersection --object og.yaml --cluster cluster.yaml --user alice --group team-a

  # Would this install pass? Every module in dist/ on every document, in order:
  olm-guard run all --object quickstart-olm.yaml --cluster cluster.yaml --fail-on-deny
  olm-guard run og-intersection catalog-union --object install.yaml -o junit > junit.xml
  olm-guard run all --object install.yaml --settings catalog-union=cu.yaml -o json

  # A hand-built AdmissionReview (or bare AdmissionRequest), JSON or YAML:
  olm-guard run dist/catalog-union.wasm --request review.json --settings settings.yaml

  # Show every host call the module makes, with its answer:
  olm-guard run revision-uniqueness --object cos.yaml --cluster cluster.yaml --trace

  # Against a live cluster (--kubeconfig and --context as kubectl takes them):
  olm-guard run og-intersection --object og.yaml --context prod
  olm-guard run group-authorization --object cos.yaml --kubeconfig k.yaml --user alice

With --kubeconfig or --context, one module's lookups are answered by the API
server as Kubewarden's policy-server answers them (lists, gets, and can_i as
a SubjectAccessReview); --cluster files then answer only for the kinds the
server does not serve. With several modules, the kinds they read are listed
once into the starting snapshot. A lookup that cannot be answered (the server
stopped, credentials refused, a timeout) stops the run with exit 2 instead of
printing its verdict.

MODULE is a name in --dist (`catalog-union`), a path to a .wasm file, or
registry://host[:port]/repo:tag; with --verification-config, only
registry modules whose cosign signatures satisfy it are run (`olm-guard
verify --help`), checked before any evaluation.

Several modules (or `all`, every module in --dist): each document goes only to
the modules whose metadata rules cover its group, version, resource and
operation, as policy-server's webhooks are registered; an object no rule
covers is listed as `(none)`. The documents are admitted in order, as
`kubectl apply -f` sends them: a namespaced object without a namespace goes in
-n's (else `default`); one already in the snapshot is an UPDATE of it; and
each object every module admitted joins the snapshot for the documents after
it (--independent: judge each against --cluster alone). Mutating modules run
first, in name order (the API server calls mutating webhooks ordered by
their configuration's name, and Kubewarden names it after the policy), each
on the object as the ones before patched it; the others then judge the final
object. Unlike the API server, every module is evaluated even after a
denial, so one run names every reason. --settings MODULE=FILE per module.

Output: by default the verdict, message, warnings and a diff of any mutation,
one block per object (several modules: a table, object by module, with the
verdict, pass | fail | warn | error, and the message's first line);
-o json|yaml prints each AdmissionReview as data (with several modules one per
object and module, naming them in `policy`, `source` and `operation`), with
the patch decoded (`patchOperations`) and applied (`patchedObject`); -o junit
a test case per object and module.

Exit codes: 0 the modules answered (allowed, or denied without --fail-on-deny:
the verdict is in the output); 1 --fail-on-deny and some object was denied;
2 an input could not be read (the message names the file and document), the
settings were refused, or a module failed (trap, deadline, memory cap).")]
pub struct RunArgs {
    /// The policy module: a name in --dist, a .wasm file or
    /// registry://host[:port]/repo:tag.
    /// Several modules, or `all` for every module in --dist, evaluate each
    /// object with the modules whose metadata rules cover it (below).
    #[arg(value_name = "MODULE", required_unless_present = "policy")]
    pub modules: Vec<String>,
    /// The policy module (the same as MODULE).
    #[arg(long, conflicts_with = "modules")]
    pub policy: Option<PathBuf>,
    /// Where modules named by name are.
    #[arg(long, default_value = "dist")]
    pub dist: PathBuf,
    #[command(flatten)]
    pub registry: RegistryArgs,
    #[command(flatten)]
    pub verification: VerificationArgs,
    /// AdmissionReview or AdmissionRequest, JSON or YAML.
    #[arg(long, required_unless_present_any = ["objects", "old_object", "bundle"], conflicts_with_all = ["objects", "old_object", "bundle"])]
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
    /// The requester's user name (request.userInfo.username).
    #[arg(long)]
    pub user: Option<String>,
    /// A group of the requester (repeatable).
    #[arg(long = "group")]
    pub groups: Vec<String>,
    /// The namespace of the request, for objects that name none.
    #[arg(long, short = 'n')]
    pub namespace: Option<String>,
    /// Policy settings, JSON or YAML; `MODULE=FILE` for one of several
    /// modules (repeatable).
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
    #[command(flatten)]
    pub session: SessionArgs,
    /// metadata.yml to use instead of the module's embedded metadata.
    #[arg(long)]
    pub metadata: Option<PathBuf>,
    /// Print every host call to stderr: the request, and the answer's size
    /// and first bytes (or the error), also when the module fails.
    #[arg(long)]
    pub trace: bool,
    /// Exit 1 when a module denies any of the requests (a gate for CI).
    #[arg(long)]
    pub fail_on_deny: bool,
    /// `text`: the verdict, message, warnings and a diff of any mutation
    /// (with several modules: the table); `table`: object × module, the
    /// verdict and the message's first line; `json`/`yaml`: the
    /// AdmissionReview (one document per object and module), with
    /// `patchOperations` and `patchedObject` beside `response` when the
    /// module mutated the object; `junit`: a test case per object and
    /// module.
    #[arg(short, long, value_enum, default_value_t = RunOutput::Text)]
    pub output: RunOutput,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// How `run` prints the response.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RunOutput {
    Text,
    Table,
    Json,
    Yaml,
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
    one::run(args)
}
