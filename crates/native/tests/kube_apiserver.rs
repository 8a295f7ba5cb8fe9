//! Every generated policy and CRD patch, asked of Kubernetes' own code
//! (`olm_guard_kube_harness`: `k8s.io/apiserver` and
//! `k8s.io/apiextensions-apiserver` v0.36, built from
//! `crates/kube-harness/go`):
//!
//! - every ValidatingAdmissionPolicy and binding the generator writes (each
//!   rule with its defaults and each setting its native form honours, the
//!   `--actions warn` forms, `deploy/native/` and
//!   `deploy/native-spec-group/` as shipped) compiled as the API server
//!   compiles a policy it is asked to create, in the environment of every
//!   Kubernetes version from 1.30 to 1.36, with no error, and type-checked
//!   against the CRDs' published schemas as the policy's
//!   `status.typeChecking` would be;
//! - every CRD patch, applied in order to the CRD it targets, accepted by
//!   the API server's CRD update validation (structural schema, rule
//!   compilation, the per-rule and per-CRD estimated cost limits), its rules
//!   compiling in every version from 1.30 to 1.36;
//! - and the same code refusing what it refuses, so that none of the above
//!   can pass by checking nothing.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Value, json};

use olm_guard_kube_harness::{COMPATIBILITY_VERSIONS, Compiled, KubeHarness};
use olm_guard_native::crd;
use olm_guard_native::model::MutatingApiVersion;

use common::{crds_for, root, yaml_documents};

/// One object to compile: what to call it, the object, the CRDs of the
/// cluster it is applied to, the Kubernetes versions that serve it.
type ToCompile = (String, Value, Vec<Value>, &'static [&'static str]);

/// The versions that serve MutatingAdmissionPolicy: v1beta1 on 1.34 and
/// 1.35 (with the feature gate), v1 from 1.36.
const MUTATING_VERSIONS: [&str; 3] = ["1.34", "1.35", "1.36"];

/// What was compiled, for the summary line and the floors.
#[derive(Default)]
struct Tally {
    policies: usize,
    mutating: usize,
    bindings: usize,
    expressions: usize,
    type_checked: usize,
    problems: Vec<String>,
}

impl Tally {
    fn add(&mut self, (what, object, _, versions): &ToCompile, compiled: &Compiled) {
        for version in versions.iter() {
            let errors = compiled.errors.get(*version).cloned().unwrap_or_default();
            for error in errors {
                self.problems
                    .push(format!("{what} on Kubernetes {version}: {error}"));
            }
        }
        for warning in &compiled.type_checking {
            self.problems.push(format!(
                "{what}: status.typeChecking: {}: {}",
                warning.field_ref, warning.warning
            ));
        }
        match object["kind"].as_str() {
            Some("ValidatingAdmissionPolicy") => {
                self.policies += 1;
                let spec = &object["spec"];
                self.expressions += ["matchConditions", "variables"]
                    .iter()
                    .map(|k| spec[k].as_array().map_or(0, Vec::len))
                    .sum::<usize>();
                for v in spec["validations"].as_array().into_iter().flatten() {
                    self.expressions += 1 + usize::from(v.get("messageExpression").is_some());
                }
                if !compiled.type_checked_kinds.is_empty() {
                    self.type_checked += 1;
                }
            }
            Some("MutatingAdmissionPolicy") => self.mutating += 1,
            _ => self.bindings += 1,
        }
    }
}

/// Every object, each once, compiled by two harnesses at once (the type
/// checker compiles each expression with every variable: seconds for the
/// largest policy).
fn compile_all(mut objects: Vec<ToCompile>) -> Vec<(ToCompile, Compiled)> {
    let mut seen = std::collections::HashSet::new();
    objects.retain(|(_, object, crds, _)| seen.insert(json!([object, crds]).to_string()));
    let half = objects.len().div_ceil(2);
    let (first, second) = objects.split_at(half);
    std::thread::scope(|scope| {
        let run = |part: &[ToCompile]| -> Vec<(ToCompile, Compiled)> {
            let mut kube = KubeHarness::start().unwrap_or_else(|e| panic!("{e}"));
            part.iter()
                .map(|item| {
                    let compiled = kube
                        .compile(&item.1, item.3, &item.2)
                        .unwrap_or_else(|e| panic!("{}: {e}", item.0));
                    (item.clone(), compiled)
                })
                .collect::<Vec<_>>()
        };
        let other = scope.spawn(move || run(second));
        let mut done = run(first);
        done.extend(other.join().unwrap());
        done
    })
}

#[test]
fn every_generated_policy_compiles_in_kubernetes_1_30_to_1_36() {
    let mut objects: Vec<ToCompile> = Vec::new();
    // Type-checked against the CRDs: each rule's default form and the
    // requireSpecGroup one (what deploy/ holds); the other settings forms
    // are compiled in every version (the checker builds the kind's whole
    // declared type for every expression: about five seconds an expression
    // against the CatalogSource CRD).
    let forms = common::every_native_form();
    let checked: Vec<bool> = common::every_native_form_settings()
        .iter()
        .map(|s| {
            s.is_null()
                || *s == json!({"requireSpecGroup": true})
                || *s == json!({"requireSpecGroup": true, "backfillGroupFromLabel": true})
                || *s == json!({"migrateLegacy": true})
        })
        .collect();
    for (native, type_check) in forms.iter().zip(checked) {
        let crds = if type_check {
            crds_for(Some(native))
        } else {
            Vec::new()
        };
        let warn = native.clone().warn_only();
        for (form, bound) in native
            .policies
            .iter()
            .map(|b| ("", b))
            .chain(warn.policies.iter().map(|b| (" (--actions warn)", b)))
        {
            let name = &bound.policy.metadata.name;
            let policy = serde_json::to_value(&bound.policy).unwrap();
            let binding = serde_json::to_value(&bound.binding).unwrap();
            objects.push((
                format!("{name}{form}"),
                policy,
                crds.clone(),
                &COMPATIBILITY_VERSIONS,
            ));
            objects.push((
                format!("{name}{form} binding"),
                binding,
                crds.clone(),
                &COMPATIBILITY_VERSIONS,
            ));
        }
        for bound in &native.mutations {
            for version in [MutatingApiVersion::V1, MutatingApiVersion::V1Beta1] {
                let bound = bound.clone().in_version(version);
                let name = format!("{} ({})", bound.policy.metadata.name, version.as_str());
                let policy = serde_json::to_value(&bound.policy).unwrap();
                let binding = serde_json::to_value(&bound.binding).unwrap();
                objects.push((name.clone(), policy, Vec::new(), &MUTATING_VERSIONS));
                objects.push((
                    format!("{name} binding"),
                    binding,
                    Vec::new(),
                    &MUTATING_VERSIONS,
                ));
            }
        }
    }
    // The files users apply, as shipped.
    for dir in [
        "deploy/native",
        "deploy/native-spec-group",
        "deploy/native-mutating",
    ] {
        let spec_group = !dir.ends_with("native");
        let native = spec_group.then(|| {
            olm_guard_native::generate(
                "group-authorization",
                &json!({"requireSpecGroup": true}),
                None,
            )
            .unwrap()
        });
        let migrate = dir.ends_with("mutating").then(|| {
            olm_guard_native::generate("catalog-union", &json!({"migrateLegacy": true}), None)
                .unwrap()
        });
        let crds = crds_for(native.as_ref());
        let union_crds = crds_for(migrate.as_ref().or(native.as_ref()));
        let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.extension().is_some_and(|e| e == "yaml")
                    && !p.to_string_lossy().ends_with("settings.yaml")
            })
            .collect();
        files.sort();
        for file in files {
            for document in yaml_documents(&file) {
                let what = format!(
                    "{} {}",
                    file.strip_prefix(root()).unwrap_or(&file).display(),
                    document["metadata"]["name"].as_str().unwrap_or("?")
                );
                let versions: &'static [&'static str] = if document["kind"]
                    .as_str()
                    .is_some_and(|k| k.starts_with("Mutating"))
                {
                    &MUTATING_VERSIONS
                } else {
                    &COMPATIBILITY_VERSIONS
                };
                let crds = if file.to_string_lossy().contains("catalog-union") {
                    union_crds.clone()
                } else {
                    crds.clone()
                };
                objects.push((what, document, crds, versions));
            }
        }
    }
    let mut tally = Tally::default();
    for (item, compiled) in compile_all(objects) {
        tally.add(&item, &compiled);
    }
    assert!(
        tally.problems.is_empty(),
        "Kubernetes would refuse or warn about {} generated objects:\n{}",
        tally.problems.len(),
        tally.problems.join("\n")
    );
    println!(
        "kube-apiserver 1.30-1.36: {} distinct policies ({} expressions) and {} bindings compile \
         with no error; {} policies type-checked against their CRD's schema with no warning; \
         {} MutatingAdmissionPolicies compile in 1.34-1.36",
        tally.policies, tally.expressions, tally.bindings, tally.type_checked, tally.mutating
    );
    assert!(
        tally.mutating >= 4,
        "the mutating policies were not compiled"
    );
    assert!(
        tally.policies >= 20 && tally.expressions >= 800,
        "fewer policies than generated"
    );
    assert!(
        tally.type_checked >= 15,
        "the type checker found no schema: it checked nothing"
    );
}

/// The CRD patches of every form (and the files in `deploy/`), applied one
/// after the other as a cluster applies them, each accepted as an update of
/// the CRD before it.
#[test]
fn every_crd_patch_is_accepted_by_the_api_server_as_a_crd_update() {
    let mut kube = KubeHarness::start().unwrap_or_else(|e| panic!("{e}"));
    let mut problems = Vec::new();
    let (mut updates, mut rules) = (0, 0);
    // What the CRD before the patch already fails to compile (the shipped
    // ClusterObjectSet CRD's own rules use the format library, 1.31+) is
    // the CRD's, not the patch's: only what the patch adds is counted.
    let mut floors: BTreeMap<String, String> = BTreeMap::new();
    let mut accept = |what: &str, old: &Value, new: &Value, problems: &mut Vec<String>| {
        let answer = kube
            .crd_update(old, new, &COMPATIBILITY_VERSIONS)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let before = kube
            .crd_update(old, old, &COMPATIBILITY_VERSIONS)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        updates += 1;
        rules = rules.max(answer.rules);
        problems.extend(answer.errors.iter().map(|e| format!("{what}: {e}")));
        for (version, errors) in &answer.rule_errors {
            let known = &before.rule_errors[version];
            problems.extend(
                errors
                    .iter()
                    .filter(|e| !known.contains(e))
                    .map(|e| format!("{what} on Kubernetes {version}: {e}")),
            );
        }
        let name = old["metadata"]["name"].as_str().unwrap_or("?").to_string();
        if let Some(needs) = COMPATIBILITY_VERSIONS
            .iter()
            .find(|v| before.rule_errors[**v].is_empty())
        {
            floors.insert(name, needs.to_string());
        }
    };
    for native in common::every_native_form() {
        let mut current: Vec<(String, Value)> = Vec::new();
        for patch in &native.schema_patches {
            if !current.iter().any(|(name, _)| *name == patch.crd) {
                let upstream = crd::find(&patch.crd, None).unwrap().document;
                // The upstream CRD itself, as the cluster has it.
                accept(
                    &format!("{} as shipped", patch.crd),
                    &upstream,
                    &upstream,
                    &mut problems,
                );
                current.push((patch.crd.clone(), upstream));
            }
            let (_, document) = current.iter_mut().find(|(n, _)| *n == patch.crd).unwrap();
            let before = document.clone();
            common::apply_patch(document, &patch.patch, &patch.file);
            accept(&patch.file, &before, document, &mut problems);
        }
    }
    // deploy/: the files, each CRD's in the order their names give.
    for dir in [
        "deploy/native",
        "deploy/native-spec-group",
        "deploy/native-mutating",
    ] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".json"))
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no CRD patch in {dir}");
        for (prefix, target) in [
            ("catalog-union", "catalogsources.operators.coreos.com"),
            (
                "group-authorization",
                "clusterobjectsets.olm.operatorframework.io",
            ),
        ] {
            let mut document = crd::find(target, None).unwrap().document;
            for file in files.iter().filter(|f| {
                f.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
            }) {
                let patch: Value =
                    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
                let before = document.clone();
                common::apply_patch(&mut document, &patch, &file.display().to_string());
                accept(
                    &file.display().to_string(),
                    &before,
                    &document,
                    &mut problems,
                );
            }
        }
    }
    assert!(
        problems.is_empty(),
        "the API server would refuse {} CRD updates:\n{}",
        problems.len(),
        problems.join("\n")
    );
    println!(
        "kube-apiserver: {updates} CRD updates accepted; up to {rules} x-kubernetes-validations \
         rules per CRD; the patches' rules compile wherever the CRD's own do: {floors:?}"
    );
    assert!(updates >= 8 && rules >= 10, "too few CRD updates checked");
}

fn policy_with(spec: Value) -> Value {
    let mut spec = spec;
    spec["failurePolicy"] = json!("Fail");
    spec["matchConstraints"] = json!({"resourceRules": [{
        "apiGroups": ["olm.operatorframework.io"], "apiVersions": ["v1"],
        "operations": ["CREATE"], "resources": ["clusterobjectsets"]}]});
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "wrong"},
        "spec": spec,
    })
}

/// The API server's compiler refuses, for every version, a wrong overload,
/// a request field that does not exist, a variable used as another type, a
/// variable in a match condition, the authorizer in a message, a list
/// literal of two types, among them `dyn` and `string` (the mistake that
/// kept `deploy/native/scope-rbac.yaml` out of every cluster); a library
/// newer than the version is refused there and taken from it on; and the
/// type checker flags a field the CRD does not have.
#[test]
fn the_api_servers_compiler_refuses_what_it_refuses() {
    let mut kube = KubeHarness::start().unwrap_or_else(|e| panic!("{e}"));
    let errors_of = |kube: &mut KubeHarness, spec: Value| {
        kube.compile(&policy_with(spec), &COMPATIBILITY_VERSIONS, &[])
            .unwrap()
            .errors
    };
    let wrong = [
        (
            "overload",
            json!({"validations": [{"expression": "size(1, 2) == 0"}]}),
        ),
        (
            "request field",
            json!({"validations": [{"expression": "request.userInfo.usrname == 'a'"}]}),
        ),
        (
            "variable type",
            json!({"variables": [{"name": "n", "expression": "size(object.spec)"}],
            "validations": [{"expression": "variables.n.startsWith('a')"}]}),
        ),
        (
            "variable in a match condition",
            json!({"variables": [{"name": "n", "expression": "1"}],
            "matchConditions": [{"name": "m", "expression": "variables.n > 0"}],
            "validations": [{"expression": "true"}]}),
        ),
        (
            "authorizer in a message",
            json!({"validations": [{"expression": "true",
            "messageExpression": "authorizer.group('').resource('pods').check('get').allowed() ? 'a' : 'b'"}]}),
        ),
        (
            "int and string",
            json!({"validations": [{"expression": "size([1, 'a']) == 2"}]}),
        ),
        (
            "dyn and string",
            json!({"validations": [{"expression": "[object.kind, 'a'].join('/') != ''"}]}),
        ),
        (
            "not a bool",
            json!({"validations": [{"expression": "'yes'"}]}),
        ),
    ];
    for (what, spec) in wrong {
        let errors = errors_of(&mut kube, spec);
        for version in COMPATIBILITY_VERSIONS {
            assert!(
                !errors[version].is_empty(),
                "{what}: Kubernetes {version} compiled it: {errors:?}"
            );
        }
    }
    // The same literal with its parts converted compiles everywhere.
    let fixed = errors_of(
        &mut kube,
        json!({"validations": [{"expression": "[string(object.kind), 'a'].join('/') != ''"}]}),
    );
    assert!(fixed.values().all(Vec::is_empty), "{fixed:?}");
    // The semver library is in the environment from 1.33 on.
    let semver = errors_of(
        &mut kube,
        json!({"validations": [{"expression": "isSemver('1.2.3')"}]}),
    );
    for version in COMPATIBILITY_VERSIONS {
        let minor: u32 = version[2..].parse().unwrap();
        assert_eq!(
            semver[version].is_empty(),
            minor >= 33,
            "{version}: {semver:?}"
        );
    }
    // The type checker reads the CRD's schema: a misspelt field is flagged.
    let crds = crds_for(None);
    let typo = kube
        .compile(
            &policy_with(json!({"validations": [{"expression": "object.spec.revison > 0"}]})),
            &COMPATIBILITY_VERSIONS,
            &crds,
        )
        .unwrap();
    assert!(typo.errors.values().all(Vec::is_empty));
    assert_eq!(typo.type_checking.len(), 1, "{typo:?}");
    assert!(
        typo.type_checking[0].warning.contains("revison"),
        "{typo:?}"
    );

    // A binding that both denies and warns is refused.
    let binding = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "b"},
        "spec": {"policyName": "wrong", "validationActions": ["Deny", "Warn"]},
    });
    let answer = kube.compile(&binding, &["1.36"], &[]).unwrap();
    assert_eq!(answer.errors["1.36"].len(), 1, "{answer:?}");

    // A CRD rule that does not compile, and one over the cost limit, are
    // refused as a CRD update.
    let upstream = crd::find("catalogsources.operators.coreos.com", None)
        .unwrap()
        .document;
    let spec = "/spec/versions/0/schema/openAPIV3Schema/properties/spec";
    for (what, rule) in [
        (
            "a field the schema lacks",
            json!({"rule": "self.adress == ''"}),
        ),
        (
            "over the cost limit",
            json!({"rule":
            "self.secrets.all(a, self.secrets.all(b, self.secrets.all(c, a + b + c != '')))"}),
        ),
    ] {
        let mut patched = upstream.clone();
        common::apply_patch(
            &mut patched,
            &json!([{"op": "add", "path": format!("{spec}/x-kubernetes-validations"), "value": [rule]}]),
            what,
        );
        let answer = kube.crd_update(&upstream, &patched, &["1.36"]).unwrap();
        assert!(!answer.errors.is_empty(), "{what}: accepted: {answer:?}");
    }
}
