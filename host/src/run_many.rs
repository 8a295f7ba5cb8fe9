//! `olm-guard run` with several modules (`all`, or more than one): would
//! this install pass? Every document of the manifests is admitted in order,
//! as `kubectl apply -f` sends them, and goes only to the modules whose
//! metadata rules cover it, as policy-server's webhook configurations route
//! it.
//!
//! What the API server does with one request
//! (kubernetes/kubernetes, `staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/`):
//! the mutating webhooks first, one after the other, each sent the object
//! as the ones before it patched it, ordered by the name of their
//! MutatingWebhookConfiguration (`configuration/mutating_webhook_manager.go`
//! sorts the configurations by name); then the validating webhooks, in
//! parallel, on the final object. Kubewarden's controller registers one
//! webhook configuration per policy, named after the policy
//! (`clusterwide-<name>`), so for the modules here the mutating order is the
//! order of their names. Kubewarden's configurations set no
//! `reinvocationPolicy` (the API server's default is `Never`), so no module
//! is called twice. Where the API server stops at the first denial, this
//! command goes on and evaluates every module, so that one run names every
//! reason an object would be refused; a denied mutation is not applied.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use olm_guard_core::ObjectMeta;
use olm_guard_core::response::AdmissionResponse;
use olm_guard_evaluator::ClusterContext;
use olm_guard_evaluator::input::{self as admission, ObjectRequest, Requester, Route};
use olm_guard_snapshot::Snapshot;

use crate::audit::engine::{self, AuditPolicy, Finding, Outcome, Subject};
use crate::common::policies_dir;
use crate::run::{RunArgs, RunOutput};

/// The word that stands for every module in `--dist`.
pub const ALL: &str = "all";

/// The policy column of an object no module applies to (counted nowhere).
const NO_MODULE: &str = "(none)";

/// Whether `run` takes this path: several modules, `all`, or an output only
/// it has.
pub fn applies(args: &RunArgs) -> bool {
    args.modules.len() > 1
        || args.modules.iter().any(|m| m == ALL)
        || args.bundle.is_some()
        || matches!(args.output, RunOutput::Table | RunOutput::Junit)
}

/// One evaluation: a document, a module, what it was sent and answered.
struct Pair {
    /// `file: document N`.
    source: String,
    /// The object, as the table names it.
    subject: Subject,
    /// The module's name.
    policy: String,
    /// The request the module was sent (its object patched by the mutating
    /// modules before it).
    request: Value,
    /// Its answer.
    response: AdmissionResponse,
}

impl Pair {
    fn outcome(&self) -> Outcome {
        let code = self.response.status.as_ref().and_then(|s| s.code);
        if !self.response.allowed && code == Some(500) {
            Outcome::Error
        } else if !self.response.allowed {
            Outcome::Fail
        } else if self
            .response
            .warnings
            .as_ref()
            .is_some_and(|w| !w.is_empty())
        {
            Outcome::Warn
        } else {
            Outcome::Pass
        }
    }

    /// The table's message: the denial's first line; for an admission, the
    /// mutation and the first warning.
    fn summary(&self) -> String {
        if !self.response.allowed {
            let message = first_line(self.response.message());
            return if message.is_empty() {
                "denied, with no message".into()
            } else {
                message
            };
        }
        let mut parts = Vec::new();
        let operations = self
            .response
            .decoded_patch()
            .ok()
            .flatten()
            .map_or(0, |p| p.0.len());
        if operations > 0 {
            parts.push(format!(
                "mutated ({operations} patch operation{})",
                if operations == 1 { "" } else { "s" }
            ));
        }
        let warnings = self.response.warnings.as_deref().unwrap_or_default();
        if let Some(first) = warnings.first() {
            let more = match warnings.len() {
                1 => String::new(),
                n => format!(" (+{} more warnings)", n - 1),
            };
            parts.push(format!("warning: {}{more}", first_line(first)));
        }
        parts.join("; ")
    }
}

/// An object no module's rules cover.
struct Unrouted {
    source: String,
    route: String,
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or("").trim().to_string()
}

/// `run` with several modules: load, admit every document in order, print,
/// exit 1 with `--fail-on-deny` when a pair was denied.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    if args.request.is_some() {
        bail!(
            "--request takes one module; with several, give the objects (--object FILE) and each becomes the request the API server would send"
        );
    }
    if args.session.record.is_some() || args.session.replay.is_some() {
        bail!(
            "--record and --replay take one module and one evaluation; drop them, or run one module"
        );
    }
    if args.policy.is_some() {
        bail!("--policy names one module; with several, list them as MODULE arguments");
    }
    let modules = module_files(&args)?;
    let settings = settings_by_module(&args.settings)?;
    let mut documents = Vec::new();
    for path in &args.objects {
        documents.extend(crate::run::objects_of(path)?);
    }
    if let (Some(dir), Some(namespace)) = (&args.bundle, &args.namespace) {
        documents.extend(bundle_documents(dir, namespace)?);
    }
    let old = match &args.old_object {
        Some(path) => {
            let mut old = crate::run::objects_of(path)?;
            if old.len() != 1 {
                bail!(
                    "{}: --old-object must hold one object, found {}",
                    path.display(),
                    old.len()
                );
            }
            old.pop().map(|(_, object)| object)
        }
        None => None,
    };
    if documents.is_empty() {
        bail!(
            "no object to evaluate: give the manifests with --object FILE, or a bundle with --bundle DIR"
        );
    }
    let snapshot = args.snapshot.load()?;
    let runtime = args.limits.runtime()?;
    let mut policies =
        engine::load_modules(&runtime, modules, &policies_dir(&args.dist), settings)?;
    // Mutating modules first, in name order (see the module's doc), then
    // the validating ones, also by name (their order changes nothing).
    policies.sort_by(|a, b| (!a.metadata.mutating, &a.name).cmp(&(!b.metadata.mutating, &b.name)));

    let mut state = Admission {
        args: &args,
        policies: &policies,
        snapshot: Arc::new(snapshot),
        old,
        pairs: Vec::new(),
        unrouted: Vec::new(),
        order: Vec::new(),
    };
    for (source, object) in documents {
        state.admit(source, object)?;
    }
    if let (Some(_), Some(namespace)) = (&args.bundle, &args.namespace) {
        state.note_operator_group(namespace);
    }
    let Admission {
        pairs,
        unrouted,
        order,
        ..
    } = state;

    let mut out = std::io::stdout().lock();
    match args.output {
        RunOutput::Text | RunOutput::Table => {
            write_table(&mut out, &policies, &pairs, &unrouted, &order)?
        }
        RunOutput::Json => {
            for pair in &pairs {
                serde_json::to_writer_pretty(&mut out, &review(pair)?)?;
                writeln!(out)?;
            }
        }
        RunOutput::Yaml => {
            for pair in &pairs {
                writeln!(out, "---")?;
                serde_yaml_ng::to_writer(&mut out, &review(pair)?)?;
            }
        }
        RunOutput::Junit => write!(out, "{}", junit(&pairs))?,
    }
    out.flush()?;
    let denied = pairs.iter().filter(|p| !p.response.allowed).count();
    eprintln!(
        "olm-guard run: {} objects, {} evaluations: {} allowed, {denied} denied; {} objects no module applies to",
        order.len(),
        pairs.len(),
        pairs.len() - denied,
        unrouted.len(),
    );
    if args.fail_on_deny && denied > 0 {
        eprintln!("olm-guard: {denied} evaluations denied (--fail-on-deny)");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The modules named: `all` (every `.wasm` in `--dist`), names in `--dist`,
/// paths or registry references; each with its name (the file stem, or the
/// reference's last path segment without its tag).
fn module_files(args: &RunArgs) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let mut modules: Vec<(String, PathBuf)> = Vec::new();
    for module in &args.modules {
        let found = if module == ALL {
            if args.registry.verification_config.is_some() {
                bail!("{}", crate::pull::unverifiable(ALL));
            }
            let files = engine::module_files(&args.dist).with_context(|| {
                format!(
                    "`{ALL}` stands for every module in --dist ({})",
                    args.dist.display()
                )
            })?;
            if files.is_empty() {
                bail!(
                    "`{ALL}`: {} holds no .wasm module (build them with `make dist`, or pass --dist DIR)",
                    args.dist.display()
                );
            }
            files
        } else {
            let path = crate::run::resolve_module(module, &args.dist)?;
            vec![crate::pull::local_policy(&path, &args.registry)?]
        };
        for path in found {
            let name = if module != ALL && crate::pull::is_registry(module) {
                registry_name(module)
            } else {
                path.file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default()
            };
            if let Some((_, first)) = modules.iter().find(|(n, _)| *n == name) {
                if *first == path {
                    continue;
                }
                bail!(
                    "two modules are named {name}: {} and {}; name each module once",
                    first.display(),
                    path.display()
                );
            }
            modules.push((name, path));
        }
    }
    Ok(modules)
}

/// The bundle annotation that names the format.
const MEDIATYPE: &str = "operators.operatorframework.io.bundle.mediatype.v1";
/// The bundle annotation that names the manifests directory.
const MANIFESTS: &str = "operators.operatorframework.io.bundle.manifests.v1";

/// The manifests OLM creates from the registry+v1 bundle `dir` when it
/// installs it in `namespace` (operator-framework/operator-registry,
/// `docs/design/operator-bundle.md`: `metadata/annotations.yaml` names the
/// media type and the manifests directory, which holds one
/// ClusterServiceVersion beside CRDs and other objects): every manifest,
/// namespaced ones in `namespace` whatever namespace the file names (OLM
/// installs the CSV where its InstallPlan is). Admitted in this order: the
/// CustomResourceDefinitions, the other manifests by file name, then the
/// CSV, so that the CSV is judged with what it owns in place. What OLM then
/// generates from the CSV (its Deployments, the ServiceAccounts and RBAC of
/// its install strategy, the ClusterRoles for the APIs it owns) is not
/// among them.
fn bundle_documents(dir: &Path, namespace: &str) -> anyhow::Result<Vec<(String, Value)>> {
    let annotations_file = dir.join("metadata").join("annotations.yaml");
    if !annotations_file.is_file() {
        bail!(
            "{}: not a registry+v1 bundle: {} is missing (a bundle directory holds manifests/ and metadata/annotations.yaml)",
            dir.display(),
            annotations_file.display()
        );
    }
    let document = admission::read_document(&annotations_file)?;
    let annotations = document
        .get("annotations")
        .and_then(Value::as_object)
        .with_context(|| {
            format!(
                "{}: no `annotations` mapping: write the bundle's annotations under `annotations:`",
                annotations_file.display()
            )
        })?;
    match annotations.get(MEDIATYPE).and_then(Value::as_str) {
        Some("registry+v1") => {}
        Some(other) => bail!(
            "{}: {MEDIATYPE} is {other}: only registry+v1 bundles can be read (render other formats to registry+v1 first)",
            annotations_file.display()
        ),
        None => bail!(
            "{}: no {MEDIATYPE} annotation: a registry+v1 bundle says `{MEDIATYPE}: registry+v1`",
            annotations_file.display()
        ),
    }
    let manifests = annotations
        .get(MANIFESTS)
        .and_then(Value::as_str)
        .unwrap_or("manifests/");
    let manifests = dir.join(manifests);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&manifests)
        .with_context(|| {
            format!(
                "cannot read the bundle's manifests, {}",
                manifests.display()
            )
        })?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            path.extension()
                .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
        })
        .collect();
    files.sort();
    let (mut crds, mut others, mut csvs) = (Vec::new(), Vec::new(), Vec::new());
    for file in files {
        for (source, mut object) in crate::run::objects_of(&file)? {
            if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert("namespace".into(), json!(namespace));
            }
            match object.get("kind").and_then(Value::as_str) {
                Some("CustomResourceDefinition") => crds.push((source, object)),
                Some("ClusterServiceVersion") => csvs.push((source, object)),
                _ => others.push((source, object)),
            }
        }
    }
    if csvs.len() != 1 {
        bail!(
            "{}: a registry+v1 bundle holds one ClusterServiceVersion, found {}",
            manifests.display(),
            csvs.len()
        );
    }
    crds.extend(others);
    crds.extend(csvs);
    Ok(crds)
}

/// `registry://host/org/catalog-union:v1` → `catalog-union`.
fn registry_name(reference: &str) -> String {
    let last = reference.rsplit('/').next().unwrap_or(reference);
    let last = last.split('@').next().unwrap_or(last);
    last.split(':').next().unwrap_or(last).to_string()
}

/// `--settings MODULE=FILE`, each read; a bare `--settings FILE` cannot say
/// which module it is for.
fn settings_by_module(pairs: &[String]) -> anyhow::Result<BTreeMap<String, Value>> {
    for pair in pairs {
        if !pair.contains('=') {
            bail!(
                "--settings {pair}: with several modules, say which module the settings are for: --settings <module>={pair}"
            );
        }
    }
    crate::audit::read_settings(pairs)
}

/// The state of one run: the snapshot as it grows, and what was said.
struct Admission<'a> {
    args: &'a RunArgs,
    policies: &'a [AuditPolicy],
    snapshot: Arc<Snapshot>,
    old: Option<Value>,
    pairs: Vec<Pair>,
    unrouted: Vec<Unrouted>,
    /// Every document, in order, as (source, subject): the table's order.
    order: Vec<(String, Subject)>,
}

impl Admission<'_> {
    /// One document: its request, every module that applies, and, when all
    /// of them admit it, the object (as patched) joins the snapshot.
    fn admit(&mut self, source: String, mut object: Value) -> anyhow::Result<()> {
        let api_resources = self.snapshot.api_resources();
        let text = |key: &str| object.get(key).and_then(Value::as_str).unwrap_or("");
        let cluster_scoped = api_resources.is_cluster_scoped(text("apiVersion"), text("kind"));
        // `kubectl apply` puts a namespaced object that names no namespace
        // in `-n`'s, else in `default`; a cluster-scoped one in none.
        let names_one = !ObjectMeta::of(&object).namespace.is_empty();
        let namespace = match (cluster_scoped, names_one) {
            (true, _) => None,
            // An object's own namespace must agree with -n, if given.
            (false, true) => self.args.namespace.clone(),
            (false, false) => Some(
                self.args
                    .namespace
                    .clone()
                    .unwrap_or_else(|| "default".into()),
            ),
        };
        if cluster_scoped
            && let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut)
        {
            meta.remove("namespace");
        }
        // An object already in the snapshot (from --cluster, or an earlier
        // document) is an UPDATE of it, as `kubectl apply` patches it.
        let stored = match (&self.old, &self.args.operation) {
            (None, None) => self.stored(&object, namespace.as_deref()),
            _ => None,
        };
        let old_object = self.old.clone().or(stored);
        let request = admission::request_for_object(ObjectRequest {
            object: Some(object),
            old_object,
            operation: self.args.operation.clone(),
            namespace,
            user: Requester {
                username: self.args.user.clone().unwrap_or_default(),
                groups: self.args.groups.clone(),
            },
        })
        .with_context(|| source.clone())?;
        // A DELETE names its object in oldObject.
        let named = request
            .get("object")
            .filter(|o| o.is_object())
            .or_else(|| request.get("oldObject"))
            .unwrap_or(&Value::Null);
        let subject = Subject::of(named, self.snapshot.api_resources());
        self.order.push((source.clone(), subject.clone()));
        let Some(route) = Route::of(&request) else {
            bail!("{source}: the request has no resource");
        };
        let applicable: Vec<&AuditPolicy> = self
            .policies
            .iter()
            .filter(|p| p.metadata.covers(&route.target()))
            .collect();
        if applicable.is_empty() {
            self.unrouted.push(Unrouted {
                source,
                route: route.to_string(),
            });
            return self.store(&request, true);
        }
        let mut current = request;
        let mut admitted = true;
        for policy in applicable {
            let cluster: ClusterContext = self.snapshot.clone();
            let response = policy
                .policy
                .validate(&current, &policy.settings, cluster)
                .map_err(|e| crate::run::with_hint(e, &self.args.limits))
                .with_context(|| format!("{}: {source}", policy.name))?
                .response;
            admitted &= response.allowed;
            let sent = current.clone();
            // A mutating module's patch goes to the modules after it; a
            // denial's is never applied.
            if response.allowed
                && policy.metadata.mutating
                && let Some(patched) = response
                    .patched_object(&current)
                    .with_context(|| format!("{}: {source}: the module's patch", policy.name))?
                && let Some(map) = current.as_object_mut()
            {
                map.insert("object".into(), patched);
            }
            self.pairs.push(Pair {
                source: source.clone(),
                subject: subject.clone(),
                policy: policy.name.clone(),
                request: sent,
                response,
            });
        }
        self.store(&current, admitted)
    }

    /// Says on stderr when the bundle's namespace has no OperatorGroup in the
    /// snapshot: OLM would not install the CSV there (its phase becomes
    /// Failed with reason NoOperatorGroup), whatever the modules say.
    fn note_operator_group(&self, namespace: &str) {
        let found = self.snapshot.objects().any(|object| {
            object.get("kind").and_then(Value::as_str) == Some("OperatorGroup")
                && ObjectMeta::of(object).namespace == namespace
        });
        if !found {
            eprintln!(
                "olm-guard: note: namespace {namespace} has no OperatorGroup in the snapshot: OLM would not install the bundle's CSV there (reason NoOperatorGroup); give it with --cluster or --object"
            );
        }
    }

    /// The stored object `object` would replace: same apiVersion, kind,
    /// namespace (`namespace` when the object names none) and name.
    fn stored(&self, object: &Value, namespace: Option<&str>) -> Option<Value> {
        let mut object = object.clone();
        if let (Some(namespace), Some(meta)) = (
            namespace,
            object.get_mut("metadata").and_then(Value::as_object_mut),
        ) {
            meta.entry("namespace")
                .or_insert_with(|| Value::String(namespace.to_string()));
        }
        self.snapshot
            .objects()
            .find(|candidate| same_object(candidate, &object))
            .cloned()
    }

    /// What an admitted request leaves in the snapshot, unless
    /// `--independent`: a CREATE's or UPDATE's object (as patched) replaces
    /// the stored one or joins the snapshot, a DELETE's object leaves it.
    fn store(&mut self, request: &Value, admitted: bool) -> anyhow::Result<()> {
        if !admitted || self.args.independent {
            return Ok(());
        }
        let (subject, replacement) = match request.get("operation").and_then(Value::as_str) {
            Some("CREATE" | "UPDATE") => (request.get("object"), request.get("object").cloned()),
            Some("DELETE") => (request.get("oldObject"), None),
            // CONNECT changes no object.
            _ => return Ok(()),
        };
        let Some(subject) = subject.filter(|s| s.is_object()).cloned() else {
            return Ok(());
        };
        let name = ObjectMeta::of(&subject).name;
        let replaces = !name.is_empty() && self.stored(&subject, None).is_some();
        let Some(snapshot) = Arc::get_mut(&mut self.snapshot) else {
            bail!("the snapshot is still in use by an evaluation; run with --independent");
        };
        let joins = |e: olm_guard_snapshot::SnapshotError| {
            anyhow::Error::from(e).context(format!(
                "{name}: admitted, but it cannot join the snapshot for the documents after it (or run with --independent)"
            ))
        };
        if replaces {
            // The snapshot adds objects but replaces none: a new one is
            // built from the others and the replacement.
            let mut rebuilt = Snapshot::new();
            rebuilt.set_api_resources(snapshot.api_resources().clone());
            let others: Vec<Value> = snapshot
                .objects()
                .filter(|o| !same_object(o, &subject))
                .cloned()
                .collect();
            for object in others.into_iter().chain(replacement) {
                rebuilt.add(object).map_err(joins)?;
            }
            *snapshot = rebuilt;
        } else if let Some(object) = replacement {
            snapshot.add(object).map_err(joins)?;
        }
        Ok(())
    }
}

/// Whether `a` and `b` are the same object: apiVersion, kind, namespace and
/// name (both named).
fn same_object(a: &Value, b: &Value) -> bool {
    let (ma, mb) = (ObjectMeta::of(a), ObjectMeta::of(b));
    !ma.name.is_empty()
        && ma.name == mb.name
        && ma.namespace == mb.namespace
        && a.get("apiVersion") == b.get("apiVersion")
        && a.get("kind") == b.get("kind")
}

/// The AdmissionReview of one pair, as `run -o json` prints one, with the
/// module's name, the document and the operation beside `response` (the
/// API server reads only `response`).
fn review(pair: &Pair) -> anyhow::Result<Value> {
    let mut review = crate::show::review_document(&pair.request, pair.response.clone())
        .with_context(|| format!("{}: {}", pair.policy, pair.source))?;
    review["policy"] = json!(pair.policy);
    review["source"] = json!(pair.source);
    review["operation"] = pair.request.get("operation").cloned().unwrap_or_default();
    Ok(review)
}

/// The table: one block per document, in the order admitted, one line per
/// module that evaluated it (in the order called), `(none)` when no module's
/// rules cover it; then the counts per module.
fn write_table(
    out: &mut impl Write,
    policies: &[AuditPolicy],
    pairs: &[Pair],
    unrouted: &[Unrouted],
    order: &[(String, Subject)],
) -> anyhow::Result<()> {
    let mut findings = Vec::new();
    for (source, subject) in order {
        let of_document = pairs.iter().filter(|p| &p.source == source);
        findings.extend(of_document.map(|pair| Finding {
            object: Some(pair.subject.clone()),
            source: pair.source.clone(),
            policy: pair.policy.clone(),
            result: pair.outcome(),
            message: pair.summary(),
        }));
        if let Some(none) = unrouted.iter().find(|u| &u.source == source) {
            findings.push(Finding {
                object: Some(subject.clone()),
                source: none.source.clone(),
                policy: NO_MODULE.into(),
                result: Outcome::Skip,
                message: format!("no module's rules cover {}", none.route),
            });
        }
    }
    let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut names: Vec<&str> = policies.iter().map(|p| p.name.as_str()).collect();
    names.sort_unstable();
    crate::audit::table::write(out, &names, &findings, true, colour)?;
    let mutating: Vec<&str> = policies
        .iter()
        .filter(|p| p.metadata.mutating)
        .map(|p| p.name.as_str())
        .collect();
    if mutating.len() > 1 {
        writeln!(
            out,
            "\nMutating modules run first, in this order, each on the object as the ones before it patched it: {}; the others then judge the final object.",
            mutating.join(", ")
        )?;
    }
    Ok(())
}

/// JUnit XML: a test suite per document, a test case per module that
/// evaluated it; a denial is a failure, an answer with code 500 (a lookup
/// failed) an error; warnings and the mutation are the case's output.
fn junit(pairs: &[Pair]) -> String {
    use crate::test::xml_escape;
    use std::fmt::Write as _;

    let mut suites: Vec<(String, Vec<&Pair>)> = Vec::new();
    for pair in pairs {
        let name = format!("{} ({})", pair.subject.display(), pair.source);
        match suites.iter_mut().find(|(n, _)| *n == name) {
            Some((_, cases)) => cases.push(pair),
            None => suites.push((name, vec![pair])),
        }
    }
    let count = |outcome: Outcome| pairs.iter().filter(|p| p.outcome() == outcome).count();
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"olm-guard run\" tests=\"{}\" failures=\"{}\" errors=\"{}\">\n",
        pairs.len(),
        count(Outcome::Fail),
        count(Outcome::Error),
    );
    for (name, cases) in &suites {
        let of = |outcome: Outcome| cases.iter().filter(|p| p.outcome() == outcome).count();
        let _ = writeln!(
            xml,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\">",
            xml_escape(name),
            cases.len(),
            of(Outcome::Fail),
            of(Outcome::Error),
        );
        for pair in cases {
            let _ = writeln!(
                xml,
                "    <testcase name=\"{}\" classname=\"{}\">",
                xml_escape(&pair.policy),
                xml_escape(&pair.subject.display()),
            );
            let element = match pair.outcome() {
                Outcome::Fail => Some("failure"),
                Outcome::Error => Some("error"),
                _ => None,
            };
            if let Some(element) = element {
                let _ = writeln!(
                    xml,
                    "      <{element} message=\"{}\">{}</{element}>",
                    xml_escape(&pair.summary()),
                    xml_escape(pair.response.message()),
                );
            } else if !pair.summary().is_empty() {
                let _ = writeln!(
                    xml,
                    "      <system-out>{}</system-out>",
                    xml_escape(&pair.summary())
                );
            }
            xml.push_str("    </testcase>\n");
        }
        xml.push_str("  </testsuite>\n");
    }
    xml.push_str("</testsuites>\n");
    xml
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_references_are_named_by_their_repository() {
        assert_eq!(
            registry_name("registry://ghcr.io/org/catalog-union:v0.1.0"),
            "catalog-union"
        );
        assert_eq!(
            registry_name("registry://localhost:5000/og-intersection@sha256:abc"),
            "og-intersection"
        );
    }

    #[test]
    fn bare_settings_files_are_refused_with_the_fix() {
        let err = settings_by_module(&["cu.yaml".into()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--settings cu.yaml: with several modules, say which module the settings are for: --settings <module>=cu.yaml"
        );
    }
}
