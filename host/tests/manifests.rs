//! The Kubewarden manifests in `deploy/`: written byte for byte by
//! `olm-guard scaffold` from the modules in dist/ (build them with `make
//! dist`), valid against the `openAPIV3Schema` of Kubewarden's CRDs
//! (`testdata/upstream/crds`, copied verbatim from kubewarden-controller), and
//! granting each module exactly its metadata's rules, resources and host
//! capabilities, which are the capabilities its scenarios call.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;

use serde_json::{Value, json};

use olm_guard_evaluator::input;
use olm_guard_evaluator::scenario::{self, PolicyStore};
use olm_guard_rules::registry;
use olm_guard_runtime::{Limits, Metadata, Runtime};
use olm_guard_snapshot::{LoadOptions, Snapshot};

mod common;
use common::{dist, olm_guard, root, upstream};

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The module argument for `name`: relative to the repository (where the
/// binary runs), so that failure messages show the command to type.
fn module_arg(name: &str) -> String {
    let module = dist().join(format!("{name}.wasm"));
    match module.strip_prefix(root()) {
        Ok(relative) => relative.display().to_string(),
        Err(_) => module.display().to_string(),
    }
}

/// The command that writes `deploy/kubewarden/<name>.yaml`.
fn manifest_command(name: &str) -> Vec<String> {
    [
        "scaffold",
        "manifest",
        "--type",
        "ClusterAdmissionPolicy",
        "--allow-context-aware",
    ]
    .into_iter()
    .map(String::from)
    .chain([module_arg(name)])
    .collect()
}

/// The command that writes `deploy/policies.yml`.
fn policies_command() -> Vec<String> {
    ["scaffold", "policies"]
        .into_iter()
        .map(String::from)
        .chain(registry::names().map(module_arg))
        .collect()
}

fn generate(args: &[String]) -> String {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = olm_guard(&args);
    assert!(
        output.status.success(),
        "olm-guard {}: {}",
        args.join(" "),
        stderr(&output)
    );
    stdout(&output)
}

fn deploy(file: &str) -> PathBuf {
    root().join("deploy").join(file)
}

fn read_yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The metadata embedded in a module of dist/.
fn embedded_metadata(name: &str) -> Metadata {
    let wasm = std::fs::read(dist().join(format!("{name}.wasm"))).unwrap();
    Metadata::from_module(&wasm)
        .unwrap()
        .unwrap_or_else(|| panic!("dist/{name}.wasm is not annotated: run make dist"))
}

/// Every file in deploy/ is what the generator writes now, and there is no
/// other file.
#[test]
fn deploy_files_are_what_scaffold_writes() {
    let mut expected: BTreeSet<String> = BTreeSet::new();
    let mut files: Vec<(String, Vec<String>)> = registry::names()
        .map(|name| (format!("kubewarden/{name}.yaml"), manifest_command(name)))
        .collect();
    files.push(("policies.yml".into(), policies_command()));
    for (file, command) in &files {
        expected.insert(file.clone());
        let committed = std::fs::read_to_string(deploy(file)).unwrap_or_default();
        let now = generate(command);
        assert!(
            committed == now,
            "deploy/{file} differs from what the generator writes now: run `make deploy` \
             (olm-guard {} --output-file deploy/{file}) and commit the result",
            command.join(" ")
        );
    }
    // Written by hand, not generated: the verification config a
    // policy-server is started with (tests/signing.rs reads it).
    expected.insert("verification-config.yml".into());
    // Written by hand: the RBAC of `audit` (tests/control_plane.rs) and of
    // policy-server (crates/conformance/tests/webhook.rs).
    expected.insert("audit-rbac.yaml".into());
    expected.insert("kubewarden/policy-server-rbac.yaml".into());
    // deploy/native*/ are the native policies' (tests/native.rs).
    let files_of = |dir: &str| -> Vec<String> {
        std::fs::read_dir(root().join("deploy").join(dir))
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.path().is_file())
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                if dir.is_empty() {
                    name
                } else {
                    format!("{dir}/{name}")
                }
            })
            .collect()
    };
    let present: BTreeSet<String> = files_of("")
        .into_iter()
        .chain(files_of("kubewarden"))
        .collect();
    assert_eq!(
        present, expected,
        "deploy/kubewarden/ holds exactly one manifest per registered rule and policy-server's \
         RBAC (so that `kubectl apply -f deploy/kubewarden/` installs the policies), deploy/ \
         policies.yml and the files written by hand"
    );
}

/// The `openAPIV3Schema` of version `v1` of the CRD in `file`, made strict
/// as the API server's strict field validation is (`kubectl apply
/// --validate=strict`): an object schema with `properties` and without
/// `x-kubernetes-preserve-unknown-fields` admits no other field.
fn crd_schema(file: &str) -> Value {
    let crd = read_yaml(&upstream(&format!("crds/{file}")));
    let version = crd["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "v1")
        .unwrap_or_else(|| panic!("{file} has no version v1"));
    let mut schema = version["schema"]["openAPIV3Schema"].clone();
    strict(&mut schema);
    schema
}

fn strict(schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if object.contains_key("properties")
        && !object.contains_key("additionalProperties")
        && object.get("x-kubernetes-preserve-unknown-fields") != Some(&json!(true))
    {
        object.insert("additionalProperties".into(), json!(false));
    }
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        properties.values_mut().for_each(strict);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(nested) = object.get_mut(key) {
            strict(nested);
        }
    }
}

/// The schema violations of `manifest`, one line each.
fn violations(schema: &Value, manifest: &Value) -> Vec<String> {
    let validator = jsonschema::draft4::new(schema).expect("the CRD schema compiles");
    let mut found: Vec<String> = validator
        .iter_errors(manifest)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    // The CRD leaves metadata to the API server; check what it would.
    if !manifest["metadata"]["name"].is_string() {
        found.push("/metadata/name: missing".into());
    }
    found
}

struct Schemas {
    cluster: Value,
    namespaced: Value,
}

/// The Kubewarden CRDs (`policies.kubewarden.io`), from `testdata/upstream`.
fn schemas() -> Schemas {
    Schemas {
        cluster: crd_schema("policies.kubewarden.io_clusteradmissionpolicies.yaml"),
        namespaced: crd_schema("policies.kubewarden.io_admissionpolicies.yaml"),
    }
}

#[test]
fn deploy_manifests_match_the_crds() {
    let schemas = schemas();
    for name in registry::names() {
        let manifest = read_yaml(&deploy(&format!("kubewarden/{name}.yaml")));
        assert_eq!(manifest["kind"], "ClusterAdmissionPolicy");
        assert_eq!(manifest["apiVersion"], "policies.kubewarden.io/v1");
        let found = violations(&schemas.cluster, &manifest);
        assert!(
            found.is_empty(),
            "deploy/kubewarden/{name}.yaml: {found:#?}"
        );
    }
}

#[test]
fn a_scaffolded_admission_policy_matches_its_crd() {
    let schemas = schemas();
    for name in registry::names() {
        let module = module_arg(name);
        let output = olm_guard(&[
            "scaffold",
            "manifest",
            "-t",
            "AdmissionPolicy",
            "--namespace",
            "team-a",
            &module,
        ]);
        assert!(output.status.success(), "{name}: {}", stderr(&output));
        let manifest: Value = serde_yaml_ng::from_str(&stdout(&output)).unwrap();
        assert_eq!(manifest["kind"], "AdmissionPolicy");
        assert_eq!(manifest["metadata"]["namespace"], "team-a");
        let found = violations(&schemas.namespaced, &manifest);
        assert!(found.is_empty(), "{name}: {found:#?}");
        // Namespaced policies can never be context aware: the author is told.
        let reads = !embedded_metadata(name).context_aware_resources.is_empty();
        assert_eq!(
            stderr(&output).contains("An AdmissionPolicy cannot be context aware"),
            reads,
            "{name}: {}",
            stderr(&output)
        );
    }
}

/// A way to break a manifest.
type Breakage = fn(&mut Value);

/// The validation can fail: the manifests pass because they are right.
#[test]
fn the_schema_check_catches_broken_manifests() {
    let schemas = schemas();
    let good = read_yaml(&deploy("kubewarden/og-intersection.yaml"));
    assert!(violations(&schemas.cluster, &good).is_empty());
    let broken: [(&str, Breakage); 5] = [
        ("a misspelt field", |m| {
            let module = m["spec"]["module"].take();
            m["spec"]["modul"] = module;
        }),
        ("no module", |m| {
            m["spec"].as_object_mut().unwrap().remove("module");
        }),
        ("a mode outside the enum", |m| {
            m["spec"]["mode"] = json!("enforce")
        }),
        ("rules that are not a list", |m| {
            m["spec"]["rules"] = json!("all")
        }),
        ("a resource without kind", |m| {
            m["spec"]["contextAwareResources"][0]
                .as_object_mut()
                .unwrap()
                .remove("kind");
        }),
    ];
    for (what, breaks) in broken {
        let mut manifest = good.clone();
        breaks(&mut manifest);
        assert!(
            !violations(&schemas.cluster, &manifest).is_empty(),
            "{what} passed the schema"
        );
    }
    // An AdmissionPolicy has no contextAwareResources.
    let mut namespaced = good.clone();
    namespaced["kind"] = json!("AdmissionPolicy");
    assert!(!violations(&schemas.namespaced, &namespaced).is_empty());
}

/// Each manifest sends its policy the requests its metadata asks for, and
/// grants the resources it reads.
#[test]
fn manifests_carry_each_modules_metadata() {
    for name in registry::names() {
        let manifest = read_yaml(&deploy(&format!("kubewarden/{name}.yaml")));
        let source: Value =
            serde_yaml_ng::from_str(registry::find(name).unwrap().metadata_yaml).unwrap();
        let embedded = serde_json::to_value(embedded_metadata(name)).unwrap();
        for metadata in [&source, &embedded] {
            assert_eq!(
                manifest["spec"]["rules"], metadata["rules"],
                "{name}: rules"
            );
            assert_eq!(manifest["spec"]["mutating"], metadata["mutating"], "{name}");
            assert_eq!(
                set(&manifest["spec"]["contextAwareResources"]),
                set(&metadata["contextAwareResources"]),
                "{name}: contextAwareResources"
            );
            let audit = metadata["backgroundAudit"].as_bool().unwrap_or(true);
            assert_eq!(
                manifest["spec"]["backgroundAudit"]
                    .as_bool()
                    .unwrap_or(true),
                audit,
                "{name}: backgroundAudit"
            );
        }
        let annotations = &embedded["annotations"];
        assert_eq!(
            manifest["spec"]["module"],
            format!(
                "registry://{}:v{}",
                annotations["io.kubewarden.policy.ociUrl"].as_str().unwrap(),
                annotations["io.kubewarden.policy.version"]
                    .as_str()
                    .unwrap()
            )
        );
        assert_eq!(manifest["metadata"]["name"], name);
        assert_eq!(
            manifest["spec"]["settings"],
            registry::find(name).unwrap().default_settings()
        );
    }
}

fn set(list: &Value) -> BTreeSet<String> {
    list.as_array()
        .map(|items| items.iter().map(Value::to_string).collect())
        .unwrap_or_default()
}

/// The fields policy-server reads from a single-policy entry
/// (kubewarden/kubewarden-controller, `crates/policy-server/src/config.rs`).
const POLICY_FIELDS: &[&str] = &[
    "module",
    "policyMode",
    "allowedToMutate",
    "settings",
    "contextAwareResources",
    "message",
    "timeoutEvalSeconds",
    "hostCapabilities",
];

/// `deploy/policies.yml` has one well-formed entry per module, granting
/// exactly its metadata, with settings its module accepts.
#[test]
fn policies_yml_grants_each_module_its_metadata() {
    let policies = read_yaml(&deploy("policies.yml"));
    let policies = policies.as_object().expect("policies.yml is a mapping");
    let names: BTreeSet<&str> = policies.keys().map(String::as_str).collect();
    assert_eq!(names, registry::names().collect());
    let runtime = Runtime::new(Limits::default()).unwrap();
    let mut store = PolicyStore::new(&runtime, dist());
    for (name, entry) in policies {
        assert!(
            !name.contains('/'),
            "policy IDs may not contain '/': {name}"
        );
        let entry = entry
            .as_object()
            .unwrap_or_else(|| panic!("{name} is not a mapping"));
        for key in entry.keys() {
            assert!(
                POLICY_FIELDS.contains(&key.as_str()),
                "{name}: unknown field {key}"
            );
        }
        let metadata = serde_json::to_value(embedded_metadata(name)).unwrap();
        let module = entry["module"].as_str().expect("module is a string");
        assert!(module.starts_with("registry://"), "{name}: {module}");
        assert_eq!(entry["policyMode"], "protect", "{name}");
        assert_eq!(
            entry
                .get("allowedToMutate")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            metadata["mutating"].as_bool().unwrap(),
            "{name}: allowedToMutate"
        );
        assert_eq!(
            set(&entry["contextAwareResources"]),
            set(&metadata["contextAwareResources"]),
            "{name}: contextAwareResources"
        );
        let granted = set(&entry["hostCapabilities"]);
        assert_eq!(
            granted,
            set(&metadata["hostCapabilities"]),
            "{name}: hostCapabilities"
        );
        for capability in &granted {
            assert!(
                known_capability(capability.trim_matches('"')),
                "{name}: policy-server rejects the capability {capability}"
            );
        }
        let settings = entry["settings"].clone();
        assert!(settings.is_object(), "{name}: settings is a mapping");
        store
            .get(name)
            .unwrap()
            .validate_settings(&settings)
            .unwrap_or_else(|e| panic!("{name}: the module refuses its settings: {e}"));
    }
}

/// The capability patterns policy-server parses
/// (`crates/policy-evaluator/src/host_capabilities.rs`): `*`, a namespace
/// or versioned prefix with `/*`, or an exact operation.
fn known_capability(pattern: &str) -> bool {
    const EXACT: &[&str] = &[
        "kubernetes/list_resources_by_namespace",
        "kubernetes/list_resources_all",
        "kubernetes/get_resource",
        "kubernetes/can_i",
        "oci/v1/manifest_digest",
        "oci/v1/oci_manifest",
        "oci/v1/oci_manifest_config",
        "oci/v1/verify",
        "oci/v2/verify",
        "net/v1/dns_lookup_host",
        "crypto/v1/is_certificate_trusted",
    ];
    match pattern.strip_suffix("/*") {
        _ if pattern == "*" => true,
        Some(prefix) => EXACT.iter().any(|e| e.starts_with(&format!("{prefix}/"))),
        None => EXACT.contains(&pattern),
    }
}

/// What each module calls on the scenarios is what policies.yml grants it:
/// nothing more is granted, and nothing it needs is missing.
#[test]
fn policies_yml_grants_what_the_scenarios_call() {
    let policies = read_yaml(&deploy("policies.yml"));
    let runtime = Runtime::new(Limits::default()).unwrap();
    let mut store = PolicyStore::new(&runtime, dist());
    let mut called: BTreeMap<String, BTreeSet<String>> = registry::names()
        .map(|name| (name.to_string(), BTreeSet::new()))
        .collect();
    for dir in scenario::discover(&[root().join("testdata")]).unwrap() {
        let expect = input::read_document(&dir.join("expect.json")).unwrap();
        if expect.get("settings_error_contains").is_some() {
            continue;
        }
        let name = expect["policy"].as_str().unwrap().to_string();
        let settings_path = dir.join("settings.json");
        let settings = input::settings_object(
            settings_path
                .is_file()
                .then(|| input::read_document(&settings_path).unwrap()),
        )
        .unwrap();
        let request =
            input::admission_request(input::read_document(&dir.join("request.json")).unwrap())
                .unwrap();
        let mut snapshot = Snapshot::new();
        let cluster = dir.join("cluster.yaml");
        if cluster.is_file() {
            let text = std::fs::read_to_string(&cluster).unwrap();
            snapshot
                .add_source("cluster.yaml", &text, LoadOptions::STRICT)
                .unwrap();
        }
        let evaluation = store
            .get(&name)
            .unwrap()
            .validate(&request, &settings, Arc::new(snapshot))
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        called
            .get_mut(&name)
            .unwrap_or_else(|| panic!("{}: unknown policy {name}", dir.display()))
            .extend(evaluation.calls.into_iter().map(|call| call.capability));
    }
    for (name, called) in called {
        let granted: BTreeSet<String> = policies[&name]["hostCapabilities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            called, granted,
            "{name}: called on the scenarios vs granted"
        );
    }
}

#[test]
fn context_aware_resources_need_the_flag_as_in_kwctl() {
    let output = olm_guard(&[
        "scaffold",
        "manifest",
        "--type",
        "ClusterAdmissionPolicy",
        &module_arg("og-intersection"),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!stdout(&output).contains("contextAwareResources"));
    assert!(
        stderr(&output).contains("pass --allow-context-aware"),
        "{}",
        stderr(&output)
    );
    // A module that reads nothing needs no flag and gets no warning.
    let output = olm_guard(&[
        "scaffold",
        "manifest",
        "--type",
        "ClusterAdmissionPolicy",
        "catalog-union",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).is_empty(), "{}", stderr(&output));
}

#[test]
fn names_settings_module_and_output_can_be_chosen() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.yaml");
    std::fs::write(&settings, "allowLegacy: true\n").unwrap();
    let out = dir.path().join("policy.yaml");
    let output = olm_guard(&[
        "scaffold",
        "manifest",
        "--type",
        "ClusterAdmissionPolicy",
        "--title",
        "catalogs",
        "--settings-path",
        settings.to_str().unwrap(),
        "--module-url",
        "file:///opt/catalog-union.wasm",
        "--output-file",
        out.to_str().unwrap(),
        &module_arg("catalog-union"),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).is_empty());
    let manifest = read_yaml(&out);
    assert_eq!(manifest["metadata"]["name"], "catalogs");
    assert_eq!(manifest["spec"]["settings"], json!({"allowLegacy": true}));
    assert_eq!(manifest["spec"]["module"], "file:///opt/catalog-union.wasm");
}

/// Every refusal is one line naming what is wrong and the fix.
#[test]
fn refusals_are_one_line_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("bare.wasm");
    std::fs::write(&bare, wat::parse_str("(module)").unwrap()).unwrap();
    let bare = bare.display().to_string();
    let cases: [(&[&str], &str); 5] = [
        (
            &[
                "scaffold",
                "manifest",
                "-t",
                "ClusterAdmissionPolicy",
                "no-such-policy",
            ],
            "its modules are aggregation-escalation, catalog-union,",
        ),
        (
            &[
                "scaffold",
                "manifest",
                "-t",
                "ClusterAdmissionPolicy",
                &bare,
            ],
            "annotate it first",
        ),
        (
            &[
                "scaffold",
                "manifest",
                "-t",
                "ClusterAdmissionPolicy",
                "--namespace",
                "team-a",
                "catalog-union",
            ],
            "use --type AdmissionPolicy",
        ),
        (
            &[
                "scaffold",
                "manifest",
                "-t",
                "AdmissionPolicy",
                "--title",
                "Catalog_Union",
                "catalog-union",
            ],
            "RFC 1123",
        ),
        (&["scaffold", "policies", &bare], "annotate it first"),
    ];
    for (args, fix) in cases {
        let output = olm_guard(args);
        let text = stderr(&output);
        assert!(!output.status.success(), "{args:?} succeeded");
        assert!(text.contains(fix), "{args:?}: {text}");
        assert_eq!(text.trim_end().lines().count(), 1, "{args:?}: {text}");
    }
    let output = olm_guard(&["scaffold", "manifest", "-t", "Policy", "catalog-union"]);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("use ClusterAdmissionPolicy or AdmissionPolicy"),
        "{}",
        stderr(&output)
    );
}
