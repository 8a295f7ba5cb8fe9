//! What a user of a live cluster tripped over, checked through the built
//! binary and the real modules, offline (the parts a control plane must
//! answer are in tests/live_papercuts.rs):
//!
//! - the cluster is the one kubectl would choose, and a module that reads
//!   it is never judged against an empty one unless `--no-cluster` says so;
//! - `-o` is the output format on every command, its help the same
//!   everywhere, and a file name given to it is refused naming the flag
//!   that writes files;
//! - an audit sums skips up by reason and leaves out what the cluster
//!   manages itself, saying how many;
//! - `--as` is the same user in `run` and `audit`, in the groups the API
//!   server gives it;
//! - an object the cluster holds is an UPDATE of it for one module as for
//!   several;
//! - `run -o json` of one object is its AdmissionReview, of several a List
//!   naming each item's object, document and operation;
//! - one spelling of the CI gate, errors that name the flag and the fix, a
//!   closed pipe that ends the command quietly, and help texts that list the
//!   RBAC a live cluster needs.

use std::process::{Command, Output};

use serde_json::{Value, json};

mod common;
use common::{
    CATALOG_SOURCE, compile_cache, dist, json_items, olm_guard_at_home, root, text, write,
};

/// [`common::olm_guard_at_home`] in a HOME of its own, with no kubeconfig.
fn olm_guard(args: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    olm_guard_at_home(home.path(), args, &[])
}

const OPERATOR_GROUP: &str = "apiVersion: operators.coreos.com/v1
kind: OperatorGroup
metadata: {name: second, namespace: team-a}
spec: {targetNamespaces: [team-a]}
";

/// A CatalogSource OLM would serve wrongly: the image wins and the
/// address is ignored, which catalog-union denies on CREATE and lets an
/// UPDATE of the stored object keep, with a warning.
const CONFUSED_CATALOG_SOURCE: &str = "apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata: {name: confused, namespace: olm}
spec:
  sourceType: grpc
  image: quay.io/example/catalog:v1
  address: catalog.olm.svc:50051
";

#[test]
fn a_module_that_reads_the_cluster_is_never_judged_against_an_empty_one_unasked() {
    let dir = tempfile::tempdir().unwrap();
    let og = write(dir.path(), "og.yaml", OPERATOR_GROUP);
    let cs = write(dir.path(), "cs.yaml", CATALOG_SOURCE);
    // No kubeconfig anywhere and no file: refused, naming every way out.
    for args in [
        vec!["run", "og-intersection", "--object", &og],
        vec!["run", "all", "--object", &og],
    ] {
        let stderr = common::refused(&olm_guard(&args));
        for named in [
            "og-intersection",
            "reads the cluster",
            "--kubeconfig",
            "--context",
            "--cluster",
            "--no-cluster",
        ] {
            assert!(stderr.contains(named), "{args:?}: {named}: {stderr}");
        }
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    }
    // Asked for: an empty cluster.
    let empty = olm_guard(&["run", "og-intersection", "--object", &og, "--no-cluster"]);
    assert!(common::succeeds(&empty).contains("allowed"));
    // A module that reads nothing needs no cluster.
    assert!(
        common::succeeds(&olm_guard(&["run", "catalog-union", "--object", &cs]))
            .contains("allowed")
    );

    // The environment's kubeconfig is the cluster, as kubectl's: a
    // KUBECONFIG that names no file, or a ~/.kube/config that is no
    // kubeconfig, is read (and refused, naming it), never skipped for an
    // empty cluster.
    let home = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.yaml");
    let stderr = common::refused(&olm_guard_at_home(
        home.path(),
        &["run", "og-intersection", "--object", &og],
        &[("KUBECONFIG", missing.to_str().unwrap())],
    ));
    assert!(
        stderr.contains(&format!(
            "{} (from KUBECONFIG): no such file",
            missing.display()
        )) && stderr.contains("--kubeconfig PATH"),
        "{stderr}"
    );
    std::fs::create_dir_all(home.path().join(".kube")).unwrap();
    std::fs::write(home.path().join(".kube/config"), CATALOG_SOURCE).unwrap();
    let stderr = common::refused(&olm_guard_at_home(
        home.path(),
        &["run", "og-intersection", "--object", &og],
        &[],
    ));
    assert!(
        stderr.contains("kubeconfig ~/.kube/config: a CatalogSource, not a kubeconfig"),
        "{stderr}"
    );
    // ... unless --cluster FILE is given without --kubeconfig or --context:
    // the files are the cluster, offline, even with KUBECONFIG set.
    let cluster = write(
        dir.path(),
        "cluster.yaml",
        "apiVersion: operators.coreos.com/v1\nkind: OperatorGroup\n\
         metadata: {name: first, namespace: team-a}\nspec: {targetNamespaces: [team-a]}\n",
    );
    let offline = olm_guard_at_home(
        home.path(),
        &[
            "run",
            "og-intersection",
            "--object",
            &og,
            "--cluster",
            &cluster,
            "-o",
            "json",
        ],
        &[("KUBECONFIG", missing.to_str().unwrap())],
    );
    let review = &json_items(common::succeeds(&offline).as_bytes())[0];
    assert_eq!(review["response"]["allowed"], false, "{review}");
    // --no-cluster reads no kubeconfig either.
    let empty = olm_guard_at_home(
        home.path(),
        &["run", "og-intersection", "--object", &og, "--no-cluster"],
        &[("KUBECONFIG", missing.to_str().unwrap())],
    );
    assert!(common::succeeds(&empty).contains("allowed"));
}

/// Every command whose help lists `-o, --output`, by its words.
fn commands_with_output() -> Vec<(Vec<&'static str>, String)> {
    let mut found = Vec::new();
    for words in [
        &["run"][..],
        &["test"],
        &["audit"],
        &["snapshot"],
        &["inspect"],
        &["push"],
        &["pull"],
        &["sign"],
        &["verify"],
        &["scaffold", "manifest"],
        &["scaffold", "policies"],
        &["scaffold", "artifacthub"],
        &["scaffold", "vap"],
        &["annotate"],
    ] {
        let mut args = words.to_vec();
        args.push("--help");
        found.push((words.to_vec(), common::succeeds(&olm_guard(&args))));
    }
    found
}

#[test]
fn o_is_the_format_everywhere_and_reads_the_same_in_every_help() {
    for (words, help) in commands_with_output() {
        let lines: Vec<&str> = help.lines().collect();
        let at = lines.iter().position(|l| l.starts_with("  -o, --output"));
        if words == ["annotate"] {
            // It writes a module: no format, and its file has the flag.
            assert!(at.is_none(), "{help}");
            assert!(help.contains("--output-file <FILE>"), "{help}");
            continue;
        }
        let at = at.unwrap_or_else(|| panic!("{words:?} has no -o:\n{help}"));
        assert_eq!(lines[at], "  -o, --output <FORMAT>", "{words:?}");
        assert_eq!(lines[at + 1].trim(), "Output format", "{words:?}");
        // A file is its own flag, said the same way.
        if let Some(file) = lines
            .iter()
            .position(|l| l.starts_with("      --output-file"))
        {
            assert_eq!(lines[file], "      --output-file <FILE>", "{words:?}");
            assert!(
                lines[file + 1].trim().starts_with("Write the "),
                "{words:?}"
            );
        }
    }
    let dir = tempfile::tempdir().unwrap();
    // A file name given to -o is refused, listing the formats and naming
    // the file flag (or a redirect, where there is none).
    for (args, formats, fix) in [
        (
            vec!["snapshot", "-o", "json.yaml"],
            "[possible values: yaml, json]",
            "--output-file json.yaml",
        ),
        (
            vec![
                "run",
                "catalog-union",
                "--object",
                "x.yaml",
                "-o",
                "out.json",
            ],
            "[possible values: text, table, json, yaml, junit]",
            "> out.json",
        ),
        (
            vec!["scaffold", "vap", "all", "-o", "deploy/native"],
            "[possible values: yaml]",
            "--output-dir deploy/native",
        ),
        (
            vec!["pull", "registry://localhost:5000/x:v1", "-o", "x.wasm"],
            "[possible values: text, json, yaml]",
            "--output-file x.wasm",
        ),
    ] {
        let output = olm_guard(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = text(&output.stderr);
        assert!(stderr.contains(formats), "{args:?}: {stderr}");
        assert!(stderr.contains(fix), "{args:?}: {stderr}");
        assert!(
            stderr.contains("-o is the output format"),
            "{args:?}: {stderr}"
        );
    }
    let annotated = dir.path().join("x.wasm");
    let output = olm_guard(&[
        "annotate",
        "-m",
        "policies/catalog-union/metadata.yml",
        "-o",
        annotated.to_str().unwrap(),
        "dist/catalog-union.wasm",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("--output-file"),
        "{}",
        text(&output.stderr)
    );
    assert!(!annotated.exists());

    // `text` wherever a human default is: audit's is its table, test's
    // table is its text.
    let audit = |format: &str| {
        common::succeeds(&olm_guard(&[
            "audit",
            "--cluster",
            "examples/audit/cluster.yaml",
            "-o",
            format,
        ]))
    };
    assert_eq!(audit("text"), audit("table"));
    let test = |format: &str| {
        common::succeeds(&olm_guard(&[
            "test",
            "testdata/catalog-union",
            "-o",
            format,
        ]))
    };
    assert_eq!(test("table"), test("text"));

    // The file flags write what -o would print.
    let manifest = dir.path().join("manifest.json");
    let printed = common::succeeds(&olm_guard(&[
        "scaffold",
        "manifest",
        "-t",
        "ClusterAdmissionPolicy",
        "catalog-union",
        "-o",
        "json",
    ]));
    let document: Value = serde_json::from_str(&printed).expect("-o json is JSON");
    assert_eq!(document["kind"], "ClusterAdmissionPolicy", "{document}");
    common::succeeds(&olm_guard(&[
        "scaffold",
        "manifest",
        "-t",
        "ClusterAdmissionPolicy",
        "catalog-union",
        "-o",
        "json",
        "--output-file",
        manifest.to_str().unwrap(),
    ]));
    assert_eq!(std::fs::read_to_string(&manifest).unwrap(), printed);
}

/// An audit snapshot with what Kubernetes bootstraps beside the user's own:
/// `admin` (labelled), `system:aggregate-to-edit` (a system: name), and a
/// ClusterRole a user wrote that feeds `admin`.
const WITH_BOOTSTRAP: &str = "apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: admin
  labels: {kubernetes.io/bootstrapping: rbac-defaults}
aggregationRule:
  clusterRoleSelectors:
  - matchLabels: {rbac.authorization.k8s.io/aggregate-to-admin: 'true'}
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:aggregate-to-edit
  labels:
    kubernetes.io/bootstrapping: rbac-defaults
    rbac.authorization.k8s.io/aggregate-to-edit: 'true'
rules:
- apiGroups: ['']
  resources: [pods]
  verbs: [create, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:leader-locking-kube-scheduler
rules:
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: widgets-admin-extras
  labels: {rbac.authorization.k8s.io/aggregate-to-admin: 'true'}
rules:
- apiGroups: [widgets.example.com]
  resources: [widgets]
  verbs: ['*']
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: widgets-viewer
rules:
- apiGroups: [widgets.example.com]
  resources: [widgets]
  verbs: [get, list]
";

#[test]
fn an_audit_leaves_out_what_the_cluster_manages_and_sums_skips_up_by_reason() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = write(dir.path(), "cluster.yaml", WITH_BOOTSTRAP);
    let audit = |extra: &[&str]| {
        let mut args = vec!["audit", "aggregation-escalation", "--cluster", &cluster];
        args.extend_from_slice(extra);
        olm_guard(&args)
    };
    let output = audit(&[]);
    let table = common::succeeds(&output);
    // The two the user wrote, skipped for one reason: one line with its
    // count, no block per object.
    let reasons: Vec<&str> = table
        .lines()
        .skip_while(|l| *l != "Skipped, by reason:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(reasons.len(), 1, "{table}");
    let words: Vec<&str> = reasons[0].split_whitespace().collect();
    assert_eq!(
        words[..5],
        ["aggregation-escalation", "2", "objects", "needs", "a"],
        "{table}"
    );
    assert!(!table.contains("widgets-viewer"), "{table}");
    assert!(!table.contains("admin  ("), "{table}");
    // The three the cluster manages are left out, and said so.
    assert!(
        table.contains(
            "3 objects the cluster manages itself (label kubernetes.io/bootstrapping, or a \
             system: name) left out; --include-system audits them"
        ),
        "{table}"
    );
    let report = &json_items(common::succeeds(&audit(&["-o", "json"])).as_bytes())[0];
    assert_eq!(report["systemObjectsLeftOut"], 3, "{report}");
    let judged: Vec<&str> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["object"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        judged,
        ["widgets-admin-extras", "widgets-viewer"],
        "{report}"
    );
    assert!(
        text(&audit(&["-o", "json"]).stderr).contains("3 objects the cluster manages itself"),
        "said on stderr when stdout is data"
    );
    // With --as, Kubernetes' own roles are no failures of alice's.
    let as_alice =
        &json_items(common::succeeds(&audit(&["--as", "alice", "-o", "json"])).as_bytes())[0];
    let failed: Vec<&str> = as_alice["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["result"] == "fail")
        .map(|r| r["object"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["widgets-admin-extras"], "{as_alice}");
    // --include-system judges them too.
    let all =
        &json_items(common::succeeds(&audit(&["--include-system", "-o", "json"])).as_bytes())[0];
    assert_eq!(all["results"].as_array().unwrap().len(), 5, "{all}");
    assert_eq!(all["systemObjectsLeftOut"], 0);
}

/// RBAC that grants `manage` on `clusterobjectsets/groups` to `group`, one
/// of the groups the API server gives (every authenticated user, the
/// service accounts of a namespace).
fn manage_rbac_for(group: &str) -> String {
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: manage-every-group}}
rules:
- apiGroups: [olm.operatorframework.io]
  resources: [clusterobjectsets/groups]
  verbs: [manage]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: group-manages}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: manage-every-group}}
subjects:
- {{apiGroup: rbac.authorization.k8s.io, kind: Group, name: '{group}'}}
"
    )
}

const REVISION: &str = "apiVersion: olm.operatorframework.io/v1
kind: ClusterObjectSet
metadata: {name: widgets-1}
spec: {group: widgets, revision: 1, lifecycleState: Active}
";

#[test]
fn as_a_user_is_the_same_user_in_run_and_audit_in_the_groups_the_server_gives() {
    let dir = tempfile::tempdir().unwrap();
    let revision = write(dir.path(), "cos.yaml", REVISION);
    for (group, user) in [
        ("system:authenticated", "alice"),
        (
            "system:serviceaccounts:installers",
            "system:serviceaccount:installers:deployer",
        ),
    ] {
        let rbac = write(dir.path(), "rbac.yaml", &manage_rbac_for(group));
        let run = olm_guard(&[
            "run",
            "group-authorization",
            "--object",
            &revision,
            "--cluster",
            &rbac,
            "--as",
            user,
            "-o",
            "json",
        ]);
        let review = &json_items(common::succeeds(&run).as_bytes())[0];
        assert_eq!(review["response"]["allowed"], true, "{user}: {review}");

        // The audit judges the stored revision as created by the same user.
        let both = write(
            dir.path(),
            "both.yaml",
            &format!("{REVISION}---\n{}", std::fs::read_to_string(&rbac).unwrap()),
        );
        let audit = olm_guard(&[
            "audit",
            "group-authorization",
            "--cluster",
            &both,
            "--as",
            user,
            "-o",
            "json",
        ]);
        let report = &json_items(common::succeeds(&audit).as_bytes())[0];
        assert_eq!(report["summary"]["pass"], 1, "{user}: {report}");
        assert_eq!(report["requester"]["username"], user);
        assert!(
            report["requester"]["groups"]
                .as_array()
                .unwrap()
                .contains(&json!("system:authenticated")),
            "{report}"
        );
    }
    // The trace shows what the module was asked about: the same groups.
    let rbac = write(
        dir.path(),
        "rbac.yaml",
        &manage_rbac_for("system:authenticated"),
    );
    let traced = olm_guard(&[
        "run",
        "group-authorization",
        "--object",
        &revision,
        "--cluster",
        &rbac,
        "--as",
        "system:serviceaccount:installers:deployer",
        "--trace",
    ]);
    let trace = text(&traced.stderr);
    assert!(
        trace.contains(
            r#""groups":["system:serviceaccounts","system:serviceaccounts:installers","system:authenticated"]"#
        ),
        "{trace}"
    );
}

#[test]
fn an_object_the_cluster_holds_is_an_update_for_one_module_as_for_several() {
    let dir = tempfile::tempdir().unwrap();
    let stored = write(dir.path(), "stored.yaml", CONFUSED_CATALOG_SOURCE);
    let object = write(dir.path(), "cs.yaml", CONFUSED_CATALOG_SOURCE);
    let verdict = |module: &str, extra: &[&str]| {
        let mut args = vec!["run", module, "--object", &object, "-o", "json"];
        args.extend_from_slice(extra);
        let output = olm_guard(&args);
        let reviews = json_items(common::succeeds(&output).as_bytes());
        let review = reviews
            .iter()
            .find(|r| r.get("policy").is_none_or(|p| p == "catalog-union"))
            .unwrap()
            .clone();
        review["response"].clone()
    };
    // Stored already: an UPDATE that changes nothing, let through with a
    // warning, by one module and by all.
    let one = verdict("catalog-union", &["--cluster", &stored]);
    let all = verdict("all", &["--cluster", &stored]);
    assert_eq!(one["allowed"], true, "{one}");
    assert_eq!(one, all);
    assert!(!one["warnings"].as_array().unwrap().is_empty(), "{one}");
    // Not stored (or said to be a CREATE): denied, by both.
    let empty = write(dir.path(), "other.yaml", CATALOG_SOURCE);
    let one = verdict("catalog-union", &["--cluster", &empty]);
    let all = verdict("all", &["--cluster", &empty]);
    assert_eq!(one["allowed"], false, "{one}");
    assert_eq!(one["allowed"], all["allowed"]);
    let said = verdict(
        "catalog-union",
        &["--cluster", &stored, "--operation", "CREATE"],
    );
    assert_eq!(said["allowed"], false, "{said}");
    let help = common::succeeds(&olm_guard(&["run", "--help"])).replace('\n', " ");
    assert!(
        help.contains("judged as an UPDATE of it, as `kubectl apply` sends it, with one module as with several"),
        "{help}"
    );
}

#[test]
fn run_json_of_one_object_is_its_review_and_of_several_a_list_naming_each() {
    let dir = tempfile::tempdir().unwrap();
    let one = write(dir.path(), "one.yaml", CATALOG_SOURCE);
    let two = write(
        dir.path(),
        "two.yaml",
        &format!("{CATALOG_SOURCE}---\n{CONFUSED_CATALOG_SOURCE}"),
    );
    let review: Value = serde_json::from_str(&common::succeeds(&olm_guard(&[
        "run",
        "catalog-union",
        "--object",
        &one,
        "-o",
        "json",
    ])))
    .unwrap();
    assert_eq!(review["kind"], "AdmissionReview", "{review}");
    assert_eq!(review["response"]["allowed"], true);

    let list: Value = serde_json::from_str(&common::succeeds(&olm_guard(&[
        "run",
        "catalog-union",
        "--object",
        &two,
        "-o",
        "json",
    ])))
    .unwrap();
    assert_eq!(list["kind"], "List", "{list}");
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    for (index, (item, name)) in items
        .iter()
        .zip(["operatorhubio-catalog", "confused"])
        .enumerate()
    {
        assert_eq!(item["policy"], "catalog-union", "{item}");
        assert_eq!(
            item["source"],
            format!("{two}: document {}", index + 1),
            "{item}"
        );
        assert_eq!(item["operation"], "CREATE", "{item}");
        assert_eq!(
            item["object"],
            json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
                   "namespace": "olm", "name": name}),
            "{item}"
        );
    }
    assert_ne!(items[0]["response"]["uid"], items[1]["response"]["uid"]);
    // As run all's items name them.
    let all: Value = serde_json::from_str(&common::succeeds(&olm_guard(&[
        "run",
        "all",
        "--object",
        &two,
        "-o",
        "json",
        "--no-cluster",
    ])))
    .unwrap();
    let all_items: Vec<&Value> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["policy"] == "catalog-union")
        .collect();
    for (a, b) in all_items.iter().zip(items) {
        for key in ["policy", "source", "operation", "object"] {
            assert_eq!(a[key], b[key], "{key}");
        }
        // The same request, so the same uid: one per document.
        assert_eq!(a["response"]["uid"], b["response"]["uid"]);
    }
}

#[test]
fn flags_and_errors_name_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let cs = write(dir.path(), "cs.yaml", CONFUSED_CATALOG_SOURCE);
    // One spelling of the gate on both commands, the other still read.
    for gate in ["--fail-on-deny", "--fail-on-violation"] {
        let run = olm_guard(&["run", "catalog-union", "--object", &cs, gate]);
        assert_eq!(
            run.status.code(),
            Some(1),
            "run {gate}: {}",
            text(&run.stderr)
        );
        let audit = olm_guard(&["audit", "--cluster", "examples/audit/cluster.yaml", gate]);
        assert_eq!(
            audit.status.code(),
            Some(1),
            "audit {gate}: {}",
            text(&audit.stderr)
        );
    }
    for words in [&["run"][..], &["audit"]] {
        let mut args = words.to_vec();
        args.push("--help");
        let help = common::succeeds(&olm_guard(&args));
        assert!(help.contains("--fail-on-deny"), "{words:?}");
        assert!(!help.contains("--fail-on-violation"), "{words:?}");
    }
    // No input: every way to give one.
    let output = olm_guard(&["run", "catalog-union"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("--object") && stderr.contains("--request"),
        "{stderr}"
    );
    // A manifest given as --kubeconfig.
    let stderr = common::refused(&olm_guard(&["audit", "--kubeconfig", &cs]));
    assert!(
        stderr.contains(&format!(
            "kubeconfig {cs}: a CatalogSource, not a kubeconfig"
        )) && stderr.contains("--cluster FILE"),
        "{stderr}"
    );
    // A KUBECONFIG that names no file.
    let home = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.yaml");
    let stderr = common::refused(&olm_guard_at_home(
        home.path(),
        &["audit"],
        &[("KUBECONFIG", missing.to_str().unwrap())],
    ));
    assert!(
        stderr.contains("(from KUBECONFIG): no such file") && stderr.contains("unset it"),
        "{stderr}"
    );
    // A settings file that does not exist names the flag, for one module
    // and for several.
    let missing = missing.display().to_string();
    let stderr = common::refused(&olm_guard(&[
        "run",
        "catalog-union",
        "--object",
        &cs,
        "--settings",
        &missing,
    ]));
    assert!(
        stderr.contains(&format!("--settings {missing}: cannot read")),
        "{stderr}"
    );
    let stderr = common::refused(&olm_guard(&[
        "audit",
        "--cluster",
        "examples/audit/cluster.yaml",
        "--settings",
        &format!("catalog-union={missing}"),
    ]));
    assert!(
        stderr.contains(&format!("--settings catalog-union={missing}: cannot read")),
        "{stderr}"
    );
}

/// `olm-guard test testdata -o json`, its stdout read for a few bytes and
/// closed (`| head -c 100`), stderr as `redirect` says; the exit code and
/// stderr as bash saw them.
fn closed_early(redirect: &str) -> (Option<i32>, String) {
    let binary = env!("CARGO_BIN_EXE_olm-guard");
    let home = tempfile::tempdir().unwrap();
    let script = format!(
        "\"$0\" test testdata -o json {redirect} | head -c 100 > /dev/null; echo \"exit ${{PIPESTATUS[0]}}\" >&2"
    );
    let output = Command::new("bash")
        .args(["-c", &script, binary])
        .current_dir(root())
        .env("HOME", home.path())
        .env("OLM_GUARD_DIST", dist())
        .env("OLM_GUARD_COMPILE_CACHE_DIR", compile_cache())
        .output()
        .expect("bash runs");
    let stderr = text(&output.stderr);
    let code = stderr
        .lines()
        .last()
        .and_then(|l| l.strip_prefix("exit "))
        .and_then(|c| c.parse().ok());
    (code, stderr)
}

#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    let (code, stderr) = closed_early("");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("passed,"),
        "the command ended at the closed pipe: {stderr}"
    );
    // stderr into the same closed pipe: no panic either.
    let (code, stderr) = closed_early("2>&1");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
        "{stderr}"
    );
}

/// The RBAC a help text lists, `group: resource, ...` lines (continued on
/// indented lines) after `Needs from RBAC`, as (group, resource).
fn listed_rbac(help: &str) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let mut group = String::new();
    let section = help
        .split("Needs from RBAC")
        .nth(1)
        .expect("a Needs from RBAC section");
    let listed = section
        .lines()
        .skip_while(|l| !(l.starts_with("  ") && l.contains(": ")));
    for line in listed {
        let resources = if let Some(rest) = line.strip_prefix("    ") {
            rest
        } else if let Some((g, rest)) = line.strip_prefix("  ").and_then(|l| l.split_once(": ")) {
            group = if g == "core" {
                String::new()
            } else {
                g.to_string()
            };
            rest
        } else {
            break;
        };
        for resource in resources
            .split(',')
            .map(str::trim)
            .filter(|r| !r.is_empty())
        {
            pairs.push((group.clone(), resource.to_string()));
        }
    }
    pairs.sort();
    pairs
}

#[test]
fn the_help_lists_the_rbac_a_live_cluster_needs_as_the_modules_declare_it() {
    // What the modules judge (their rules) and read (contextAwareResources,
    // and RBAC for can_i), from their embedded metadata.
    let mut wanted: Vec<(String, String)> = Vec::new();
    let mut can_i = Vec::new();
    for name in olm_guard_rules::registry::names() {
        let metadata =
            &json_items(common::succeeds(&olm_guard(&["inspect", name, "-o", "json"])).as_bytes())
                [0];
        for rule in metadata["rules"].as_array().unwrap() {
            for group in rule["apiGroups"].as_array().unwrap() {
                for resource in rule["resources"].as_array().unwrap() {
                    wanted.push((
                        group.as_str().unwrap().into(),
                        resource.as_str().unwrap().into(),
                    ));
                }
            }
        }
        for read in metadata["contextAwareResources"].as_array().unwrap() {
            let api_version = read["apiVersion"].as_str().unwrap();
            let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
            let kind = read["kind"].as_str().unwrap();
            wanted.push((
                group.into(),
                olm_guard_evaluator::input::guess_resource(kind),
            ));
        }
        if metadata["hostCapabilities"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "kubernetes/can_i")
        {
            can_i.push(name);
            for resource in [
                "clusterroles",
                "clusterrolebindings",
                "roles",
                "rolebindings",
            ] {
                wanted.push(("rbac.authorization.k8s.io".into(), resource.into()));
            }
        }
    }
    wanted.sort();
    wanted.dedup();
    for command in ["audit", "snapshot"] {
        let help = common::succeeds(&olm_guard(&[command, "--help"]));
        assert_eq!(listed_rbac(&help), wanted, "{command} --help:\n{help}");
        assert!(help.contains("SelfSubjectAccessReview"), "{command}");
    }
    let audit = common::succeeds(&olm_guard(&["audit", "--help"]));
    let flat = audit.replace('\n', " ");
    assert!(
        flat.contains("create on subjectaccessreviews.authorization.k8s.io"),
        "{audit}"
    );
    can_i.sort_unstable();
    assert!(flat.contains(&format!("({})", can_i.join(", "))), "{audit}");
    // The README says where to look.
    let readme = std::fs::read_to_string(root().join("README.md"))
        .unwrap()
        .replace('\n', " ");
    assert!(readme.contains("`create` on `subjectaccessreviews.authorization.k8s.io`"));
    assert!(readme.contains("`olm-guard audit --help` and `olm-guard snapshot --help` list"));
}

#[test]
fn counts_and_names_read_as_they_should() {
    // One object: "1 object", never "1 objects".
    let dir = tempfile::tempdir().unwrap();
    let cluster = write(dir.path(), "one.yaml", CATALOG_SOURCE);
    let html = common::succeeds(&olm_guard(&["audit", "--cluster", &cluster, "-o", "html"]));
    assert!(
        html.contains("<p>1 object in the snapshot, 1 covered by a module, 1 result;"),
        "{html}"
    );
    assert!(!html.contains("1 objects") && !html.contains("1 results"));
    // A file that is no module: said once.
    let junk = write(dir.path(), "junk.wasm", "not wasm");
    let stderr = common::refused(&olm_guard(&["inspect", &junk]));
    assert!(
        stderr.trim_end().ends_with("junk.wasm: not a wasm module"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("not a wasm module: not a wasm module"),
        "{stderr}"
    );
}
