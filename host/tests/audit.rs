//! `olm-guard audit` on examples/audit/: a snapshot with one planted
//! violation of every rule beside clean objects. Every output must hold
//! exactly the expected results, the reports must validate against the
//! report CRDs (`testdata/upstream/crds`, copied verbatim from upstream), and
//! unreadable documents must be `error` results naming file and document.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output};

use serde::Deserialize;
use serde_json::{Value, json};

mod common;
use common::{dist, required_tool, root, upstream};

fn snapshot() -> String {
    "examples/audit/cluster.yaml".into()
}

fn broken() -> String {
    "examples/audit/broken.yaml".into()
}

fn audit(args: &[&str]) -> Output {
    audit_with(&dist(), args)
}

/// `olm-guard audit --policies <policies>` with `args`.
fn audit_with(policies: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_olm-guard"))
        .current_dir(root())
        .arg("audit")
        .arg("--policies")
        .arg(policies)
        .args(args)
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn json_of(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    let output = audit(&all);
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_str(&stdout(&output)).unwrap()
}

/// `(object, policy, result)`; the object as `Kind namespace/name`, or the
/// snapshot document's location.
type Row = (String, String, String);

fn rows(report: &Value) -> Vec<Row> {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let object = match &r["object"] {
                Value::Null => r["source"].as_str().unwrap().to_string(),
                o => {
                    let ns = o["namespace"].as_str().unwrap();
                    let name = o["name"].as_str().unwrap();
                    let kind = o["kind"].as_str().unwrap();
                    if ns.is_empty() {
                        format!("{kind} {name}")
                    } else {
                        format!("{kind} {ns}/{name}")
                    }
                }
            };
            (
                object,
                r["policy"].as_str().unwrap().to_string(),
                r["result"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn expected(rows: &[(&str, &str, &str)]) -> Vec<Row> {
    let mut rows: Vec<Row> = rows
        .iter()
        .map(|(o, p, r)| (o.to_string(), p.to_string(), r.to_string()))
        .collect();
    rows.sort();
    rows
}

fn sorted(mut rows: Vec<Row>) -> Vec<Row> {
    rows.sort();
    rows
}

/// Without --as: requester-free checks still find the forged label and the
/// missing template; everything else of the authorization modules is a
/// skip.
const WITHOUT_REQUESTER: &[(&str, &str, &str)] = &[
    (
        "examples/audit/broken.yaml: document 2",
        "snapshot",
        "error",
    ),
    (
        "examples/audit/broken.yaml: document 3",
        "snapshot",
        "error",
    ),
    ("ClusterObjectSet app-1", "group-authorization", "skip"),
    ("ClusterObjectSet app-1", "revision-uniqueness", "pass"),
    ("ClusterObjectSet app-2", "group-authorization", "skip"),
    ("ClusterObjectSet app-2", "revision-uniqueness", "fail"),
    ("ClusterObjectSet app-2-copy", "group-authorization", "skip"),
    ("ClusterObjectSet app-2-copy", "revision-uniqueness", "fail"),
    ("ClusterObjectSet db-1", "group-authorization", "skip"),
    ("ClusterObjectSet db-1", "revision-uniqueness", "pass"),
    ("ClusterObjectSet web-1", "group-authorization", "fail"),
    ("ClusterObjectSet web-1", "revision-uniqueness", "pass"),
    ("ClusterRole admin", "aggregation-escalation", "skip"),
    (
        "ClusterRole memcached-admin-extras",
        "aggregation-escalation",
        "skip",
    ),
    (
        "ClusterRole memcached-viewer",
        "aggregation-escalation",
        "skip",
    ),
    ("ClusterRole olm-author", "aggregation-escalation", "skip"),
    (
        "ScopeInstance memcached-viewer-team-a",
        "scope-rbac",
        "skip",
    ),
    ("ScopeInstance orphan", "scope-rbac", "fail"),
    ("ScopeTemplate memcached-viewer", "scope-rbac", "skip"),
    ("CatalogSource olm/modern-catalog", "catalog-union", "pass"),
    (
        "CatalogSource olm/operatorhubio-catalog",
        "catalog-union",
        "pass",
    ),
    (
        "CatalogSource team-a/confused-catalog",
        "catalog-union",
        "fail",
    ),
    ("OperatorGroup quiet/og-quiet", "og-intersection", "pass"),
    ("OperatorGroup team-a/og-a", "og-intersection", "fail"),
    ("OperatorGroup team-b/og-b", "og-intersection", "fail"),
];

/// As alice, who may create ClusterRoles and manage group `app` only.
const AS_ALICE: &[(&str, &str, &str)] = &[
    ("ClusterObjectSet app-1", "group-authorization", "pass"),
    ("ClusterObjectSet app-1", "revision-uniqueness", "pass"),
    ("ClusterObjectSet app-2", "group-authorization", "pass"),
    ("ClusterObjectSet app-2", "revision-uniqueness", "fail"),
    ("ClusterObjectSet app-2-copy", "group-authorization", "pass"),
    ("ClusterObjectSet app-2-copy", "revision-uniqueness", "fail"),
    ("ClusterObjectSet db-1", "group-authorization", "fail"),
    ("ClusterObjectSet db-1", "revision-uniqueness", "pass"),
    ("ClusterObjectSet web-1", "group-authorization", "fail"),
    ("ClusterObjectSet web-1", "revision-uniqueness", "pass"),
    ("ClusterRole admin", "aggregation-escalation", "fail"),
    (
        "ClusterRole memcached-admin-extras",
        "aggregation-escalation",
        "fail",
    ),
    (
        "ClusterRole memcached-viewer",
        "aggregation-escalation",
        "pass",
    ),
    ("ClusterRole olm-author", "aggregation-escalation", "pass"),
    (
        "ScopeInstance memcached-viewer-team-a",
        "scope-rbac",
        "pass",
    ),
    ("ScopeInstance orphan", "scope-rbac", "fail"),
    ("ScopeTemplate memcached-viewer", "scope-rbac", "pass"),
    ("CatalogSource olm/modern-catalog", "catalog-union", "pass"),
    (
        "CatalogSource olm/operatorhubio-catalog",
        "catalog-union",
        "pass",
    ),
    (
        "CatalogSource team-a/confused-catalog",
        "catalog-union",
        "fail",
    ),
    ("OperatorGroup quiet/og-quiet", "og-intersection", "pass"),
    ("OperatorGroup team-a/og-a", "og-intersection", "fail"),
    ("OperatorGroup team-b/og-b", "og-intersection", "fail"),
];

fn message<'a>(report: &'a Value, object_name: &str, policy: &str) -> &'a str {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["object"]["name"] == object_name && r["policy"] == policy)
        .and_then(|r| r["message"].as_str())
        .unwrap_or_else(|| panic!("no message for {object_name} / {policy}"))
}

#[test]
fn json_holds_exactly_the_planted_violations_without_a_requester() {
    let report = json_of(&["--cluster", &snapshot(), "--cluster", &broken()]);
    assert_eq!(sorted(rows(&report)), expected(WITHOUT_REQUESTER));
    // A duplicate revision is reported on both objects, each naming the other.
    assert!(message(&report, "app-2", "revision-uniqueness").contains("\"app-2-copy\""));
    assert!(message(&report, "app-2-copy", "revision-uniqueness").contains("\"app-2\""));
    // An OperatorGroup conflict names both groups.
    let og_a = message(&report, "og-a", "og-intersection");
    assert!(og_a.contains("InterOperatorGroupOwnerConflict"), "{og_a}");
    assert!(
        og_a.contains("team-a/og-a") && og_a.contains("team-b/og-b"),
        "{og_a}"
    );
    let og_b = message(&report, "og-b", "og-intersection");
    assert!(
        og_b.contains("team-a/og-a") && og_b.contains("team-b/og-b"),
        "{og_b}"
    );
    assert!(message(&report, "orphan", "scope-rbac").contains("ScopeTemplateNotFound"));
    assert!(message(&report, "confused-catalog", "catalog-union").contains("spec.address"));
    // A skip says why and what to do.
    let skip = message(&report, "admin", "aggregation-escalation");
    assert!(
        skip.contains("--as") && skip.contains("backgroundAudit: false"),
        "{skip}"
    );
    assert_eq!(report["objects"], 25, "every readable object is counted");
    assert_eq!(
        report["summary"],
        json!({"pass": 6, "fail": 7, "warn": 0, "error": 2, "skip": 10})
    );
}

#[test]
fn json_as_a_user_evaluates_the_authorization_modules() {
    let report = json_of(&["--cluster", &snapshot(), "--as", "alice"]);
    assert_eq!(sorted(rows(&report)), expected(AS_ALICE));
    let feeding = message(&report, "memcached-admin-extras", "aggregation-escalation");
    assert!(feeding.contains("\"admin\""), "{feeding}");
    let db = message(&report, "db-1", "group-authorization");
    assert!(db.contains("alice"), "{db}");
    assert_eq!(report["requester"]["username"], "alice");
}

#[test]
fn the_table_lists_every_result_that_is_not_a_pass_grouped_by_object() {
    let output = audit(&["--cluster", &snapshot(), "--cluster", &broken()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let table = stdout(&output);
    assert!(
        !table.contains('\x1b'),
        "no colour off a terminal:\n{table}"
    );
    // Skips are summed up by reason below the blocks, not listed per
    // object.
    let expected: Vec<&(&str, &str, &str)> = WITHOUT_REQUESTER
        .iter()
        .filter(|(_, _, result)| *result != "pass" && *result != "skip")
        .collect();
    // Each block starts with the object; its lines are `policy result message`.
    let mut found: Vec<(String, String, String)> = Vec::new();
    let mut object = String::new();
    for line in table.lines() {
        if line.is_empty() || line.starts_with("POLICY") {
            continue;
        }
        if line.starts_with("SUMMARY") || line.starts_with("Skipped, by reason:") {
            break;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let is_result =
            words.len() >= 2 && ["pass", "fail", "warn", "error", "skip"].contains(&words[1]);
        if is_result {
            found.push((object.clone(), words[0].to_string(), words[1].to_string()));
        } else {
            // `Kind [ns/]name  (source)`, or `(snapshot document)  (source)`.
            object = match line.split_once("  (") {
                Some(("(snapshot document)", source)) => source.trim_end_matches(')').into(),
                Some((title, _)) => title.to_string(),
                None => line.to_string(),
            };
        }
    }
    found.sort();
    let mut want: Vec<Row> = expected
        .iter()
        .map(|(o, p, r)| (o.to_string(), p.to_string(), r.to_string()))
        .collect();
    want.sort();
    assert_eq!(found, want, "{table}");
    // One line per policy and reason: `policy  N objects  reason`.
    let skipped: Vec<(String, String)> = table
        .lines()
        .skip_while(|l| !l.starts_with("Skipped, by reason:"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            (words[0].to_string(), words[1].to_string())
        })
        .collect();
    let mut want_skipped: Vec<(String, String)> = Vec::new();
    for (_, policy, result) in WITHOUT_REQUESTER {
        if *result != "skip" {
            continue;
        }
        let n = WITHOUT_REQUESTER
            .iter()
            .filter(|(_, p, r)| p == policy && *r == "skip")
            .count();
        let row = (policy.to_string(), n.to_string());
        if !want_skipped.contains(&row) {
            want_skipped.push(row);
        }
    }
    let mut skipped_sorted = skipped.clone();
    skipped_sorted.sort();
    want_skipped.sort();
    assert_eq!(skipped_sorted, want_skipped, "{table}");
    assert!(
        table.contains("og-intersection             1     2     0     0     0"),
        "{table}"
    );
    let all = audit(&["--cluster", &snapshot(), "--show-pass"]);
    let passes = stdout(&all)
        .lines()
        .take_while(|l| !l.starts_with("SUMMARY"))
        .filter(|l| l.split_whitespace().nth(1) == Some("pass"))
        .count();
    let want = WITHOUT_REQUESTER
        .iter()
        .filter(|(_, _, r)| *r == "pass")
        .count();
    assert_eq!(passes, want, "{}", stdout(&all));
}

#[test]
fn unreadable_documents_are_error_results_naming_file_and_document() {
    let report = json_of(&["--cluster", &snapshot(), "--cluster", &broken()]);
    let errors: Vec<&Value> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["result"] == "error")
        .collect();
    assert_eq!(errors.len(), 2);
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("examples/audit/broken.yaml: document 2: object \"team-a/no-type\""),
        "{}",
        errors[0]
    );
    assert!(
        errors[1]["message"]
            .as_str()
            .unwrap()
            .starts_with("examples/audit/broken.yaml: document 3: expected a Kubernetes object"),
        "{}",
        errors[1]
    );
    // The readable document of that file is still in the snapshot.
    assert_eq!(report["objects"], 25);
}

/// The `openAPIV3Schema` of `version` of the report CRD `file`, made strict
/// as the API server's field validation is: an object schema with
/// `properties` and without `x-kubernetes-preserve-unknown-fields` admits
/// no other field.
fn crd_schema(file: &str, version: &str) -> Value {
    let path = upstream(&format!("crds/{file}"));
    let crd: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let version = crd["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == version)
        .unwrap_or_else(|| panic!("{file} has no version {version}"));
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

fn violations(schema: &Value, report: &Value) -> Vec<String> {
    let validator = jsonschema::draft4::new(schema).expect("the CRD schema compiles");
    let mut found: Vec<String> = validator
        .iter_errors(report)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    if !report["metadata"]["name"].is_string() {
        found.push("/metadata/name: missing".into());
    }
    found
}

fn reports(kind: &str, args: &[&str]) -> Vec<Value> {
    let mut all = args.to_vec();
    all.extend(["-o", "report", "--report-kind", kind]);
    let output = audit(&all);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|document| Value::deserialize(document).unwrap())
        .collect()
}

/// Checks one report kind: the shape the audit scanner writes, exactly the
/// expected results, summaries that add up, and the CRD schemas.
fn check_reports(
    kind: &str,
    api_version: &str,
    namespaced: &str,
    cluster: &str,
    crds: (&str, &str, &str),
) {
    let documents = reports(kind, &["--cluster", &snapshot(), "--cluster", &broken()]);
    let mut found: Vec<Row> = Vec::new();
    for report in &documents {
        assert_eq!(report["apiVersion"], api_version);
        let kind_here = report["kind"].as_str().unwrap();
        let scope = &report["scope"];
        if kind_here == namespaced {
            assert_eq!(
                report["metadata"]["namespace"], scope["namespace"],
                "{report}"
            );
        } else {
            assert_eq!(kind_here, cluster, "{report}");
            assert!(report["metadata"].get("namespace").is_none(), "{report}");
        }
        let results = report["results"].as_array().unwrap();
        let mut summary = BTreeMap::new();
        for result in results {
            *summary
                .entry(result["result"].as_str().unwrap().to_string())
                .or_insert(0) += 1;
            assert_eq!(result["source"], "kubewarden");
            assert_eq!(result["scored"], true);
            let rule = result["rule"].as_str().unwrap();
            let policy = result["policy"].as_str().unwrap();
            if rule == "snapshot" {
                assert_eq!(policy, "olm-guard-snapshot");
            } else {
                assert_eq!(policy, format!("clusterwide-{rule}"));
                assert_eq!(result["properties"]["policy-name"], rule);
                let severity = result["severity"].as_str().unwrap();
                let expected_severity = match rule {
                    "aggregation-escalation" | "group-authorization" | "scope-rbac" => "high",
                    _ => "medium",
                };
                assert_eq!(severity, expected_severity, "{rule}");
                assert!(result["category"].is_string(), "{result}");
            }
            let object = if scope.is_null() {
                result["properties"]["snapshot-source"]
                    .as_str()
                    .unwrap()
                    .to_string()
            } else {
                let name = scope["name"].as_str().unwrap();
                match scope["namespace"].as_str() {
                    Some(ns) => format!("{} {ns}/{name}", scope["kind"].as_str().unwrap()),
                    None => format!("{} {name}", scope["kind"].as_str().unwrap()),
                }
            };
            found.push((
                object,
                rule.to_string(),
                result["result"].as_str().unwrap().to_string(),
            ));
        }
        for word in ["pass", "fail", "warn", "error", "skip"] {
            assert_eq!(
                report["summary"][word],
                summary.get(word).copied().unwrap_or(0),
                "{word} in {report}"
            );
        }
    }
    assert_eq!(sorted(found), expected(WITHOUT_REQUESTER));
    // The CatalogSource verbatim from OLM's quickstart keeps its uid and
    // resourceVersion: its report is named after the uid, as the scanner's.
    let quickstart = documents
        .iter()
        .find(|r| r["scope"]["name"] == "operatorhubio-catalog")
        .unwrap();
    assert_eq!(
        quickstart["metadata"]["name"],
        "6f0c1f0e-0000-4000-8000-0000000000c1"
    );
    assert_eq!(quickstart["scope"]["resourceVersion"], "4711");
    assert_eq!(
        quickstart["metadata"]["ownerReferences"][0]["uid"],
        "6f0c1f0e-0000-4000-8000-0000000000c1"
    );

    let (version, namespaced_crd, cluster_crd) = crds;
    let namespaced_schema = crd_schema(namespaced_crd, version);
    let cluster_schema = crd_schema(cluster_crd, version);
    for report in &documents {
        let schema = if report["kind"] == namespaced {
            &namespaced_schema
        } else {
            &cluster_schema
        };
        let found = violations(schema, report);
        assert!(found.is_empty(), "{report}\n{}", found.join("\n"));
    }
    // The validation can fail: a result word the CRD does not know is caught.
    let mut wrong = documents[0].clone();
    wrong["results"][0]["result"] = json!("denied");
    wrong["results"][0]["unknownField"] = json!(1);
    let schema = if wrong["kind"] == namespaced {
        &namespaced_schema
    } else {
        &cluster_schema
    };
    assert_eq!(violations(schema, &wrong).len(), 2);
}

#[test]
fn openreports_are_shaped_as_the_audit_scanner_writes_them_and_validate() {
    check_reports(
        "openreports",
        "openreports.io/v1alpha1",
        "Report",
        "ClusterReport",
        (
            "v1alpha1",
            "openreports.io_reports.yaml",
            "openreports.io_clusterreports.yaml",
        ),
    );
}

#[test]
fn policy_reports_are_shaped_as_the_audit_scanner_writes_them_and_validate() {
    check_reports(
        "policyreport",
        "wgpolicyk8s.io/v1alpha2",
        "PolicyReport",
        "ClusterPolicyReport",
        (
            "v1alpha2",
            "wgpolicyk8s.io_policyreports.yaml",
            "wgpolicyk8s.io_clusterpolicyreports.yaml",
        ),
    );
}

#[test]
fn the_html_page_is_self_contained_and_holds_every_finding() {
    let output = audit(&[
        "--cluster",
        &snapshot(),
        "--cluster",
        &broken(),
        "-o",
        "html",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let page = stdout(&output);
    let artifacts = root().join("target/audit");
    std::fs::create_dir_all(&artifacts).unwrap();
    std::fs::write(artifacts.join("audit.html"), &page).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    for external in [
        "http:", "https:", "src=", "href=", "@import", "url(", "<script", "<link",
    ] {
        assert!(!page.contains(external), "the page refers out ({external})");
    }
    assert!(page.contains("<svg"), "a chart");
    let report = json_of(&["--cluster", &snapshot(), "--cluster", &broken()]);
    for result in report["results"].as_array().unwrap() {
        if result["result"] == "pass" {
            continue;
        }
        let message = result["message"].as_str().unwrap();
        let escaped = message
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
            .replace('\'', "&#39;");
        assert!(page.contains(&escaped), "missing: {message}");
    }
    // Counts per policy and per namespace.
    assert!(page.contains("Results per policy") && page.contains("Results per namespace"));
    assert!(page.contains("<td>team-a</td>") && page.contains("<td>(cluster-scoped)</td>"));
}

#[test]
fn exit_codes_are_as_the_help_says() {
    let clean = tempfile::tempdir().unwrap();
    let file = clean.path().join("clean.yaml");
    std::fs::write(
        &file,
        "apiVersion: operators.coreos.com/v1alpha1\nkind: CatalogSource\n\
         metadata: {name: modern, namespace: olm}\n\
         spec: {catalogImageSource: {catalogImage: quay.io/x/catalog:v1}}\n",
    )
    .unwrap();
    let file = file.to_str().unwrap();
    assert_eq!(
        audit(&["--cluster", file, "--fail-on-violation"])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(audit(&["--cluster", &snapshot()]).status.code(), Some(0));
    assert_eq!(
        audit(&["--cluster", &snapshot(), "--fail-on-violation"])
            .status
            .code(),
        Some(1)
    );
    // An unreadable document alone is enough: it could not be vouched for.
    assert_eq!(
        audit(&[
            "--cluster",
            file,
            "--cluster",
            &broken(),
            "--fail-on-violation"
        ])
        .status
        .code(),
        Some(1)
    );
    let missing = audit(&["--cluster", "examples/audit/absent.yaml"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("examples/audit/absent.yaml"));
    let unknown = audit(&["--cluster", file, "--settings", "nope=x.yaml"]);
    assert_eq!(unknown.status.code(), Some(2));
    let settings = clean.path().join("bad.yaml");
    std::fs::write(&settings, "noSuchSetting: true\n").unwrap();
    let refused = audit(&[
        "--cluster",
        file,
        "--settings",
        &format!("catalog-union={}", settings.display()),
    ]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("catalog-union"),
        "{}",
        stderr(&refused)
    );
    let help = Command::new(env!("CARGO_BIN_EXE_olm-guard"))
        .args(["audit", "--help"])
        .output()
        .unwrap();
    let help = stdout(&help);
    for code in ["  0  ", "  1  ", "  2  "] {
        assert!(help.contains(code), "exit code{code}in --help:\n{help}");
    }
}

#[test]
fn settings_reach_the_module() {
    // allowPendingTemplate turns the orphan ScopeInstance into a warning.
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("scope.yaml");
    std::fs::write(&settings, "allowPendingTemplate: true\n").unwrap();
    let report = json_of(&[
        "--cluster",
        &snapshot(),
        "--settings",
        &format!("scope-rbac={}", settings.display()),
    ]);
    let orphan = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["object"]["name"] == "orphan")
        .unwrap();
    assert_eq!(orphan["result"], "warn", "{orphan}");
    assert!(
        orphan["message"]
            .as_str()
            .unwrap()
            .contains("allowPendingTemplate")
    );
}

/// Debian's `chromium`, where `scripts/test-deps.sh` installs it; the test
/// fails naming it when it is missing.
fn chromium() -> PathBuf {
    required_tool(
        &["chromium", "chromium-browser", "google-chrome"],
        "chromium",
    )
}

/// The page opened in headless Chromium: the rendered DOM holds the
/// findings and the chart, and a screenshot is kept in `target/audit/`.
#[test]
fn the_html_page_renders_in_headless_chromium() {
    let browser = chromium();
    let output = audit(&["--cluster", &snapshot(), "-o", "html"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let artifacts = root().join("target/audit");
    std::fs::create_dir_all(&artifacts).unwrap();
    let page = artifacts.join("audit-rendered.html");
    std::fs::write(&page, stdout(&output)).unwrap();
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    let headless = |extra: &[&str]| {
        let output = Command::new("timeout")
            .arg("120")
            .arg(&browser)
            // As the playground's browser test starts it: without the
            // background-networking flags Chromium tries Google's hosts at
            // every start, which a machine without a network refuses.
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--disable-dev-shm-usage",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(extra)
            .arg(&url)
            .output()
            .expect("chromium starts");
        assert!(output.status.success(), "chromium: {}", stderr(&output));
        output
    };
    let dom = stdout(&headless(&["--dump-dom"]));
    assert!(dom.contains("Results per policy"), "rendered: {dom}");
    assert!(dom.contains("<svg"), "the chart is rendered");
    let report = json_of(&["--cluster", &snapshot()]);
    let failed = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["result"] == "fail")
        .expect("a planted violation");
    let name = failed["object"]["name"]
        .as_str()
        .or_else(|| failed["name"].as_str());
    if let Some(name) = name {
        assert!(dom.contains(name), "the finding on {name} is on the page");
    }
    let screenshot = artifacts.join("audit.png");
    let _ = std::fs::remove_file(&screenshot);
    headless(&[
        "--window-size=1280,1600",
        &format!("--screenshot={}", screenshot.display()),
    ]);
    let png = std::fs::read(&screenshot).expect("a screenshot");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    assert!(
        png.len() > 10_000,
        "a page, not a blank: {} bytes",
        png.len()
    );
    eprintln!("screenshot: {}", screenshot.display());
}

/// A snapshot where the lists are shared by many evaluations: groups of
/// ClusterObjectSets with duplicate revisions (grouped by `spec.group`, by
/// the owner-name label alone, or not at all), OperatorGroups sharing APIs
/// over overlapping targets (explicit, all namespaces, by selector) and two
/// to a namespace, and aggregated ClusterRoles.
fn crowded_snapshot() -> Value {
    let mut items = Vec::new();
    for n in 0..20 {
        let tier = if n % 2 == 0 { "even" } else { "odd" };
        items.push(json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": format!("ns-{n}"), "labels": {"tier": tier}}}));
        let apis = if n % 3 == 0 {
            "Shared.v1.example.com"
        } else {
            "Own.v1.example.com"
        };
        let spec = match n % 5 {
            0 => json!({}),
            1 => json!({"selector": {"matchLabels": {"tier": "odd"}}}),
            _ => json!({"targetNamespaces": [format!("ns-{n}"), format!("ns-{}", (n + 1) % 20)]}),
        };
        items.push(json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
            "metadata": {"name": format!("og-{n}"), "namespace": format!("ns-{n}"),
                         "annotations": {"olm.providedAPIs": format!("{apis},Thing{n}.v1.example.com")}},
            "spec": spec}));
        if n % 7 == 0 {
            items.push(
                json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
                "metadata": {"name": format!("og-{n}-second"), "namespace": format!("ns-{n}")},
                "spec": {"targetNamespaces": [format!("ns-{n}")]}}),
            );
        }
    }
    for i in 0..120 {
        let (group, revision) = (format!("ext-{}", i / 5), i % 5 + 1);
        let revision = if (i / 5) % 4 == 0 && revision == 5 {
            4
        } else {
            revision
        };
        let labels = json!({"olm.operatorframework.io/owner-name": group});
        let (labels, spec) = match i % 11 {
            0 => (labels, json!({"revision": revision})),
            1 => (json!({}), json!({"revision": revision})),
            _ => (labels, json!({"group": group, "revision": revision})),
        };
        items.push(
            json!({"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet",
            "metadata": {"name": format!("{group}-{i}"), "labels": labels}, "spec": spec}),
        );
    }
    for n in 0..12 {
        let role = if n % 4 == 0 {
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": format!("aggregate-{n}")},
                "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"team": "a"}}]}})
        } else {
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": format!("role-{n}"),
                             "labels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}},
                "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]})
        };
        items.push(role);
    }
    json!({"apiVersion": "v1", "kind": "List", "items": items})
}

/// `validate_batch` (each list decoded once per batch, indexes from the
/// second use on) reports exactly what one instance per evaluation does.
#[test]
fn batches_report_what_one_instance_per_evaluation_reports() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("crowded.json");
    std::fs::write(&file, crowded_snapshot().to_string()).unwrap();
    let file = file.to_str().unwrap();
    for requester in [&[][..], &["--as", "alice"][..]] {
        let mut args = vec!["--cluster", file];
        args.extend(requester);
        let batched = json_of(&args);
        args.push("--no-batch");
        let one_by_one = json_of(&args);
        assert_eq!(batched, one_by_one, "{requester:?}");
        // Not vacuous: both shared lists decide failures here.
        for policy in ["revision-uniqueness", "og-intersection"] {
            let fails = batched["results"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["policy"] == policy && r["result"] == "fail")
                .count();
            assert!(fails >= 4, "{policy}: {fails} fails\n{batched:#}");
        }
    }
}

/// A module without `validate_batch` (any Kubewarden policy that is not
/// ours; here ours with the operation's registered name altered) is
/// evaluated one object at a time, said once on stderr, with the results
/// a batch gives.
#[test]
fn a_module_without_batches_is_evaluated_one_by_one() {
    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir.path().join("crowded.json");
    std::fs::write(&snapshot, crowded_snapshot().to_string()).unwrap();
    let module = std::fs::read(dist().join("revision-uniqueness.wasm")).unwrap();
    let (from, to) = (b"validate_batch", b"validate_batcX");
    let mut altered = module.clone();
    let mut found = 0;
    for at in 0..module.len() - from.len() {
        if &module[at..at + from.len()] == from {
            altered[at..at + to.len()].copy_from_slice(to);
            found += 1;
        }
    }
    assert!(found > 0, "the module registers no validate_batch");
    let plain = dir.path().join("revision-uniqueness.wasm");
    std::fs::write(&plain, altered).unwrap();

    let snapshot = snapshot.to_str().unwrap();
    let without = audit_with(&plain, &["--cluster", snapshot, "-o", "json"]);
    assert!(without.status.success(), "{}", stderr(&without));
    let said = stderr(&without);
    assert_eq!(
        said.matches("cannot evaluate in batches").count(),
        1,
        "{said}"
    );
    assert!(
        said.contains("revision-uniqueness") && said.contains("validate_batch"),
        "{said}"
    );
    let module = dist().join("revision-uniqueness.wasm");
    let batched = audit_with(&module, &["--cluster", snapshot, "-o", "json"]);
    assert!(!stderr(&batched).contains("cannot evaluate in batches"));
    let results = |output: &Output| -> Value {
        serde_json::from_str::<Value>(&stdout(output)).unwrap()["results"].clone()
    };
    assert_eq!(results(&without), results(&batched));
}
