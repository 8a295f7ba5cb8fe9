//! What a new user trips over, met as that user meets it: through the
//! built binary and the real modules, outside the repository as well as in
//! it. An empty input file is refused rather than read as an empty cluster;
//! each concept has one flag on every command, and modules are found
//! wherever the CLI is installed; every `-o json` is one JSON document;
//! errors say the fix; generated files are right for kubectl and a local
//! policy-server; the README shows what the tool prints.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

mod common;
use common::oci_registry::{self, Registry};
use common::{CATALOG_SOURCE, dist, json_items, module, output_with_stdin, root, text, write};

/// `olm-guard` (the binary `binary`) in `cwd` with `args`, `env` set and
/// `$OLM_GUARD_DIST` unset unless `env` sets it, `stdin` written to it.
fn run_binary(
    binary: &Path,
    cwd: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    stdin: &str,
) -> Output {
    let mut command = Command::new(binary);
    command
        .args(args)
        .current_dir(cwd)
        .env_remove("OLM_GUARD_DIST")
        .envs(env.iter().copied());
    output_with_stdin(command, stdin)
}

fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_olm-guard"))
}

/// `olm-guard` in `cwd`.
fn olm_guard_in(cwd: &Path, args: &[&str]) -> Output {
    run_binary(&binary(), cwd, args, &[], "")
}

/// `olm-guard` in the repository's root.
fn olm_guard(args: &[&str]) -> Output {
    olm_guard_in(&root(), args)
}

/// The one-line error of a command that exited 2, its stdout empty.
fn exit_2(output: &Output) -> String {
    let stderr = text(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(2),
        "exit {:?}\nstdout: {}\nstderr: {stderr}",
        output.status.code(),
        text(&output.stdout)
    );
    assert!(
        output.stdout.is_empty(),
        "nothing is written: {}",
        text(&output.stdout)
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    stderr
}

fn succeeds(output: &Output) -> String {
    assert!(
        output.status.success(),
        "exit {:?}: {}",
        output.status.code(),
        text(&output.stderr)
    );
    text(&output.stdout)
}

const OPERATOR_GROUP: &str = "apiVersion: operators.coreos.com/v1
kind: OperatorGroup
metadata: {name: og, namespace: team-a}
spec: {}
";

/// An AdmissionReview of a CatalogSource CREATE, as the API server sends
/// one.
fn review() -> Value {
    let object: Value = serde_yaml_ng::from_str(CATALOG_SOURCE).unwrap();
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "0001", "operation": "CREATE", "name": "operatorhubio-catalog", "namespace": "olm",
        "kind": {"group": "operators.coreos.com", "version": "v1alpha1", "kind": "CatalogSource"},
        "resource": {"group": "operators.coreos.com", "version": "v1alpha1", "resource": "catalogsources"},
        "userInfo": {"username": "alice"}, "object": object}})
}

#[test]
fn a_file_with_no_object_is_refused_unless_an_empty_cluster_is_meant() {
    let dir = tempfile::tempdir().unwrap();
    let og = write(dir.path(), "og.yaml", OPERATOR_GROUP);
    let migrate = write(dir.path(), "migrate.yaml", "migrateLegacy: true\n");
    let empties = [
        (write(dir.path(), "empty.yaml", ""), "the file is empty"),
        (
            // What `kubectl get` prints for a kind with no object.
            write(
                dir.path(),
                "list.yaml",
                "apiVersion: v1\nkind: List\nitems: []\n",
            ),
            "it holds no object",
        ),
        (
            write(dir.path(), "comments.yaml", "# nothing\n---\n"),
            "it holds no object",
        ),
    ];
    for (empty, why) in &empties {
        let want = format!("--cluster {empty}: {why}");
        for args in [
            vec![
                "run",
                "og-intersection",
                "--object",
                &og,
                "--cluster",
                empty,
            ],
            vec!["run", "all", "--object", &og, "--cluster", empty],
            vec!["audit", "--cluster", empty, "--fail-on-violation"],
            vec![
                "scaffold",
                "vap",
                "aggregation-escalation",
                "--cluster",
                empty,
            ],
        ] {
            let refused = exit_2(&olm_guard(&args));
            assert!(refused.contains(&want), "{args:?}: {refused}");
            assert!(refused.contains("--allow-empty"), "{args:?}: {refused}");
            let mut allowed = args.clone();
            allowed.push("--allow-empty");
            succeeds(&olm_guard(&allowed));
        }
    }
    // An empty discovery table is not a cluster that serves nothing.
    let (empty, _) = &empties[0];
    for args in [
        vec![
            "run",
            "og-intersection",
            "--object",
            &og,
            "--api-resources",
            empty,
        ],
        vec![
            "scaffold",
            "vap",
            "catalog-union",
            "--settings",
            &migrate,
            "--api-resources",
            empty,
        ],
    ] {
        let refused = exit_2(&olm_guard(&args));
        assert!(
            refused.contains(&format!("--api-resources {empty}: the file is empty")),
            "{args:?}: {refused}"
        );
        assert!(refused.contains("--allow-empty"), "{args:?}: {refused}");
    }
    // --object is what is evaluated: an empty one has nothing to evaluate,
    // as `kubectl apply -f` refuses one.
    let refused = exit_2(&olm_guard(&["run", "catalog-union", "--object", empty]));
    assert!(
        refused.contains(&format!(
            "{empty}: no object in the file: nothing to evaluate"
        )),
        "{refused}"
    );
    // Said where a user looks.
    for command in [&["run"][..], &["audit"], &["bench"], &["scaffold", "vap"]] {
        let help = help(command);
        assert!(help.contains("--allow-empty"), "{command:?}: {help}");
    }
}

/// The commands that take modules by name, settings, or a requester.
const TAKE_MODULES: &[&[&str]] = &[
    &["run"],
    &["test"],
    &["audit"],
    &["snapshot"],
    &["bench"],
    &["inspect"],
    &["scaffold", "manifest"],
    &["scaffold", "policies"],
];
const TAKE_SETTINGS: &[&[&str]] = &[
    &["run"],
    &["audit"],
    &["bench"],
    &["scaffold", "manifest"],
    &["scaffold", "vap"],
];

fn help(words: &[&str]) -> String {
    let mut args = words.to_vec();
    args.push("--help");
    succeeds(&olm_guard(&args))
}

#[test]
fn each_concept_has_one_flag_on_every_command() {
    for words in TAKE_MODULES {
        let help = help(words);
        assert!(help.contains("--dist <DIR>"), "{words:?}: {help}");
        assert!(help.contains("OLM_GUARD_DIST"), "{words:?}: {help}");
    }
    for words in TAKE_SETTINGS {
        let help = help(words);
        assert!(
            help.contains("--settings <[MODULE=]FILE>"),
            "{words:?}: {help}"
        );
    }
    for words in [&["run"][..], &["audit"]] {
        let help = help(words);
        assert!(
            help.contains("--as <USER>") && help.contains("--as-group <GROUP>"),
            "{words:?}: {help}"
        );
    }
    // The older spellings are no longer taught...
    for words in TAKE_MODULES.iter().chain(TAKE_SETTINGS) {
        let help = help(words);
        for old in [
            "--policies <",
            "--settings-path",
            "--user <",
            "--group <",
            "--policy <",
        ] {
            assert!(!help.contains(old), "{words:?} teaches {old}: {help}");
        }
    }
    // ...but scripts that use them keep working.
    let dir = tempfile::tempdir().unwrap();
    let cs = write(dir.path(), "cs.yaml", CATALOG_SOURCE);
    let migrate = write(dir.path(), "migrate.yaml", "migrateLegacy: true\n");
    let dist = dist().display().to_string();
    let audit = olm_guard(&[
        "audit",
        "--policies",
        &dist,
        "--cluster",
        "examples/audit/cluster.yaml",
        "-o",
        "json",
    ]);
    assert_eq!(
        json_items(succeeds(&audit).as_bytes())[0]["policies"]
            .as_array()
            .unwrap()
            .len(),
        6
    );
    let old = olm_guard(&[
        "scaffold",
        "manifest",
        "-t",
        "ClusterAdmissionPolicy",
        "catalog-union",
        "--settings-path",
        &migrate,
    ]);
    assert!(succeeds(&old).contains("migrateLegacy: true"));
    let as_user = olm_guard(&[
        "run",
        "catalog-union",
        "--object",
        &cs,
        "--user",
        "alice",
        "--group",
        "team-a",
        "-o",
        "json",
    ]);
    let review = &json_items(succeeds(&as_user).as_bytes())[0];
    assert_eq!(review["response"]["allowed"], true);

    // The new ones: audit takes MODULEs and --settings FILE for one module,
    // scaffold manifest --dist and --settings.
    let audit = olm_guard(&[
        "audit",
        "catalog-union",
        "--settings",
        &migrate,
        "--cluster",
        "examples/audit/cluster.yaml",
        "-o",
        "json",
    ]);
    let report = &json_items(succeeds(&audit).as_bytes())[0];
    assert_eq!(report["policies"][0]["name"], "catalog-union", "{report}");
    assert_eq!(report["policies"].as_array().unwrap().len(), 1, "{report}");
    let elsewhere = tempfile::tempdir().unwrap();
    let manifest = olm_guard_in(
        elsewhere.path(),
        &[
            "scaffold",
            "manifest",
            "-t",
            "ClusterAdmissionPolicy",
            "--dist",
            &dist,
            "catalog-union",
            "--settings",
            &migrate,
        ],
    );
    assert!(succeeds(&manifest).contains("migrateLegacy: true"));
}

/// `<dir>/bin/olm-guard`, the binary under test linked (or copied) there,
/// and `<dir>/share/olm-guard/modules` with the built modules: the layout
/// `make install PREFIX=<dir>` writes.
fn install(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    let modules = dir.join("share/olm-guard/modules");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&modules).unwrap();
    let installed = bin.join("olm-guard");
    // A hard link is a second name of the same file, as the kernel names it
    // in /proc/self/exe; a copy where links cannot be made.
    if std::fs::hard_link(binary(), &installed).is_err() {
        std::fs::copy(binary(), &installed).unwrap();
    }
    for entry in std::fs::read_dir(dist()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "wasm") {
            std::fs::copy(&path, modules.join(path.file_name().unwrap())).unwrap();
        }
    }
    installed
}

#[test]
fn modules_are_found_wherever_the_cli_is_installed() {
    let elsewhere = tempfile::tempdir().unwrap();
    let cs = write(elsewhere.path(), "cs.yaml", CATALOG_SOURCE);
    let run = [
        "run",
        "catalog-union",
        "--object",
        cs.as_str(),
        "-o",
        "json",
    ];

    // Nowhere to look: every place looked at is named, with the fix.
    let lost = exit_2(&olm_guard_in(elsewhere.path(), &run));
    for place in [
        "--dist is not given",
        "$OLM_GUARD_DIST is not set",
        "./dist holds no module",
        "share/olm-guard/modules does not exist",
        "make install",
    ] {
        assert!(lost.contains(place), "{place}: {lost}");
    }

    // $OLM_GUARD_DIST, and --dist over it.
    let dist = dist().display().to_string();
    let by_env = run_binary(
        &binary(),
        elsewhere.path(),
        &run,
        &[("OLM_GUARD_DIST", &dist)],
        "",
    );
    succeeds(&by_env);
    let nowhere = elsewhere.path().join("nowhere").display().to_string();
    let wrong_env = run_binary(
        &binary(),
        elsewhere.path(),
        &run,
        &[("OLM_GUARD_DIST", &nowhere)],
        "",
    );
    assert!(exit_2(&wrong_env).contains("$OLM_GUARD_DIST is"));
    let mut flag = run.to_vec();
    flag.extend(["--dist", &dist]);
    succeeds(&run_binary(
        &binary(),
        elsewhere.path(),
        &flag,
        &[("OLM_GUARD_DIST", &nowhere)],
        "",
    ));

    // Installed: the modules beside the binary, from any directory.
    let prefix = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let installed = install(prefix.path());
    let one = run_binary(&installed, elsewhere.path(), &run, &[], "");
    assert_eq!(
        json_items(succeeds(&one).as_bytes())[0]["response"]["allowed"],
        true
    );
    let all = run_binary(
        &installed,
        elsewhere.path(),
        &["run", "all", "--object", &cs, "-o", "json"],
        &[],
        "",
    );
    assert_eq!(json_items(succeeds(&all).as_bytes()).len(), 1);
    let misspelt = exit_2(&run_binary(
        &installed,
        elsewhere.path(),
        &["run", "catalog-unoin", "--object", &cs],
        &[],
        "",
    ));
    assert!(
        misspelt.contains("(installed with olm-guard)"),
        "{misspelt}"
    );
    assert!(
        misspelt.contains("its modules are aggregation-escalation, catalog-union, group-authorization, og-intersection, revision-uniqueness, scope-rbac"),
        "{misspelt}"
    );
    assert!(
        misspelt.contains("Did you mean catalog-union?"),
        "{misspelt}"
    );

    // ./dist, when it holds modules, before the installed ones: a checkout
    // with its own build.
    let checkout = elsewhere.path().join("checkout");
    std::fs::create_dir_all(checkout.join("dist")).unwrap();
    std::fs::copy(
        module("og-intersection"),
        checkout.join("dist/og-intersection.wasm"),
    )
    .unwrap();
    let local = run_binary(
        &installed,
        &checkout,
        &["run", "all", "--object", &cs, "-o", "json"],
        &[],
        "",
    );
    // og-intersection alone: the CatalogSource goes to no module.
    assert!(json_items(succeeds(&local).as_bytes()).is_empty());
    assert!(text(&local.stderr).contains("1 object no module applies to"));
}

/// Every command that offers `-o json`, and how to run it so that it prints
/// something; each must print one JSON document (and with `-o yaml`, where
/// it offers it, one YAML document). The commands that reach a registry
/// are run against one on loopback.
#[test]
fn every_json_output_is_one_json_document() {
    let dir = tempfile::tempdir().unwrap();
    let request = write(dir.path(), "review.json", &review().to_string());
    let manifest = root().join("examples/preflight/conflicting-operatorgroups.yaml");
    let manifest = manifest.to_str().unwrap();
    let cs = write(dir.path(), "cs.yaml", CATALOG_SOURCE);
    let cs_twice = write(
        dir.path(),
        "two.yaml",
        &format!(
            "{CATALOG_SOURCE}---\n{}",
            CATALOG_SOURCE.replace("operatorhubio", "other")
        ),
    );

    let registry = Registry::start(false);
    let home = tempfile::tempdir().unwrap();
    let reference = format!("{}:v1", registry.reference("policies/catalog-union"));
    let keys = oci_registry::olm_guard_with(
        home.path(),
        &["keygen"],
        &[("COSIGN_PASSWORD", "first use")],
    );
    succeeds(&keys);
    let key = home.path().join("cosign.key").display().to_string();
    let public = home.path().join("cosign.pub").display().to_string();
    let module = module("catalog-union").display().to_string();

    // (the words up to the format, the words after it, its documents).
    type Case<'a> = (&'a [&'a str], Vec<&'a str>, usize);
    let registry_cases: Vec<Case> = vec![
        (&["push"], vec![&module, &reference, "--insecure"], 1),
        (&["sign"], vec!["-k", &key, &reference, "--insecure"], 1),
        (
            &["verify"],
            vec!["-k", &public, &reference, "--insecure"],
            1,
        ),
        (&["pull"], vec![&reference, "--insecure"], 1),
    ];
    let local_cases: Vec<Case> = vec![
        (&["run"], vec!["catalog-union", "--request", &request], 1),
        (&["run"], vec!["catalog-union", "--object", &cs], 1),
        (&["run"], vec!["catalog-union", "--object", &cs_twice], 2),
        (
            &["run"],
            vec!["all", "--object", manifest, "--no-cluster"],
            2,
        ),
        (&["test"], vec!["testdata/catalog-union"], 1),
        (&["test"], vec!["examples/suites/catalog-union.yaml"], 1),
        (
            &["audit"],
            vec!["--cluster", "examples/audit/cluster.yaml"],
            1,
        ),
        (&["inspect"], vec!["catalog-union"], 1),
        (
            &["scaffold", "manifest"],
            vec!["-t", "ClusterAdmissionPolicy", "catalog-union"],
            1,
        ),
        (&["scaffold", "policies"], vec!["all"], 1),
    ];
    let mut covered: Vec<&[&str]> = Vec::new();
    for (words, rest, items) in registry_cases.iter().chain(&local_cases) {
        for format in ["json", "yaml"] {
            let mut args = words.to_vec();
            args.extend(["-o", format]);
            args.extend(rest.iter().copied());
            let output = if ["sign", "push", "verify", "pull"].contains(&words[0]) {
                // push and sign again write the same manifest and
                // signatures: signing never adds a duplicate.
                oci_registry::olm_guard_with(
                    home.path(),
                    &args,
                    &[("COSIGN_PASSWORD", "first use")],
                )
            } else {
                olm_guard(&args)
            };
            // `test` exits 1 when a case fails; either way stdout is data.
            assert!(
                matches!(output.status.code(), Some(0 | 1)),
                "{args:?}: {}",
                text(&output.stderr)
            );
            let found = if format == "json" {
                json_items(&output.stdout)
            } else {
                common::yaml_items(&output.stdout)
            };
            assert_eq!(found.len(), *items, "{args:?}: {}", text(&output.stdout));
        }
        covered.push(words);
    }
    // Every command whose -o offers json is among them, but `snapshot`,
    // which needs a live cluster: tests/live_papercuts.rs reads its -o json
    // and -o yaml back.
    covered.push(&["snapshot"]);
    for words in help_commands() {
        if offers_json(&help(&words)) {
            assert!(
                covered.contains(&&words[..]),
                "{words:?} offers -o json and is not checked here"
            );
        }
    }
}

/// Whether a command's help lists `json` among the values of its
/// `-o, --output` (as `[possible values: ..., json]` or a `- json:` line),
/// read from that option's line to the next option's.
fn offers_json(help: &str) -> bool {
    let mut lines = help
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("-o, --output"));
    let Some(first) = lines.next() else {
        return false;
    };
    let is_option = |l: &str| l.starts_with("  -") || l.starts_with("      --");
    std::iter::once(first)
        .chain(lines.take_while(|l| !is_option(l)))
        .any(|l| {
            l.trim_start().starts_with("- json:")
                || l.split("[possible values: ")
                    .nth(1)
                    .is_some_and(|values| values.split([',', ']']).any(|v| v.trim() == "json"))
        })
}

/// Every command, by its words after `olm-guard`, as the top-level help
/// lists them (and scaffold's).
fn help_commands() -> Vec<Vec<&'static str>> {
    let mut commands = Vec::new();
    for (top, below) in [(vec![], None), (vec!["scaffold"], Some("scaffold"))] {
        let help = help(&top);
        let listed = help
            .split("Commands:")
            .nth(1)
            .unwrap()
            .split("\n\n")
            .next()
            .unwrap();
        for line in listed.lines() {
            let word = line.split_whitespace().next().unwrap_or_default();
            if word.is_empty() || word == "help" {
                continue;
            }
            let word: &'static str = Box::leak(word.to_string().into_boxed_str());
            let mut words: Vec<&'static str> = below.into_iter().collect();
            words.push(word);
            if words != ["scaffold"] {
                commands.push(words);
            }
        }
    }
    commands
}

#[test]
fn errors_say_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let cs = write(dir.path(), "cs.yaml", CATALOG_SOURCE);

    // Two YAML documents where one is read.
    let two = write(
        dir.path(),
        "two.yaml",
        "allowLegacy: true\n---\nwarnLegacy: true\n",
    );
    for flag in ["--settings", "--request"] {
        let mut args = vec!["run", "catalog-union", flag, &two];
        if flag == "--settings" {
            args.extend(["--object", &cs]);
        }
        let refused = exit_2(&olm_guard(&args));
        assert!(
            refused.contains(&format!("{two}: one document expected, found 2")),
            "{flag}: {refused}"
        );
    }

    // --request - reads stdin, as --object - does.
    let from_stdin = run_binary(
        &binary(),
        &root(),
        &["run", "catalog-union", "--request", "-", "-o", "json"],
        &[],
        &review().to_string(),
    );
    let printed: Value = serde_json::from_str(&succeeds(&from_stdin)).unwrap();
    assert_eq!(printed["response"]["uid"], "0001");

    // A scenario path that does not exist, or that is not a suite.
    let missing = exit_2(&olm_guard(&["test", "nope.yaml"]));
    assert!(
        missing.contains(
            "nope.yaml: no such file or directory: give a directory of scenarios or a suite file"
        ),
        "{missing}"
    );
    let object = exit_2(&olm_guard(&["test", &cs]));
    assert!(
        object.contains("this is not a test suite but a Kubernetes CatalogSource object"),
        "{object}"
    );
    assert!(
        object.contains("olm-guard run <module> --object"),
        "{object}"
    );

    // A directory where a file is read.
    let as_dir = exit_2(&olm_guard(&[
        "run",
        "catalog-union",
        "--object",
        &cs,
        "--cluster",
        dir.path().to_str().unwrap(),
    ]));
    assert!(
        as_dir
            .contains("a directory; give one file, or several: --cluster a.yaml --cluster b.yaml"),
        "{as_dir}"
    );

    // A request no API server could send gets no verdict.
    let mut lower = review();
    lower["request"]["operation"] = json!("create");
    let mut no_kind = review();
    no_kind["request"].as_object_mut().unwrap().remove("kind");
    for (request, want) in [
        (
            lower,
            "the AdmissionRequest's operation is \"create\", which the API server never sends (write CREATE)",
        ),
        (
            no_kind,
            "the AdmissionRequest's kind is missing: the API server always sends the object's {group, version, kind}",
        ),
    ] {
        let file = write(dir.path(), "bad.json", &request.to_string());
        let refused = exit_2(&olm_guard(&["run", "catalog-union", "--request", &file]));
        assert!(refused.contains(want), "{refused}");
    }
}

#[test]
fn scaffold_manifest_checks_settings_with_the_module_and_quotes_them_for_kubectl() {
    let dir = tempfile::tempdir().unwrap();
    // `yes` is a string to a YAML 1.2 reader: catalog-union refuses it.
    let yes = write(dir.path(), "yes.yaml", "migrateLegacy: yes\n");
    let out = dir.path().join("cu.yaml");
    let refused = exit_2(&olm_guard(&[
        "scaffold",
        "manifest",
        "-t",
        "ClusterAdmissionPolicy",
        "catalog-union",
        "--settings",
        &yes,
        "--output-file",
        out.to_str().unwrap(),
    ]));
    assert!(refused.contains(&format!("--settings {yes}")), "{refused}");
    assert!(refused.contains("migrateLegacy"), "{refused}");
    assert!(!out.exists(), "nothing is written");

    // Strings kubectl's YAML 1.1 reader would take for booleans stay strings.
    let feeding = write(
        dir.path(),
        "feeding.yaml",
        "allowFeeding: ['yes', 'on', view]\n",
    );
    let manifest = succeeds(&olm_guard(&[
        "scaffold",
        "manifest",
        "-t",
        "ClusterAdmissionPolicy",
        "aggregation-escalation",
        "--settings",
        &feeding,
    ]));
    for line in ["    - 'yes'", "    - 'on'", "    - view"] {
        assert!(manifest.lines().any(|l| l == line), "{line:?}:\n{manifest}");
    }
    let read: Value = serde_yaml_ng::from_str(&manifest).unwrap();
    assert_eq!(
        read["spec"]["settings"]["allowFeeding"],
        json!(["yes", "on", "view"])
    );
}

#[test]
fn scaffold_policies_names_the_modules_just_built_for_a_local_policy_server() {
    let local = succeeds(&olm_guard(&["scaffold", "policies", "all", "--file-urls"]));
    assert!(
        local.contains("# The modules are the files named (--file-urls)"),
        "{local}"
    );
    let policies: serde_json::Map<String, Value> = serde_yaml_ng::from_str(&local).unwrap();
    assert_eq!(policies.len(), 6, "{local}");
    for (name, policy) in &policies {
        let module = policy["module"].as_str().unwrap();
        let path = url::Url::parse(module)
            .unwrap_or_else(|e| panic!("{name}: {module}: {e}"))
            .to_file_path()
            .unwrap_or_else(|()| panic!("{name}: {module} names no absolute path"));
        assert_eq!(
            path,
            common::module(name).canonicalize().unwrap(),
            "{name}: {module}"
        );
    }
    // Without it, the published references, and the README says where
    // policy-server puts what it downloads.
    let published = succeeds(&olm_guard(&["scaffold", "policies", "all"]));
    assert_eq!(
        published,
        std::fs::read_to_string(root().join("deploy/policies.yml")).unwrap()
    );
    let readme = std::fs::read_to_string(root().join("README.md"))
        .unwrap()
        .replace('\n', " ");
    assert!(
        readme.contains("`--policies-download-dir`, whose default is the current directory"),
        "README: policy-server's download directory"
    );
}

/// A fenced `text` block of the README, from the line after `marker` to
/// the fence, each line without the block's two-space indent.
fn readme_block(readme: &str, marker: &str) -> Vec<String> {
    let start = readme
        .find(marker)
        .unwrap_or_else(|| panic!("README has no {marker:?}"));
    readme[start..]
        .lines()
        .skip(1)
        .take_while(|line| line.trim() != "```")
        .map(|line| line.strip_prefix("  ").unwrap_or(line).to_string())
        .collect()
}

/// The README's first showcase of `run`, replayed: its files written as it
/// shows them, its command run, and its output compared line by line (a
/// line the README cuts with `…` by its start).
#[test]
fn the_readme_shows_what_run_prints() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let block = readme_block(&readme, "  $ cat cs.yaml");
    let dir = tempfile::tempdir().unwrap();
    let (mut file, mut command, mut output) = ("cs.yaml".to_string(), None, Vec::new());
    let mut files: Vec<(String, String)> = vec![("cs.yaml".into(), String::new())];
    for line in &block {
        if let Some(name) = line.strip_prefix("$ cat ") {
            files.push((name.to_string(), String::new()));
            file = name.to_string();
        } else if let Some(run) = line.strip_prefix("$ ") {
            command = Some(run.to_string());
            file.clear();
        } else if command.is_some() {
            output.push(line.clone());
        } else {
            let (_, content) = files.iter_mut().rev().find(|(n, _)| *n == file).unwrap();
            content.push_str(line);
            content.push('\n');
        }
    }
    for (name, content) in files.iter().filter(|(_, c)| !c.is_empty()) {
        write(dir.path(), name, content);
    }
    let command = command.expect("the README's block runs a command");
    let words: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(words[0], "olm-guard", "{command}");
    let dist = dist().display().to_string();
    let printed = succeeds(&run_binary(
        &binary(),
        dir.path(),
        &words[1..],
        &[("OLM_GUARD_DIST", &dist)],
        "",
    ));
    let printed: Vec<&str> = printed.lines().collect();
    assert_eq!(printed.len(), output.len(), "{}", printed.join("\n"));
    for (shown, got) in output.iter().zip(&printed) {
        match shown.strip_suffix(" …") {
            Some(start) => assert!(got.starts_with(start), "README: {shown}\nrun:    {got}"),
            None => assert_eq!(shown, got),
        }
    }
}

/// What the README says the shipped verification config's placeholder key
/// answers is what it answers.
#[test]
fn the_readme_quotes_the_placeholder_key_error_as_it_is() {
    let output = olm_guard(&[
        "verify",
        "--verification-config",
        "deploy/verification-config.yml",
        "registry://127.0.0.1:1/policies/catalog-union:v1",
    ]);
    let refused = exit_2(&output);
    let message = refused
        .trim_end()
        .strip_prefix("olm-guard: ")
        .unwrap()
        .split(": put the contents")
        .next()
        .unwrap();
    let readme = std::fs::read_to_string(root().join("README.md"))
        .unwrap()
        .replace('\n', " ");
    assert!(
        readme.contains(&format!("`{message}`")),
        "the README does not quote {message:?}"
    );
}
