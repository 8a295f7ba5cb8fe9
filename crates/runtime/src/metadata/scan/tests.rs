//! The scanner on small modules built for each case, as kwctl's own tests
//! of `wasm_scanner.rs` build them, and the comparison with declared
//! patterns on the cases of kwctl's `compute_mismatch` tests.

use std::collections::BTreeSet;

use rstest::rstest;
use wasm_encoder::{
    ConstExpr, CustomSection, DataSection, MemorySection, MemoryType, Module, RawSection,
};

use super::*;

/// `strings` one after the other, NUL-terminated, as one data segment.
fn segment(strings: &[&str]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for s in strings {
        bytes.extend_from_slice(s.as_bytes());
        bytes.push(0);
    }
    bytes
}

/// A module whose data segments hold `segments`, passive ones
/// (`memory.init`) when `passive`, else active.
fn module_with(segments: &[Vec<u8>], passive: bool) -> Vec<u8> {
    let mut module = Module::new();
    let mut memories = MemorySection::new();
    memories.memory(MemoryType {
        minimum: 1,
        maximum: None,
        memory64: false,
        shared: false,
        page_size_log2: None,
    });
    module.section(&memories);
    let mut data = DataSection::new();
    let mut offset = 0;
    for bytes in segments {
        let bytes = bytes.clone();
        let len = bytes.len() as i32;
        if passive {
            data.passive(bytes);
        } else {
            data.active(0, &ConstExpr::i32_const(offset), bytes);
        }
        offset += len;
    }
    module.section(&data);
    module.finish()
}

fn scan(strings: &[&str]) -> BTreeSet<String> {
    detect_host_capabilities(&module_with(&[segment(strings)], false)).unwrap()
}

fn set(paths: &[&str]) -> BTreeSet<String> {
    paths.iter().map(|p| p.to_string()).collect()
}

#[test]
fn no_capability_without_a_namespace_or_an_operation() {
    assert_eq!(scan(&["hello", "world"]), set(&[]));
    assert_eq!(scan(&["kubewarden"]), set(&[]));
    assert_eq!(scan(&["kubewarden", "kubernetes"]), set(&[]));
}

#[rstest]
#[case::kubernetes_can_i(&["kubewarden", "kubernetes", "can_i"], &["kubernetes/can_i"])]
#[case::kubernetes_get(&["kubewarden", "kubernetes", "get_resource"], &["kubernetes/get_resource"])]
#[case::crypto(&["kubewarden", "crypto", "v1/is_certificate_trusted"], &["crypto/v1/is_certificate_trusted"])]
#[case::net(&["kubewarden", "net", "v1/dns_lookup_host"], &["net/v1/dns_lookup_host"])]
fn one_capability_is_detected(#[case] strings: &[&str], #[case] expected: &[&str]) {
    assert_eq!(scan(strings), set(expected));
}

/// A short operation name alone is common text; without its namespace it is
/// not a host call.
#[test]
fn the_namespace_is_required() {
    assert_eq!(scan(&["kubewarden", "can_i"]), set(&[]));
    assert_eq!(scan(&["kubewarden", "v1/is_certificate_trusted"]), set(&[]));
}

#[test]
fn every_capability_is_detected() {
    let mut strings = vec!["kubewarden"];
    for path in CAPABILITIES {
        let (namespace, operation) = path.split_once('/').unwrap();
        strings.extend([namespace, operation]);
    }
    assert_eq!(scan(&strings), set(CAPABILITIES));
}

/// Names that share a prefix count only for what is there: a module with
/// one of the two list operations has that one, and a module with the longer
/// of two OCI operations does not have the shorter.
#[rstest]
#[case::list_all_alone(
    &["kubernetes", "list_resources_all"],
    &["kubernetes/list_resources_all"]
)]
#[case::list_by_namespace_alone(
    &["kubernetes", "list_resources_by_namespace"],
    &["kubernetes/list_resources_by_namespace"]
)]
#[case::both_lists(
    &["kubernetes", "list_resources_by_namespace", "list_resources_all"],
    &["kubernetes/list_resources_all", "kubernetes/list_resources_by_namespace"]
)]
#[case::oci_manifest_config_alone(
    &["oci", "v1/oci_manifest_config"],
    &["oci/v1/oci_manifest_config"]
)]
#[case::oci_manifest_and_config(
    &["oci", "v1/oci_manifest_config", "v1/oci_manifest"],
    &["oci/v1/oci_manifest", "oci/v1/oci_manifest_config"]
)]
#[case::oci_manifest_alone(&["oci", "v1/oci_manifest"], &["oci/v1/oci_manifest"])]
fn prefix_sharing_names_count_for_what_is_there(
    #[case] strings: &[&str],
    #[case] expected: &[&str],
) {
    assert_eq!(scan(strings), set(expected));
}

/// The names packed without separators, as rustc lays out a table of
/// `&'static str` (`list_resources_alllist_resources_by_namespace...`).
#[test]
fn names_packed_together_are_found() {
    assert_eq!(
        scan(&["kuberneteslist_resources_allget_resourcecan_i"]),
        set(&[
            "kubernetes/can_i",
            "kubernetes/get_resource",
            "kubernetes/list_resources_all"
        ])
    );
}

#[test]
fn every_segment_is_read_active_or_passive_but_not_across_segments() {
    // Without the separator, "get_res" + "ource" would read get_resource.
    let split = [
        b"kubernetes\0get_res".to_vec(),
        b"ource\0".to_vec(),
        segment(&["can_i"]),
    ];
    for passive in [false, true] {
        let wasm = module_with(&split, passive);
        assert_eq!(
            detect_host_capabilities(&wasm).unwrap(),
            set(&["kubernetes/can_i"]),
            "passive: {passive}"
        );
    }
}

/// Metadata and README text name capabilities too (an annotated module
/// carries its hostCapabilities in a custom section): only data counts.
#[test]
fn custom_sections_are_not_code() {
    let mut module = Module::new();
    module.section(&CustomSection {
        name: "io.kubewarden.metadata".into(),
        data: br#"{"hostCapabilities":["kubernetes/can_i"]}"#.as_slice().into(),
    });
    assert_eq!(
        detect_host_capabilities(&module.finish()).unwrap(),
        set(&[])
    );

    let plain = module_with(&[segment(&["kubernetes", "can_i"])], false);
    let mut annotated = Module::new();
    for payload in wasmparser::Parser::new(0).parse_all(&plain) {
        if let Some((id, range)) = payload.unwrap().as_section() {
            annotated.section(&RawSection {
                id,
                data: &plain[range],
            });
        }
    }
    annotated.section(&CustomSection {
        name: "io.kubewarden.metadata".into(),
        data: br#"{"hostCapabilities":["kubernetes/get_resource"]}"#
            .as_slice()
            .into(),
    });
    assert_eq!(
        detect_host_capabilities(&annotated.finish()).unwrap(),
        set(&["kubernetes/can_i"])
    );
}

#[test]
fn not_wasm_is_an_error() {
    assert!(matches!(
        detect_host_capabilities(b"not a wasm module"),
        Err(MetadataError::NotWasm(_))
    ));
}

fn declaring(patterns: Option<&[&str]>) -> Metadata {
    Metadata {
        host_capabilities: patterns.map(|p| p.iter().map(|s| s.to_string()).collect()),
        ..Metadata::default()
    }
}

/// kwctl's `compute_mismatch` cases.
#[rstest]
#[case::nothing_declared_nothing_detected(&[], &[], &[], &[])]
#[case::nothing_declared_one_detected(&["oci/v1/verify"], &[], &["oci/v1/verify"], &[])]
#[case::all_declared_one_detected(&["oci/v1/verify"], &["*"], &[], &["*"])]
#[case::all_declared_nothing_detected(&[], &["*"], &[], &["*"])]
#[case::prefix_covers_one(&["oci/v1/verify"], &["oci/*"], &[], &[])]
#[case::prefix_covers_two(
    &["oci/v1/verify", "oci/v1/manifest_digest"], &["oci/*"], &[], &[]
)]
#[case::prefix_covers_nothing(&[], &["oci/*"], &[], &["oci/*"])]
#[case::prefix_of_another_namespace(
    &["net/v1/dns_lookup_host"], &["oci/*"], &["net/v1/dns_lookup_host"], &["oci/*"]
)]
#[case::exact(&["kubernetes/can_i"], &["kubernetes/can_i"], &[], &[])]
#[case::more_used_than_declared(
    &["kubernetes/can_i", "kubernetes/get_resource"],
    &["kubernetes/can_i"],
    &["kubernetes/get_resource"],
    &[]
)]
#[case::fewer_used_than_declared(
    &["kubernetes/can_i"],
    &["kubernetes/can_i", "kubernetes/list_resources_all"],
    &[],
    &["kubernetes/list_resources_all"]
)]
#[case::versioned_prefix(&["oci/v2/verify"], &["oci/v2/*"], &[], &[])]
#[case::versioned_prefix_other_version(
    &["oci/v1/verify"], &["oci/v2/*"], &["oci/v1/verify"], &["oci/v2/*"]
)]
fn detected_against_declared(
    #[case] detected: &[&str],
    #[case] declared: &[&str],
    #[case] undeclared: &[&str],
    #[case] undetected: &[&str],
) {
    let mismatch = declaring(Some(declared)).capability_mismatch(&set(detected));
    assert_eq!(mismatch.undeclared, set(undeclared), "undeclared");
    assert_eq!(mismatch.undetected, set(undetected), "undetected");
    assert_eq!(
        mismatch.is_empty(),
        undeclared.is_empty() && undetected.is_empty()
    );
}

/// No `hostCapabilities` at all is every capability, as policy-server
/// reads it: never least privilege.
#[test]
fn no_declaration_is_all_and_always_warned_about() {
    let mismatch = declaring(None).capability_mismatch(&set(&["kubernetes/can_i"]));
    assert_eq!(mismatch.undeclared, set(&[]));
    assert_eq!(mismatch.undetected, set(&["*"]));
}

/// Scan and comparison together: a module that uses more, fewer and the
/// same capabilities as its metadata declares.
#[rstest]
#[case::same(&["kubernetes", "list_resources_all", "can_i"], &[], &[])]
#[case::more(
    &["kubernetes", "list_resources_all", "can_i", "list_resources_by_namespace"],
    &["kubernetes/list_resources_by_namespace"],
    &[]
)]
#[case::fewer(&["kubernetes", "list_resources_all"], &[], &["kubernetes/can_i"])]
fn a_module_against_its_metadata(
    #[case] strings: &[&str],
    #[case] undeclared: &[&str],
    #[case] undetected: &[&str],
) {
    let metadata = declaring(Some(&["kubernetes/list_resources_all", "kubernetes/can_i"]));
    let detected = detect_host_capabilities(&module_with(&[segment(strings)], false)).unwrap();
    let mismatch = metadata.capability_mismatch(&detected);
    assert_eq!(mismatch.undeclared, set(undeclared));
    assert_eq!(mismatch.undetected, set(undetected));
}
