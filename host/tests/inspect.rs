//! `olm-guard inspect` and `olm-guard annotate`'s metadata and host
//! capability checks, through the binary, on the real modules in dist/
//! (`make dist` builds them).

use std::path::Path;
use std::process::{Command, Output};

use olm_guard_runtime::metadata::{METADATA_SECTION, custom_section};

mod common;
use common::{module, root};

fn olm_guard(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_olm-guard"))
        .args(args)
        .output()
        .unwrap()
}

fn inspect(path: &Path, output: &str) -> Output {
    olm_guard(&[
        "inspect".as_ref(),
        path.as_os_str(),
        "-o".as_ref(),
        output.as_ref(),
    ])
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn one_line_error(out: &Output) -> String {
    assert!(
        !out.status.success(),
        "succeeded: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8(out.stderr.clone()).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    err
}

#[test]
fn the_readable_view_shows_identity_rules_and_grants_and_summarises_the_usage() {
    let text = stdout(&inspect(&module("scope-rbac"), "text"));
    for expected in [
        "title:             scope-rbac",
        "version:           0.1.0",
        "display name:      Scope RBAC",
        "oci url:           ghcr.io/olm-guard/policies/scope-rbac",
        "protocol version:  v1",
        "mutating:          false",
        "background audit:  false",
        "  operators.coreos.com, operators.io.operator-framework  v1alpha1",
        "scopetemplates, scopeinstances  CREATE, UPDATE",
        "  rbac.authorization.k8s.io/v1 ClusterRoleBinding",
        "  kubernetes/can_i",
        "settings:          not part of the metadata",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
    let usage = text
        .lines()
        .find(|l| l.starts_with("  io.kubewarden.policy.usage: ("))
        .unwrap_or_else(|| panic!("usage not summarised:\n{text}"));
    assert!(usage.contains(" characters, "), "{usage}");
    assert!(
        !text.contains("## Settings"),
        "the README is printed:\n{text}"
    );

    let catalog = stdout(&inspect(&module("catalog-union"), "text"));
    assert!(
        catalog.contains("host capabilities: none (every host call is denied)"),
        "{catalog}"
    );
    assert!(
        catalog.contains("context-aware resources: none"),
        "{catalog}"
    );
}

#[test]
fn json_and_yaml_are_the_embedded_document_itself() {
    for name in ["catalog-union", "og-intersection"] {
        let path = module(name);
        let wasm = std::fs::read(&path).unwrap();
        let embedded: serde_json::Value =
            serde_json::from_slice(custom_section(&wasm, METADATA_SECTION).unwrap().unwrap())
                .unwrap();
        let json: serde_json::Value =
            serde_json::from_str(&stdout(&inspect(&path, "json"))).unwrap();
        assert_eq!(json, embedded, "{name}");
        let yaml: serde_json::Value =
            serde_yaml_ng::from_str(&stdout(&inspect(&path, "yaml"))).unwrap();
        assert_eq!(yaml, embedded, "{name}");
        let readme =
            std::fs::read_to_string(root().join("policies").join(name).join("README.md")).unwrap();
        assert_eq!(
            json["annotations"]["io.kubewarden.policy.usage"],
            readme.as_str()
        );
    }
}

#[test]
fn a_module_without_metadata_is_one_line_saying_to_annotate_it() {
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("bare.wasm");
    std::fs::write(&bare, wat::parse_str("(module)").unwrap()).unwrap();
    let err = one_line_error(&inspect(&bare, "text"));
    assert!(err.contains("has no Kubewarden metadata"), "{err}");
    assert!(err.contains("olm-guard annotate -m metadata.yml"), "{err}");

    let missing = dir.path().join("missing.wasm");
    let err = one_line_error(&inspect(&missing, "json"));
    assert!(
        err.contains("cannot read") && err.contains("missing.wasm"),
        "{err}"
    );

    let junk = dir.path().join("junk.wasm");
    std::fs::write(&junk, b"not wasm").unwrap();
    let err = one_line_error(&inspect(&junk, "yaml"));
    // Named once, said once (not "not a wasm module: not a wasm module").
    assert!(
        err.trim_end().ends_with("junk.wasm: not a wasm module"),
        "{err}"
    );
}

/// `annotate` refuses metadata kwctl would refuse, or that could not be
/// published, naming the field and the fix, and writes nothing.
#[test]
fn annotate_refuses_bad_metadata_naming_the_field_and_the_fix() {
    let text = std::fs::read_to_string(root().join("policies/catalog-union/metadata.yml")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (from, to, expected) in [
        (
            "ghcr.io/olm-guard/policies/catalog-union",
            "ghcr.io/olm-guard/policies/catalog-union:v0.1.0",
            "annotations.\"io.kubewarden.policy.ociUrl\": \"ghcr.io/olm-guard/policies/catalog-union:v0.1.0\" must not carry a tag; write the repository only, e.g. ghcr.io/olm-guard/policies/catalog-union",
        ),
        (
            "operations: [\"CREATE\", \"UPDATE\"]",
            "operations: [\"CREATE\", \"*\"]",
            "rules[0].operations: \"*\" already means all",
        ),
        (
            "hostCapabilities: []",
            "hostCapabilities: [kubernetes/list]",
            "hostCapabilities[0]: \"kubernetes/list\": unknown segment \"list\"",
        ),
        (
            "  io.kubewarden.policy.severity: medium\n",
            "",
            "annotations.\"io.kubewarden.policy.severity\": missing",
        ),
    ] {
        assert!(text.contains(from), "{from}");
        let metadata = dir.path().join("metadata.yml");
        std::fs::write(&metadata, text.replacen(from, to, 1)).unwrap();
        let out_wasm = dir.path().join("out.wasm");
        let out = olm_guard(&[
            "annotate".as_ref(),
            module("catalog-union").as_os_str(),
            "-m".as_ref(),
            metadata.as_os_str(),
            "--output-file".as_ref(),
            out_wasm.as_os_str(),
        ]);
        let err = one_line_error(&out);
        assert!(err.contains(expected), "{err}");
        assert!(err.contains("metadata.yml"), "the file is not named: {err}");
        assert!(!out_wasm.exists());
    }
}

/// `annotate` scans the module's data for host calls as `kwctl annotate`
/// does: a module calling a capability its metadata does not declare is
/// refused in one line naming the capability, the file and the fix, and
/// nothing is written; a declared capability the scan does not find is a
/// warning, and the module is written.
#[test]
fn annotate_refuses_an_undeclared_host_capability_and_warns_on_an_unused_one() {
    let dir = tempfile::tempdir().unwrap();
    let annotate = |name: &str, from: &str, to: &str| {
        let text = std::fs::read_to_string(root().join("policies").join(name).join("metadata.yml"))
            .unwrap();
        assert!(text.contains(from), "{name}: {from}");
        let metadata = dir.path().join(format!("{name}.yml"));
        std::fs::write(&metadata, text.replacen(from, to, 1)).unwrap();
        let out_wasm = dir.path().join(format!("{name}.wasm"));
        let out = olm_guard(&[
            "annotate".as_ref(),
            module(name).as_os_str(),
            "-m".as_ref(),
            metadata.as_os_str(),
            "--output-file".as_ref(),
            out_wasm.as_os_str(),
        ]);
        (out, out_wasm)
    };

    let (out, written) = annotate("scope-rbac", "  - kubernetes/get_resource\n", "");
    let err = one_line_error(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for expected in [
        "scope-rbac.wasm: the module calls host capability kubernetes/get_resource",
        "scope-rbac.yml does not declare it in hostCapabilities",
        "declare it there, or build the module without it",
    ] {
        assert!(err.contains(expected), "{expected:?} not in {err}");
    }
    assert!(!written.exists());

    let (out, written) = annotate(
        "catalog-union",
        "hostCapabilities: []",
        "hostCapabilities: [kubernetes/can_i]",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning: ")
            && err.contains("hostCapabilities declares kubernetes/can_i, but the module")
            && err.contains("does not call it"),
        "{err}"
    );
    assert!(written.exists());
}

#[test]
fn a_module_is_named_as_every_other_command_names_it() {
    // A name in --dist, as its help's first example.
    let dist = root().join("dist");
    let by_name = olm_guard(&[
        "inspect".as_ref(),
        "catalog-union".as_ref(),
        "--dist".as_ref(),
        dist.as_os_str(),
    ]);
    let by_path = inspect(&module("catalog-union"), "text");
    assert_eq!(stdout(&by_name), stdout(&by_path));
    let missing = olm_guard(&[
        "inspect".as_ref(),
        "no-such-module".as_ref(),
        "--dist".as_ref(),
        dist.as_os_str(),
    ]);
    // A misspelt name is answered with the modules there.
    let error = one_line_error(&missing);
    assert!(
        error.contains("its modules are aggregation-escalation, catalog-union,"),
        "{error}"
    );
}
