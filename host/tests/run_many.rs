//! `olm-guard run` with several modules: would this install pass? OLM's own
//! quickstart manifest, a deliberately conflicting pair of OperatorGroups
//! and a real operator bundle, each through the built binary and every
//! real module in `dist/`: routing by the modules' metadata rules, the
//! documents admitted in order into a growing snapshot, the outputs and
//! the exit codes.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

mod common;
use common::{dist, root};

fn olm_guard(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_olm-guard"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("olm-guard runs")
}

/// `run` with `--dist` set to the built modules (wherever they are);
/// without `--cluster`, against an empty cluster on purpose
/// (`--no-cluster`: an install on a fresh cluster).
fn run(args: &[&str]) -> Output {
    let dist = dist().display().to_string();
    let mut all = vec!["run", "--dist", dist.as_str()];
    all.extend_from_slice(args);
    if !args.contains(&"--cluster") {
        all.push("--no-cluster");
    }
    olm_guard(&all)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The AdmissionReviews on stdout: one JSON document, a List of one per
/// (object, module).
fn reviews(output: &Output) -> Vec<Value> {
    assert!(
        output.status.success(),
        "exit {:?}: {}",
        output.status.code(),
        text(&output.stderr)
    );
    common::json_items(&output.stdout)
}

/// Each review as `(document, module, allowed)`, the document as the
/// file's basename and document number.
fn verdicts(reviews: &[Value]) -> Vec<(String, String, bool)> {
    reviews
        .iter()
        .map(|r| {
            let source = r["source"].as_str().unwrap();
            let file = Path::new(source.split(':').next().unwrap())
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let at = source.split_once(": ").unwrap().1;
            (
                format!("{file}: {at}"),
                r["policy"].as_str().unwrap().to_string(),
                r["response"]["allowed"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn owned(expected: &[(&str, &str, bool)]) -> Vec<(String, String, bool)> {
    expected
        .iter()
        .map(|(d, p, a)| (d.to_string(), p.to_string(), *a))
        .collect()
}

const QUICKSTART: &str = "examples/preflight/quickstart-olm.yaml";
const CONFLICT: &str = "examples/preflight/conflicting-operatorgroups.yaml";
const BUNDLE: &str = "examples/bundles/memcached-operator";

/// `run all` on OLM's quickstart manifest as a cluster admin, with
/// catalog-union told (by name) to migrate legacy CatalogSources, and `extra`
/// arguments.
fn quickstart_by_an_admin(extra: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("cu.yaml");
    std::fs::write(&settings, "migrateLegacy: true\n").unwrap();
    let settings = format!("catalog-union={}", settings.display());
    let mut args = vec![
        "all",
        "--object",
        QUICKSTART,
        "--user",
        "kubernetes-admin",
        "--group",
        "system:masters",
        "--settings",
        &settings,
    ];
    args.extend_from_slice(extra);
    run(&args)
}

/// OLM's quickstart manifest through every module: each document reaches
/// only the modules whose rules cover it (no routing warning), in document
/// order; the CatalogSource is migrated by catalog-union, with the settings
/// given to it by name.
#[test]
fn the_quickstart_reaches_only_the_modules_whose_rules_cover_each_document() {
    let output = quickstart_by_an_admin(&["-o", "json"]);
    let stderr = text(&output.stderr);
    let reviews = reviews(&output);
    assert_eq!(
        verdicts(&reviews),
        owned(&[
            (
                "quickstart-olm.yaml: document 4",
                "aggregation-escalation",
                true
            ),
            (
                "quickstart-olm.yaml: document 8",
                "aggregation-escalation",
                true
            ),
            (
                "quickstart-olm.yaml: document 9",
                "aggregation-escalation",
                true
            ),
            ("quickstart-olm.yaml: document 10", "og-intersection", true),
            ("quickstart-olm.yaml: document 11", "og-intersection", true),
            ("quickstart-olm.yaml: document 12", "og-intersection", true),
            ("quickstart-olm.yaml: document 13", "catalog-union", true),
        ])
    );
    assert!(!stderr.contains("would not send"), "{stderr}");
    assert!(
        stderr.contains(
            "13 objects, 7 evaluations: 7 allowed, 0 denied; 6 objects no module applies to"
        ),
        "{stderr}"
    );
    let catalog = &reviews[6];
    assert_eq!(catalog["response"]["patchType"], "JSONPatch");
    assert_eq!(
        catalog["patchedObject"]["spec"]["catalogImageSource"]["catalogImage"],
        "quay.io/operatorhubio/catalog:latest"
    );
    assert_eq!(catalog["operation"], "CREATE");
}

/// The table: a block per document in order, `(none)` for the objects no
/// rule covers, the verdict and the message's first line (a mutation and
/// its first warning), the counts per module (the audit's table).
#[test]
fn the_quickstart_table_lists_every_document_and_module() {
    let output = quickstart_by_an_admin(&[]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let table = text(&output.stdout);
    let blocks: Vec<&str> = table
        .split("\n\n")
        .filter(|b| b.contains("quickstart-olm.yaml"))
        .collect();
    assert_eq!(blocks.len(), 13, "{table}");
    assert!(
        blocks[0].starts_with(
            "Namespace olm  (examples/preflight/quickstart-olm.yaml: document 1)\n(none)"
        ),
        "{}",
        blocks[0]
    );
    assert!(
        blocks[0].contains("skip    no module's rules cover CREATE v1/namespaces"),
        "{}",
        blocks[0]
    );
    assert!(
        blocks[9].starts_with("OperatorGroup operators/global-operators"),
        "{}",
        blocks[9]
    );
    assert!(
        blocks[9].contains("og-intersection         pass"),
        "{}",
        blocks[9]
    );
    assert!(
        blocks[12].contains("catalog-union           warn    mutated ("),
        "{}",
        blocks[12]
    );
    assert!(
        table.contains("SUMMARY                  pass  fail  warn error  skip"),
        "{table}"
    );
    let summary = table.split("SUMMARY").nth(1).unwrap();
    assert!(
        !summary.contains("(none)"),
        "(none) is counted nowhere: {table}"
    );
    assert!(
        summary.contains("\naggregation-escalation      3     0     0     0     0\n"),
        "{table}"
    );
}

/// Two OperatorGroups that each pass alone: applied together, the second is
/// judged with the first in the snapshot and denied; `--independent` judges
/// each alone; `--fail-on-deny` turns the denial into exit 1.
#[test]
fn a_conflicting_operatorgroup_pair_is_caught_because_the_first_joins_the_snapshot() {
    let together = reviews(&run(&["all", "--object", CONFLICT, "-o", "json"]));
    assert_eq!(
        verdicts(&together),
        owned(&[
            (
                "conflicting-operatorgroups.yaml: document 3",
                "og-intersection",
                true
            ),
            (
                "conflicting-operatorgroups.yaml: document 4",
                "og-intersection",
                false
            ),
        ])
    );
    let message = together[1]["response"]["status"]["message"]
        .as_str()
        .unwrap();
    assert!(message.contains("nginx-a"), "{message}");
    assert!(
        message.contains("NginxIngressController.v1alpha1.k8s.nginx.org"),
        "{message}"
    );

    let alone = reviews(&run(&[
        "all",
        "--object",
        CONFLICT,
        "--independent",
        "-o",
        "json",
    ]));
    assert!(verdicts(&alone).iter().all(|(_, _, allowed)| *allowed));

    let gate = run(&["all", "--object", CONFLICT, "--fail-on-deny"]);
    assert_eq!(gate.status.code(), Some(1), "{}", text(&gate.stderr));
    let table = text(&gate.stdout);
    assert!(
        table.contains("OperatorGroup nginx-b/nginx-b  (examples/preflight/conflicting-operatorgroups.yaml: document 4)\nog-intersection         fail"),
        "{table}"
    );
    let stderr = text(&gate.stderr);
    assert!(
        stderr.contains("olm-guard: 1 evaluation denied (--fail-on-deny)"),
        "{stderr}"
    );
}

/// A second OperatorGroup in the same namespace
/// and file is checked against the first (OLM's TooManyOperatorGroups); the
/// namespace comes from -n for objects that name none.
#[test]
fn a_second_operatorgroup_in_the_same_namespace_is_checked_against_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("two.yaml");
    std::fs::write(
        &file,
        "apiVersion: operators.coreos.com/v1\nkind: OperatorGroup\nmetadata: {name: first}\n---\n\
         apiVersion: operators.coreos.com/v1\nkind: OperatorGroup\nmetadata: {name: second}\n",
    )
    .unwrap();
    let file = file.display().to_string();
    let output = run(&[
        "og-intersection",
        "catalog-union",
        "--object",
        &file,
        "-n",
        "team-a",
        "-o",
        "json",
    ]);
    let reviews = reviews(&output);
    assert_eq!(reviews.len(), 2, "{reviews:?}");
    assert_eq!(reviews[0]["response"]["allowed"], true);
    assert_eq!(reviews[1]["response"]["allowed"], false);
    let message = reviews[1]["response"]["status"]["message"]
        .as_str()
        .unwrap();
    assert!(message.contains("TooManyOperatorGroups"), "{message}");
    assert!(message.contains("first"), "{message}");
    // One module alone on the same file: the same rule (each document sees
    // the ones before it), the same verdicts.
    let alone = run(&[
        "og-intersection",
        "--object",
        &file,
        "-n",
        "team-a",
        "-o",
        "json",
    ]);
    assert_eq!(verdicts(&self::reviews(&alone)), verdicts(&reviews));
    let gate = run(&[
        "og-intersection",
        "--object",
        &file,
        "-n",
        "team-a",
        "--fail-on-deny",
    ]);
    assert_eq!(gate.status.code(), Some(1), "{}", text(&gate.stderr));
}

/// One module on a manifest of many kinds: the documents its rules do not
/// cover are one line (how many, which kinds), each listed with -v.
#[test]
fn one_module_sums_up_the_documents_its_rules_do_not_cover() {
    let quickstart = "examples/preflight/quickstart-olm.yaml";
    let output = run(&["catalog-union", "--object", quickstart]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let table = text(&output.stdout);
    assert!(
        table.contains(
            "\n12 documents not covered by catalog-union's rules (policy-server would not send \
             them): Namespace ×2, ServiceAccount, ClusterRole ×3, ClusterRoleBinding, \
             Deployment ×2, OperatorGroup ×2, ClusterServiceVersion; -v lists them\n"
        ),
        "{table}"
    );
    assert!(!table.contains("(none)"), "{table}");
    assert!(
        !text(&output.stderr).contains("would not send"),
        "{}",
        text(&output.stderr)
    );
    assert!(table.lines().count() < 12, "{table}");
    let verbose = text(&run(&["catalog-union", "--object", quickstart, "-v"]).stdout);
    assert_eq!(verbose.matches("(none)").count(), 12, "{verbose}");
}

/// An object the snapshot already holds is an UPDATE of it, as `kubectl
/// apply` sends it: the quickstart applied over itself updates every
/// object, and an UPDATE of an unchanged OperatorGroup is allowed.
#[test]
fn objects_already_in_the_cluster_are_updates() {
    let reviews = reviews(&run(&[
        "og-intersection",
        "catalog-union",
        "--object",
        QUICKSTART,
        "--cluster",
        QUICKSTART,
        "-o",
        "json",
    ]));
    assert_eq!(reviews.len(), 4);
    for review in &reviews {
        assert_eq!(review["operation"], "UPDATE", "{review}");
        assert_eq!(review["response"]["allowed"], true, "{review}");
    }
}

/// YAML: one document, the List of one AdmissionReview per pair, as
/// `-o json` prints it.
#[test]
fn yaml_prints_one_review_per_object_and_module() {
    let output = run(&["all", "--object", CONFLICT, "-o", "yaml"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let documents = common::yaml_items(&output.stdout);
    assert_eq!(documents.len(), 2);
    assert_eq!(documents[1]["kind"], "AdmissionReview");
    assert_eq!(documents[1]["policy"], "og-intersection");
    assert_eq!(documents[1]["response"]["allowed"], false);
}

/// JUnit: a suite per document, a case per module, the denial a failure.
#[test]
fn junit_has_a_case_per_object_and_module() {
    let output = run(&["all", "--object", CONFLICT, "-o", "junit"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let xml = text(&output.stdout);
    assert!(
        xml.contains("<testsuites name=\"olm-guard run\" tests=\"2\" failures=\"1\" errors=\"0\">"),
        "{xml}"
    );
    assert!(
        xml.contains("<testsuite name=\"OperatorGroup nginx-b/nginx-b (examples/preflight/conflicting-operatorgroups.yaml: document 4)\" tests=\"1\" failures=\"1\" errors=\"0\">"),
        "{xml}"
    );
    assert!(
        xml.contains("<testcase name=\"og-intersection\" classname=\"OperatorGroup nginx-b/nginx-b\">\n      <failure message=\""),
        "{xml}"
    );
    assert_eq!(xml.matches("<testcase ").count(), 2, "{xml}");
    assert_eq!(xml.matches("</testcase>").count(), 2, "{xml}");
}

/// Bad input stops the run with exit 2 and one line that names the file
/// and document, or the flag, and the fix.
#[test]
fn bad_input_is_one_line_naming_the_document_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let kindless = dir.path().join("kindless.yaml");
    std::fs::write(
        &kindless,
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nmetadata: {name: b}\n",
    )
    .unwrap();
    let kindless = kindless.display().to_string();
    let cases: [(&[&str], String); 4] = [
        (
            &["all", "--object", &kindless],
            format!("{kindless}: document 2"),
        ),
        (
            &["all", "--object", CONFLICT, "--settings", "cu.yaml"],
            "--settings cu.yaml: with several modules, say which module the settings are for: --settings <module>=cu.yaml".into(),
        ),
        (
            &["og-intersection", "no-such-module", "--object", CONFLICT],
            "no module \"no-such-module\"".into(),
        ),
        (
            &["all", "--bundle", "examples/preflight", "-n", "operators"],
            "examples/preflight: not a registry+v1 bundle: examples/preflight/metadata/annotations.yaml is missing".into(),
        ),
    ];
    for (args, expected) in cases {
        let output = run(args);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(&expected), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?}");
    }
}

/// A real registry+v1 bundle (operator-framework/api's memcached sample):
/// its CRD and CSV are admitted in the target namespace, CRD first; the CSV
/// is judged against the namespace's OperatorGroup, given first, and is
/// denied when another global group already provides its API.
#[test]
fn a_bundle_is_judged_as_olm_would_create_it_in_the_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let group = dir.path().join("og.yaml");
    std::fs::write(
        &group,
        "apiVersion: operators.coreos.com/v1\nkind: OperatorGroup\nmetadata: {name: global, namespace: memcached}\n",
    )
    .unwrap();
    let group = group.display().to_string();
    let output = run(&[
        "all",
        "--object",
        &group,
        "--bundle",
        BUNDLE,
        "-n",
        "memcached",
        "-o",
        "json",
    ]);
    let stderr = text(&output.stderr);
    let first = reviews(&output);
    assert_eq!(
        verdicts(&first),
        owned(&[
            ("og.yaml: document 1", "og-intersection", true),
            (
                "memcached-operator.clusterserviceversion.yaml: document 1",
                "og-intersection",
                true
            ),
        ])
    );
    assert!(stderr.contains("3 objects, 2 evaluations"), "{stderr}");
    assert!(!stderr.contains("NoOperatorGroup"), "{stderr}");

    // Another global group already provides the CSV's API.
    let rival = dir.path().join("rival.yaml");
    std::fs::write(
        &rival,
        "apiVersion: operators.coreos.com/v1\nkind: OperatorGroup\nmetadata:\n  name: rival\n  namespace: other\n  \
         annotations: {olm.providedAPIs: Memcached.v1alpha1.cache.example.com}\n",
    )
    .unwrap();
    let rival = rival.display().to_string();
    let output = run(&[
        "all",
        "--cluster",
        &rival,
        "--object",
        &group,
        "--bundle",
        BUNDLE,
        "-n",
        "memcached",
        "-o",
        "json",
    ]);
    let reviews = reviews(&output);
    let csv = reviews.last().unwrap();
    assert_eq!(csv["response"]["allowed"], false, "{csv}");
    let message = csv["response"]["status"]["message"].as_str().unwrap();
    assert!(
        message.contains("Memcached.v1alpha1.cache.example.com"),
        "{message}"
    );

    // Without an OperatorGroup OLM would not install it: in the report, and
    // a failure with --fail-on-deny, as a suite's `bundle:` case fails.
    let output = run(&["all", "--bundle", BUNDLE, "-n", "memcached"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let said = "OLM would not install the bundle's CSV: namespace memcached has no OperatorGroup \
                in the snapshot (reason NoOperatorGroup); give one with --cluster or --object";
    let stderr = text(&output.stderr);
    assert!(stderr.contains(said), "{stderr}");
    let table = text(&output.stdout);
    assert!(table.contains(&format!("\n{said}\n")), "{table}");
    let gate = run(&[
        "all",
        "--bundle",
        BUNDLE,
        "-n",
        "memcached",
        "--fail-on-deny",
    ]);
    assert_eq!(gate.status.code(), Some(1), "{}", text(&gate.stderr));
    assert!(
        text(&gate.stderr)
            .contains("OLM would not install the bundle (NoOperatorGroup) (--fail-on-deny)"),
        "{}",
        text(&gate.stderr)
    );
    let json = run(&["all", "--bundle", BUNDLE, "-n", "memcached", "-o", "json"]);
    let document: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        document["wouldNotInstall"],
        serde_json::json!([{"reason": "NoOperatorGroup", "message": said}])
    );
    let junit = text(&run(&["all", "--bundle", BUNDLE, "-n", "memcached", "-o", "junit"]).stdout);
    assert!(
        junit.contains("tests=\"2\" failures=\"1\" errors=\"0\"")
            && junit.contains("<testcase name=\"NoOperatorGroup\" classname=\"OLM install\">"),
        "{junit}"
    );
    // The same bundle as a suite case: the same verdict, the same exit status.
    let suite = dir.path().join("suite.yaml");
    std::fs::write(
        &suite,
        format!(
            "kind: TestSuite\nname: no group\nmodules: all\ncases:\n\
             - name: memcached without an OperatorGroup\n  bundle: {}\n  namespace: memcached\n  \
             expect: {{result: pass}}\n",
            root().join(BUNDLE).display()
        ),
    )
    .unwrap();
    let dist = dist().display().to_string();
    let case = olm_guard(&["test", "--dist", &dist, suite.to_str().unwrap()]);
    assert_eq!(case.status.code(), Some(1), "{case:?}");
    assert!(
        text(&case.stdout).contains("reason NoOperatorGroup"),
        "{case:?}"
    );
    assert!(
        table.contains("CustomResourceDefinition memcacheds.cache.example.com  ("),
        "{table}"
    );
    assert!(
        table.contains("ClusterServiceVersion memcached/memcached-operator.v0.0.1  ("),
        "{table}"
    );
}

/// Two mutating modules on one object: group-authorization (first by name)
/// fills spec.group in, and revision-uniqueness is sent the object with it
/// and numbers the revision; the patched object joins the snapshot, so the
/// next revision of the same file gets the next number.
#[test]
fn mutating_modules_chain_their_patches_in_name_order() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let revision = |name: &str| {
        format!(
            "apiVersion: olm.operatorframework.io/v1\nkind: ClusterObjectSet\nmetadata:\n  name: {name}\n  \
             labels: {{olm.operatorframework.io/owner-name: argocd-operator}}\nspec:\n  lifecycleState: Active\n  \
             phases: [{{name: deploy, objects: [{{ref: {{name: {name}-deploy, namespace: olmv1-system, key: deployment}}}}]}}]\n"
        )
    };
    let objects = write(
        "revisions.yaml",
        &format!(
            "{}---\n{}",
            revision("argocd-operator-next"),
            revision("argocd-operator-after")
        ),
    );
    let ga = format!(
        "group-authorization={}",
        write(
            "ga.yaml",
            "requireSpecGroup: true\nbackfillGroupFromLabel: true\n"
        )
    );
    let ru = format!(
        "revision-uniqueness={}",
        write("ru.yaml", "autoIncrementRevision: true\n")
    );
    let rbac = root()
        .join("testdata/group-authorization/backfill-create-mutated/cluster.yaml")
        .display()
        .to_string();
    let revisions = root()
        .join("testdata/revision-uniqueness/auto-increment-label-only-group/cluster.yaml")
        .display()
        .to_string();
    let args = [
        "revision-uniqueness",
        "group-authorization",
        "--object",
        &objects,
        "--cluster",
        &rbac,
        "--cluster",
        &revisions,
        "--settings",
        &ga,
        "--settings",
        &ru,
        "--user",
        "system:serviceaccount:olmv1-system:operator-controller-controller-manager",
        "--group",
        "system:serviceaccounts",
        "--group",
        "system:serviceaccounts:olmv1-system",
    ];
    let mut json = args.to_vec();
    json.extend(["-o", "json"]);
    let reviews = reviews(&run(&json));
    let order: Vec<(&str, &str)> = reviews
        .iter()
        .map(|r| {
            (
                r["source"].as_str().unwrap().rsplit(": ").next().unwrap(),
                r["policy"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("document 1", "group-authorization"),
            ("document 1", "revision-uniqueness"),
            ("document 2", "group-authorization"),
            ("document 2", "revision-uniqueness"),
        ]
    );
    for review in &reviews {
        assert_eq!(review["response"]["allowed"], true, "{review}");
        assert_eq!(review["response"]["patchType"], "JSONPatch", "{review}");
    }
    // revision-uniqueness was sent group-authorization's patched object.
    assert_eq!(
        reviews[1]["patchedObject"]["spec"]["group"],
        "argocd-operator"
    );
    assert_eq!(reviews[1]["patchedObject"]["spec"]["revision"], 4);
    assert_eq!(reviews[3]["patchedObject"]["spec"]["revision"], 5);

    let table = text(&run(&args).stdout);
    assert!(
        table.contains("Mutating modules run first, in this order, each on the object as the ones before it patched it: group-authorization, revision-uniqueness;"),
        "{table}"
    );
}
