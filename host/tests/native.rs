//! `olm-guard scaffold vap` and `deploy/native/`: the files are what the
//! generator writes now (run `make deploy` after changing a rule), the docs'
//! table is the generator's, and bad input is refused with one line.

use std::collections::BTreeSet;
use std::path::Path;

mod common;
use common::{olm_guard, root};

fn files(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn deploy_native_is_what_scaffold_vap_writes() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("native");
    let output = olm_guard(&[
        "scaffold",
        "vap",
        "all",
        "--output-dir",
        dir.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{output:?}");
    let committed = root().join("deploy/native");
    assert_eq!(
        files(&committed),
        files(&dir),
        "deploy/native/ holds other files than `olm-guard scaffold vap all` writes: run make deploy"
    );
    for file in files(&dir) {
        let now = std::fs::read_to_string(dir.join(&file)).unwrap();
        let then = std::fs::read_to_string(committed.join(&file)).unwrap_or_default();
        assert!(
            now == then,
            "deploy/native/{file} differs from what `olm-guard scaffold vap all --output-dir deploy/native` \
             writes now: run make deploy and commit the result"
        );
    }
    // og-intersection has no native form, and says so.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("skipped: og-intersection has no native form"),
        "{stderr}"
    );
}

#[test]
fn the_docs_tables_are_the_generators() {
    let output = olm_guard(&["scaffold", "vap", "--table"]);
    assert!(output.status.success(), "{output:?}");
    let table = String::from_utf8_lossy(&output.stdout);
    let docs = std::fs::read_to_string(root().join("docs/native.md")).unwrap();
    assert!(
        docs.contains(table.trim()),
        "docs/native.md does not hold the table `olm-guard scaffold vap --table` prints: paste \
         it in"
    );
    for rule in olm_guard_rules::registry::names() {
        assert!(
            table.contains(&format!("| `{rule}` |")),
            "{rule} is not in the table"
        );
    }
    let sizes = olm_guard(&["scaffold", "vap", "all", "--sizes"]);
    assert!(sizes.status.success(), "{sizes:?}");
    let sizes = String::from_utf8_lossy(&sizes.stdout);
    assert!(
        sizes.starts_with(
            "| policy | YAML bytes | YAML lines | variables | validations | messageExpressions |"
        ) && sizes.contains("| olm-guard-catalog-union |"),
        "{sizes}"
    );
    assert!(
        docs.contains(sizes.trim()),
        "docs/native.md does not hold the table `olm-guard scaffold vap all --sizes` prints: \
         paste it in"
    );
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let unknown = olm_guard(&["scaffold", "vap", "catalog-unoin"]);
    assert_eq!(unknown.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("unknown rule \"catalog-unoin\""),
        "{stderr}"
    );

    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("s.yaml");
    std::fs::write(&settings, "allowlegacy: false\n").unwrap();
    let pair = format!("catalog-union={}", settings.display());
    let refused = olm_guard(&["scaffold", "vap", "catalog-union", "--settings", &pair]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("catalog-union: the settings are invalid")
            && stderr.contains("allowlegacy"),
        "{stderr}"
    );

    // A bare file is one rule's; with several, which one must be said.
    let malformed = olm_guard(&[
        "scaffold",
        "vap",
        "catalog-union",
        "group-authorization",
        "--settings",
        "s.yaml",
    ]);
    assert_eq!(malformed.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&malformed.stderr).contains("--settings <module>=s.yaml"),
        "{}",
        String::from_utf8_lossy(&malformed.stderr)
    );
}

#[test]
fn settings_only_the_module_honours_are_skipped_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("s.yaml");
    std::fs::write(&settings, "autoIncrementRevision: true\n").unwrap();
    let pair = format!("revision-uniqueness={}", settings.display());
    let alone = olm_guard(&[
        "scaffold",
        "vap",
        "revision-uniqueness",
        "--settings",
        &pair,
    ]);
    // Nothing asked for could be written: a refused request, exit 2.
    assert_eq!(alone.status.code(), Some(2), "{alone:?}");
    assert!(alone.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&alone.stderr);
    assert!(
        stderr.contains("autoIncrementRevision: true cannot be enforced natively")
            && stderr.contains("nothing written"),
        "{stderr}"
    );
    let og = olm_guard(&["scaffold", "vap", "og-intersection"]);
    assert_eq!(og.status.code(), Some(2), "{og:?}");
    // Beside a rule that has a native form, the skip is normal.
    let both = olm_guard(&["scaffold", "vap", "og-intersection", "catalog-union"]);
    assert!(both.status.success(), "{both:?}");
    assert!(!both.stdout.is_empty());
}

/// `backfillGroupFromLabel` and `migrateLegacy` get a
/// MutatingAdmissionPolicy and its binding, in the API version the
/// cluster serves; a cluster that serves none is refused.
#[test]
fn mutations_get_a_mutating_admission_policy_in_the_version_the_cluster_serves() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("s.yaml");
    std::fs::write(
        &settings,
        "requireSpecGroup: true\nbackfillGroupFromLabel: true\n",
    )
    .unwrap();
    let pair = format!("group-authorization={}", settings.display());
    let printed = olm_guard(&[
        "scaffold",
        "vap",
        "group-authorization",
        "--settings",
        &pair,
    ]);
    assert!(printed.status.success(), "{printed:?}");
    let stdout = String::from_utf8_lossy(&printed.stdout);
    assert!(
        stdout.contains("kind: MutatingAdmissionPolicy\n")
            && stdout.contains("kind: MutatingAdmissionPolicyBinding\n")
            && stdout.contains("apiVersion: admissionregistration.k8s.io/v1\nkind: Mutating"),
        "{stdout}"
    );

    // kubectl api-resources -o wide of a 1.35 cluster with the beta API.
    let table = dir.path().join("api-resources.txt");
    std::fs::write(
        &table,
        "NAME                            SHORTNAMES   APIVERSION                             NAMESPACED   KIND                             VERBS\n\
         mutatingadmissionpolicies                    admissionregistration.k8s.io/v1beta1   false        MutatingAdmissionPolicy          create,delete,get,list\n\
         validatingadmissionpolicies                  admissionregistration.k8s.io/v1        false        ValidatingAdmissionPolicy        create,delete,get,list\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let beta = olm_guard(&[
        "scaffold",
        "vap",
        "group-authorization",
        "--settings",
        &pair,
        "--api-resources",
        table.to_str().unwrap(),
        "--output-dir",
        out.to_str().unwrap(),
    ]);
    assert!(beta.status.success(), "{beta:?}");
    let mutating = std::fs::read_to_string(out.join("group-authorization.mutating.yaml")).unwrap();
    assert!(
        mutating.contains(
            "apiVersion: admissionregistration.k8s.io/v1beta1\nkind: MutatingAdmissionPolicy\n"
        ),
        "{mutating}"
    );
    assert!(String::from_utf8_lossy(&beta.stderr).contains("Kubernetes 1.34 and 1.35"));
    // The flag wins over the table.
    let forced = olm_guard(&[
        "scaffold",
        "vap",
        "group-authorization",
        "--settings",
        &pair,
        "--api-resources",
        table.to_str().unwrap(),
        "--mutating-api-version",
        "v1",
    ]);
    assert!(
        String::from_utf8_lossy(&forced.stdout).contains(
            "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingAdmissionPolicy\n"
        )
    );

    // A 1.33 cluster serves none: refused, saying what to do.
    std::fs::write(
        &table,
        "NAME                            SHORTNAMES   APIVERSION                             NAMESPACED   KIND                             VERBS\n\
         validatingadmissionpolicies                  admissionregistration.k8s.io/v1        false        ValidatingAdmissionPolicy        create,delete,get,list\n",
    )
    .unwrap();
    let none = olm_guard(&[
        "scaffold",
        "vap",
        "group-authorization",
        "--settings",
        &pair,
        "--api-resources",
        table.to_str().unwrap(),
    ]);
    assert_eq!(none.status.code(), Some(2), "{none:?}");
    let stderr = String::from_utf8_lossy(&none.stderr);
    assert!(
        stderr.contains("serves no MutatingAdmissionPolicy") && stderr.contains("run the module"),
        "{stderr}"
    );

    // The roll-out form: a warning policy in the mutation's place.
    let warn = olm_guard(&[
        "scaffold",
        "vap",
        "group-authorization",
        "--settings",
        &pair,
        "--actions",
        "warn",
    ]);
    let stdout = String::from_utf8_lossy(&warn.stdout);
    assert!(
        !stdout.contains("kind: MutatingAdmissionPolicy"),
        "{stdout}"
    );
    assert!(
        stdout.contains("name: olm-guard-group-authorization-backfill-preview"),
        "{stdout}"
    );
}

/// catalog-union's migration writes the union members of `spec`, which
/// OLM's CatalogSource CRD of today prunes (and then refuses every legacy
/// write): refused for that CRD, written for one that has them, written
/// with a warning when the user says the cluster's will.
#[test]
fn the_migration_is_refused_for_a_catalog_source_crd_without_the_union_members() {
    let dir = tempfile::tempdir().unwrap();
    let migrate = dir.path().join("migrate.yaml");
    std::fs::write(&migrate, "migrateLegacy: true\n").unwrap();
    let pair = format!("catalog-union={}", migrate.display());
    let shipped = root().join("crates/native/upstream/operators.coreos.com_catalogsources.yaml");
    let run = |extra: &[&str]| {
        let mut args = vec!["scaffold", "vap", "catalog-union", "--settings", &pair];
        args.extend_from_slice(extra);
        olm_guard(&args)
    };
    for refused in [run(&[]), run(&["--crd", shipped.to_str().unwrap()])] {
        assert_eq!(refused.status.code(), Some(2), "{refused:?}");
        assert!(refused.stdout.is_empty());
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains(
                "migrateLegacy writes spec.catalogImageSource, spec.catalogServiceSource, \
                 spec.configMapSource"
            ) && stderr.contains("spec.sourceType: Required value")
                && stderr.contains(
                    "--crd <(kubectl get crd catalogsources.operators.coreos.com -o yaml)"
                )
                && stderr.contains("--assume-union-crd"),
            "{stderr}"
        );
    }
    // The roll-out form changes nothing: it is written for today's CRD.
    let warn = run(&["--actions", "warn"]);
    assert!(warn.status.success(), "{warn:?}");

    // A CRD with the members (the enhancement's schema).
    let text = std::fs::read_to_string(&shipped).unwrap();
    let mut crd: serde_json::Value = serde_yaml_ng::from_str(&text).unwrap();
    for version in crd["spec"]["versions"].as_array_mut().unwrap() {
        let spec = &mut version["schema"]["openAPIV3Schema"]["properties"]["spec"];
        for member in [
            "catalogImageSource",
            "catalogServiceSource",
            "configMapSource",
        ] {
            spec["properties"][member] =
                serde_json::json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        }
    }
    let union = dir.path().join("union-crd.yaml");
    std::fs::write(&union, serde_yaml_ng::to_string(&crd).unwrap()).unwrap();
    let written = run(&["--crd", union.to_str().unwrap()]);
    assert!(written.status.success(), "{written:?}");
    assert!(String::from_utf8_lossy(&written.stdout).contains("kind: MutatingAdmissionPolicy\n"));
    assert!(written.stderr.is_empty(), "{written:?}");

    let assumed = run(&["--assume-union-crd"]);
    assert!(assumed.status.success(), "{assumed:?}");
    assert!(String::from_utf8_lossy(&assumed.stdout).contains("kind: MutatingAdmissionPolicy\n"));
    let stderr = String::from_utf8_lossy(&assumed.stderr);
    assert!(
        stderr.starts_with("olm-guard: WARNING: catalog-union's migrateLegacy writes")
            && stderr
                .contains("apply catalog-union.mutating.yaml only on a cluster whose CRD has them"),
        "{stderr}"
    );
}

/// A file argument may be a pipe, as the shell's `<(...)` gives one: the
/// README's `--api-resources <(kubectl api-resources -o wide)`, read by
/// scaffold vap both to check it and to take the version it lists.
#[test]
fn a_discovery_table_given_as_a_pipe_is_read_once() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("api-resources.txt");
    std::fs::write(
        &table,
        "NAME                            SHORTNAMES   APIVERSION                             NAMESPACED   KIND                             VERBS\n\
         mutatingadmissionpolicies                    admissionregistration.k8s.io/v1        false        MutatingAdmissionPolicy          create,delete,get,list\n",
    )
    .unwrap();
    let settings = dir.path().join("s.yaml");
    std::fs::write(
        &settings,
        "requireSpecGroup: true\nbackfillGroupFromLabel: true\n",
    )
    .unwrap();
    let script = format!(
        "\"$OLM_GUARD\" scaffold vap group-authorization --settings group-authorization={} \
         --api-resources <(cat {})",
        settings.display(),
        table.display()
    );
    let piped = std::process::Command::new("bash")
        .args(["-c", &script])
        .env("OLM_GUARD", env!("CARGO_BIN_EXE_olm-guard"))
        .output()
        .unwrap();
    assert!(piped.status.success(), "{piped:?}");
    assert!(
        String::from_utf8_lossy(&piped.stdout).contains(
            "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingAdmissionPolicy\n"
        )
    );
    // `/dev/stdin`, a pipe too.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_olm-guard"))
        .args(["scaffold", "vap", "group-authorization", "--settings"])
        .arg(format!("group-authorization={}", settings.display()))
        .args(["--api-resources", "/dev/stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(
        &mut child.stdin.take().unwrap(),
        &std::fs::read(&table).unwrap(),
    )
    .unwrap();
    let stdin = child.wait_with_output().unwrap();
    assert!(stdin.status.success(), "{stdin:?}");
}

#[test]
fn deploy_native_mutating_is_what_scaffold_vap_writes_for_it() {
    let committed = root().join("deploy/native-mutating");
    let out = tempfile::tempdir().unwrap();
    let settings = |rule: &str| {
        format!(
            "{rule}={}",
            committed.join(format!("{rule}.settings.yaml")).display()
        )
    };
    let output = olm_guard(&[
        "scaffold",
        "vap",
        "group-authorization",
        "catalog-union",
        "--settings",
        &settings("group-authorization"),
        "--settings",
        &settings("catalog-union"),
        "--assume-union-crd",
        "--output-dir",
        out.path().to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{output:?}");
    let mut written = files(out.path());
    written.insert("group-authorization.settings.yaml".into());
    written.insert("catalog-union.settings.yaml".into());
    assert_eq!(
        files(&committed),
        written,
        "deploy/native-mutating/ holds other files than scaffold vap writes: run make deploy"
    );
    for file in files(out.path()) {
        let now = std::fs::read_to_string(out.path().join(&file)).unwrap();
        let then = std::fs::read_to_string(committed.join(&file)).unwrap_or_default();
        assert!(
            now == then,
            "deploy/native-mutating/{file} is stale: run make deploy"
        );
    }
}

#[test]
fn deploy_native_spec_group_is_what_scaffold_vap_writes_for_it() {
    let committed = root().join("deploy/native-spec-group");
    let out = tempfile::tempdir().unwrap();
    let settings = format!(
        "group-authorization={}",
        committed.join("settings.yaml").display()
    );
    let output = olm_guard(&[
        "scaffold",
        "vap",
        "group-authorization",
        "--settings",
        &settings,
        "--output-dir",
        out.path().to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{output:?}");
    let mut written = files(out.path());
    written.insert("settings.yaml".into());
    assert_eq!(
        files(&committed),
        written,
        "deploy/native-spec-group/ holds other files than scaffold vap writes: run make deploy"
    );
    for file in files(out.path()) {
        let now = std::fs::read_to_string(out.path().join(&file)).unwrap();
        let then = std::fs::read_to_string(committed.join(&file)).unwrap_or_default();
        assert!(
            now == then,
            "deploy/native-spec-group/{file} is stale: run make deploy"
        );
    }
    // The order to apply the patches in, one line each.
    let stderr = String::from_utf8_lossy(&output.stderr);
    let steps: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("group-authorization.crd-patch-"))
        .collect();
    assert_eq!(steps.len(), 3, "{stderr}");
    assert!(steps[0].starts_with("group-authorization.crd-patch-1-field.json: first"));
    assert!(steps[1].starts_with("group-authorization.crd-patch-2-immutable.json: second"));
    assert!(steps[2].starts_with("group-authorization.crd-patch-3-required.json: last"));
}

#[test]
fn crd_patches_are_written_against_the_crd_given_and_keep_its_rules() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("require.yaml");
    std::fs::write(&settings, "requireSpecGroup: true\n").unwrap();
    let pair = format!("group-authorization={}", settings.display());
    // A cluster's CRD that already has spec.group and a rule on spec.
    let crd = dir.path().join("crd.yaml");
    std::fs::write(
        &crd,
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
         metadata: {name: clusterobjectsets.olm.operatorframework.io}\n\
         spec:\n  versions:\n  - name: v1\n    schema:\n      openAPIV3Schema:\n        \
         properties:\n          spec:\n            type: object\n            properties:\n              \
         group: {type: string}\n            x-kubernetes-validations:\n            \
         - {rule: 'has(self.revision)', message: revision}\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let output = olm_guard(&[
        "scaffold",
        "vap",
        "group-authorization",
        "--settings",
        &pair,
        "--crd",
        crd.to_str().unwrap(),
        "--output-dir",
        out.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{output:?}");
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(out.join(name)).unwrap()).unwrap()
    };
    // The field exists: nothing to add, and the step says so.
    assert_eq!(
        read("group-authorization.crd-patch-1-field.json"),
        serde_json::json!([])
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("the CRD given") && stderr.contains("nothing to apply"),
        "{stderr}"
    );
    // The rules are appended to the CRD's list, never replacing it.
    let immutable = read("group-authorization.crd-patch-2-immutable.json");
    assert_eq!(
        immutable[0]["path"],
        "/spec/versions/0/schema/openAPIV3Schema/properties/spec/x-kubernetes-validations/-"
    );
    assert_eq!(immutable[0]["op"], "add");

    // A file that is not a CRD is refused in one line, exit 2.
    let namespace = dir.path().join("ns.yaml");
    std::fs::write(
        &namespace,
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n",
    )
    .unwrap();
    let refused = olm_guard(&[
        "scaffold",
        "vap",
        "group-authorization",
        "--settings",
        &pair,
        "--crd",
        namespace.to_str().unwrap(),
    ]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("a Namespace, not a CustomResourceDefinition"),
        "{stderr}"
    );

    // The default settings need no CRD patch: the label is the group.
    let default = olm_guard(&[
        "scaffold",
        "vap",
        "group-authorization",
        "--output-dir",
        out.to_str().unwrap(),
    ]);
    assert!(default.status.success(), "{default:?}");
    assert!(!String::from_utf8_lossy(&default.stderr).contains("crd-patch"));
}

#[test]
fn actions_warn_writes_the_roll_out_form() {
    let out = tempfile::tempdir().unwrap();
    let output = olm_guard(&[
        "scaffold",
        "vap",
        "all",
        "--actions",
        "warn",
        "--output-dir",
        out.path().to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{output:?}");
    let written = files(out.path());
    assert!(
        written.iter().all(|f| f.ends_with(".yaml")),
        "a CRD patch has no warn-only form: {written:?}"
    );
    for file in &written {
        let text = std::fs::read_to_string(out.path().join(file)).unwrap();
        assert!(text.contains("--actions warn"), "{file}");
        let mut bindings = 0;
        for document in serde_yaml_ng::Deserializer::from_str(&text) {
            let value: serde_json::Value = serde::Deserialize::deserialize(document).unwrap();
            if value["kind"] == "ValidatingAdmissionPolicyBinding" {
                bindings += 1;
                let actions = &value["spec"]["validationActions"];
                assert!(
                    actions == &serde_json::json!(["Warn", "Audit"])
                        || actions == &serde_json::json!(["Warn"]),
                    "{file}: {actions}"
                );
            }
        }
        assert!(bindings > 0, "{file}");
    }
}
