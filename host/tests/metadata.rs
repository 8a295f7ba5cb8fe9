//! Metadata embedding and enforcement with the real modules in dist/
//! (`make dist` builds and annotates them).

use std::collections::BTreeSet;
use std::process::Command;

mod common;
use common::{module, root};

use olm_guard_runtime::metadata::{
    METADATA_SECTION, Metadata, custom_section, detect_host_capabilities, with_custom_section,
};

#[test]
fn annotated_modules_carry_their_metadata_yml() {
    for entry in std::fs::read_dir(root().join("policies")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let wasm = std::fs::read(module(&name)).unwrap();
        let embedded = Metadata::from_module(&wasm)
            .unwrap()
            .unwrap_or_else(|| panic!("dist/{name}.wasm is not annotated"));
        let text =
            std::fs::read_to_string(root().join("policies").join(&name).join("metadata.yml"))
                .unwrap();
        let declared = Metadata::from_yaml(&text).unwrap();
        assert_eq!(embedded.protocol_version.as_deref(), Some("v1"), "{name}");
        assert_eq!(embedded.rules, declared.rules, "{name}");
        assert_eq!(
            embedded.context_aware_resources, declared.context_aware_resources,
            "{name}"
        );
        assert_eq!(
            embedded.host_capabilities, declared.host_capabilities,
            "{name}"
        );
        assert_eq!(embedded.mutating, declared.mutating, "{name}");
        assert!(
            embedded
                .annotations
                .contains_key("io.kubewarden.policy.usage"),
            "{name}"
        );
    }
}

#[test]
fn re_annotating_replaces_the_section_instead_of_adding_one() {
    let wasm = std::fs::read(module("catalog-union")).unwrap();
    let once = with_custom_section(&wasm, METADATA_SECTION, b"{\"a\":1}").unwrap();
    let twice = with_custom_section(&once, METADATA_SECTION, b"{\"b\":2}").unwrap();
    assert_eq!(
        custom_section(&twice, METADATA_SECTION).unwrap(),
        Some(&b"{\"b\":2}"[..])
    );
    let sections = wasmparser::Parser::new(0)
        .parse_all(&twice)
        .filter(|p| matches!(p, Ok(wasmparser::Payload::CustomSection(r)) if r.name() == METADATA_SECTION))
        .count();
    assert_eq!(sections, 1);
}

/// A module whose metadata forgets a kind it lists is refused that list at
/// evaluation time, locally, and the policy fails closed with the reason.
#[test]
fn a_metadata_omission_fails_locally_and_closed() {
    let scenario = root().join("testdata/revision-uniqueness/create-duplicate-of-active-denied");
    let dir = tempfile::tempdir().unwrap();
    let text =
        std::fs::read_to_string(root().join("policies/revision-uniqueness/metadata.yml")).unwrap();
    let mut metadata: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
    metadata["contextAwareResources"] = serde_yaml_ng::Value::Sequence(vec![]);
    let forgetful = dir.path().join("metadata.yml");
    std::fs::write(&forgetful, serde_yaml_ng::to_string(&metadata).unwrap()).unwrap();

    let output = Command::new(env!("CARGO_BIN_EXE_olm-guard"))
        .arg("run")
        .args(["-o", "json"])
        .arg("--policy")
        .arg(module("revision-uniqueness"))
        .arg("--metadata")
        .arg(&forgetful)
        .arg("--request")
        .arg(scenario.join("request.json"))
        .arg("--cluster")
        .arg(scenario.join("cluster.yaml"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let review: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let response = &review["response"];
    assert_eq!(response["allowed"], false);
    let message = response["status"]["message"].as_str().unwrap();
    assert!(
        message.contains(
            "Policy has not been granted access to Kubernetes olm.operatorframework.io/v1/ClusterObjectSet resources"
        ),
        "{message}"
    );
}

/// What `kwctl annotate` would find: each module's code can call exactly
/// the host capabilities its metadata.yml declares, no undeclared one (the
/// shared adapter links only the capabilities given to `policy_module!`)
/// and no declared one missing.
#[test]
fn every_module_calls_exactly_the_host_capabilities_it_declares() {
    let mut modules = 0;
    for entry in std::fs::read_dir(root().join("policies")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let wasm = std::fs::read(module(&name)).unwrap();
        let detected = detect_host_capabilities(&wasm).unwrap();
        let text =
            std::fs::read_to_string(root().join("policies").join(&name).join("metadata.yml"))
                .unwrap();
        let declared = Metadata::from_yaml(&text).unwrap();
        let declared_set: BTreeSet<String> = declared
            .host_capabilities
            .clone()
            .unwrap_or_else(|| panic!("{name}: metadata.yml declares no hostCapabilities"))
            .into_iter()
            .collect();
        assert_eq!(
            detected, declared_set,
            "{name}: the module's code (left) and metadata.yml's hostCapabilities (right) differ"
        );
        assert!(declared.capability_mismatch(&detected).is_empty(), "{name}");
        eprintln!("{name}: {detected:?}");
        modules += 1;
    }
    assert_eq!(modules, olm_guard_rules::registry::RULES.len());
}
