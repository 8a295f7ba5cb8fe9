//! CatalogSource (`operators.coreos.com/v1alpha1`) as the catalog-union policy
//! reads it: the top-level fields OLM runs on today (`sourceType`, `image`,
//! `address`, `configMap`, `grpcPodConfig`, as in operator-framework/api
//! `crds/operators.coreos.com_catalogsources.yaml`) and the union members
//! proposed by the OLM enhancement *catalogsource-spec-update*
//! (`catalogImageSource`, `catalogServiceSource`, `configMapSource`).
//!
//! Every field is an `Option`: the enhancement's `oneOf` counts a key as configured
//! when it is present, even with an empty value, while `key: null` is absent
//! (the API server prunes such nulls). `None` is exactly "absent or null";
//! `Some("")` is "present but empty". Unknown keys are ignored: the API server
//! prunes them from a structural schema before admission.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The API group of CatalogSource.
pub const GROUP: &str = "operators.coreos.com";
/// The kind, as requests name it.
pub const KIND: &str = "CatalogSource";
/// The version OLM serves it in.
pub const VERSION: &str = "v1alpha1";

/// The part of a CatalogSource `spec` that decides which catalog it serves.
/// Display fields (displayName, publisher, priority, updateStrategy, ...)
/// play no part in that choice and are left out.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CatalogSourceSpec {
    /// Deprecated: `grpc`, `configmap` or `internal`.
    pub source_type: Option<String>,
    /// Deprecated: replaced by `catalogImageSource.catalogImage`.
    pub image: Option<String>,
    /// Deprecated: replaced by `catalogServiceSource.address`.
    pub address: Option<String>,
    /// Deprecated: replaced by `configMapSource.configMap`.
    pub config_map: Option<String>,
    /// Deprecated: replaced by `catalogImageSource.podSpecOverrides`.
    #[serde(deserialize_with = "object_only::option")]
    pub grpc_pod_config: Option<GrpcPodConfig>,
    /// Proposed union member: a registry pod run from an image.
    #[serde(deserialize_with = "object_only::option")]
    pub catalog_image_source: Option<CatalogImageSource>,
    /// Proposed union member: a registry that is already running.
    #[serde(deserialize_with = "object_only::option")]
    pub catalog_service_source: Option<CatalogServiceSource>,
    /// Proposed union member: catalog content in a ConfigMap.
    #[serde(deserialize_with = "object_only::option")]
    pub config_map_source: Option<ConfigMapSource>,
}

/// A spec field whose JSON type is wrong, located by its path below `spec`
/// (e.g. `catalogImageSource.podSpecOverrides.tolerations[0].key`).
pub use olm_guard_core::decode::FieldTypeError;

impl CatalogSourceSpec {
    /// Reads a spec object. Type mismatches come back with their path so the
    /// rejection can name the exact field to fix.
    pub fn from_value(spec: &Value) -> Result<CatalogSourceSpec, FieldTypeError> {
        olm_guard_core::decode::from_value(spec)
    }
}

/// `spec.catalogImageSource`: a registry pod run from an operator-registry image.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CatalogImageSource {
    /// The operator-registry image to serve.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catalog_image: Option<String>,
    /// Scheduling overrides for the registry pod.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "object_only::option"
    )]
    pub pod_spec_overrides: Option<PodSpecOverrides>,
}

/// `spec.catalogImageSource.podSpecOverrides`: the enhancement keeps only
/// these three of the legacy `grpcPodConfig` knobs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PodSpecOverrides {
    /// Node labels the registry pod must be scheduled on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Taints the registry pod tolerates.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "object_only::list"
    )]
    pub tolerations: Option<Vec<Toleration>>,
    /// The registry pod's priority class.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
}

/// `spec.catalogServiceSource`: a registry that is already running.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CatalogServiceSource {
    /// `host:port` of the running registry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
}

/// `spec.configMapSource`: catalog content served from a ConfigMap.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ConfigMapSource {
    /// Name of the ConfigMap, in the CatalogSource's namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_map: Option<String>,
}

/// `core/v1` Toleration, as both `grpcPodConfig` and `podSpecOverrides` hold it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Toleration {
    /// The taint key matched; empty matches all keys.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// `Exists` or `Equal` (the default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// The taint value matched with `Equal`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The taint effect matched; empty matches all effects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
    /// How long a `NoExecute` taint is tolerated, in seconds.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "integer::option"
    )]
    pub toleration_seconds: Option<i64>,
}

/// Deprecated `spec.grpcPodConfig`, with every field the shipped CRD defines
/// (operator-framework/api `crds/operators.coreos.com_catalogsources.yaml`),
/// so that a migration can tell which of them `podSpecOverrides` would lose.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GrpcPodConfig {
    /// Node labels the registry pod must be scheduled on.
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Taints the registry pod tolerates.
    #[serde(deserialize_with = "object_only::list")]
    pub tolerations: Option<Vec<Toleration>>,
    /// The registry pod's priority class.
    pub priority_class_name: Option<String>,
    /// The registry pod's affinity (kept as JSON: only its presence matters).
    pub affinity: Option<Value>,
    /// `legacy` or `restricted` pod security.
    pub security_context_config: Option<Value>,
    /// Serve a file-based catalog extracted from the image.
    pub extract_content: Option<Value>,
    /// The registry's soft memory limit (`$GOMEMLIMIT`).
    pub memory_target: Option<Value>,
}

impl GrpcPodConfig {
    /// The fields set here that `podSpecOverrides` has no place for. Moving
    /// the rest and dropping these would silently change the registry pod
    /// (its security context, memory limit, scheduling), so a migration must
    /// not happen while any is set.
    pub fn unportable_fields(&self) -> Vec<&'static str> {
        [
            ("affinity", self.affinity.is_some()),
            (
                "securityContextConfig",
                self.security_context_config.is_some(),
            ),
            ("extractContent", self.extract_content.is_some()),
            ("memoryTarget", self.memory_target.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect()
    }

    /// The `podSpecOverrides` replacing this config, or `None` when it carries
    /// nothing (empty values configure nothing and are dropped).
    /// Callers check [`GrpcPodConfig::unportable_fields`] first.
    pub fn pod_spec_overrides(&self) -> Option<PodSpecOverrides> {
        let overrides = PodSpecOverrides {
            node_selector: self.node_selector.clone().filter(|m| !m.is_empty()),
            tolerations: self.tolerations.clone().filter(|t| !t.is_empty()),
            priority_class_name: self.priority_class_name.clone().filter(|p| !p.is_empty()),
        };
        (overrides != PodSpecOverrides::default()).then_some(overrides)
    }
}

/// Values of the deprecated `spec.sourceType` that OLM acts on
/// (operator-framework/operator-lifecycle-manager: `validateSourceType` in
/// `pkg/controller/operators/catalog/operator.go`, `ReconcilerForSource` in
/// `pkg/controller/registry/reconciler/reconciler.go`); matching is exact, as
/// in OLM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceType {
    /// `grpc`: a registry run from `image`, else dialled at `address`.
    Grpc,
    /// `configmap`: a registry serving `configMap`.
    ConfigMap,
    /// Deprecated alias of `configmap`.
    Internal,
}

impl SourceType {
    /// The spellings OLM accepts, in the order messages list them.
    pub const NAMES: [&'static str; 3] = ["grpc", "configmap", "internal"];

    /// The source type spelled exactly `value`, if OLM knows it.
    pub fn parse(value: &str) -> Option<SourceType> {
        match value {
            "grpc" => Some(SourceType::Grpc),
            "configmap" => Some(SourceType::ConfigMap),
            "internal" => Some(SourceType::Internal),
            _ => None,
        }
    }

    /// OLM's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceType::Grpc => "grpc",
            SourceType::ConfigMap => "configmap",
            SourceType::Internal => "internal",
        }
    }

    /// The OLM spelling of a value that differs only in case (`gRPC`,
    /// `ConfigMap`), so a rejection can say what was probably meant.
    pub fn suggest(value: &str) -> Option<SourceType> {
        SourceType::parse(&value.trim().to_ascii_lowercase())
    }
}

/// Why an `address` is not OLM's `<registry-host or ip>:<port>`, in words
/// that finish the sentence "is not host:port (...)".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    /// `dns:///host:50051`: a URL, not an address.
    #[error("it starts with the scheme \"{0}://\"; write only host:port")]
    Scheme(String),
    /// `:50051`.
    #[error("the host before the colon is empty")]
    EmptyHost,
    /// `host/path:50051`, `my host:50051`.
    #[error("the host \"{host}\" contains {what}, which a host name or IP cannot")]
    HostCharacter {
        /// The host as written.
        host: String,
        /// `a slash` or `whitespace`.
        what: &'static str,
    },
    /// `[fd00::1`.
    #[error("the IPv6 host has no closing bracket")]
    UnclosedBracket,
    /// `[fd00::1]50051`.
    #[error("the port after the IPv6 host is missing")]
    NoPortAfterIpv6,
    /// `some.namespace.svc`.
    #[error("the port is missing")]
    NoPort,
    /// `fd00::1:50051`.
    #[error("an IPv6 host must be written in brackets, e.g. [fd00::1]:50051")]
    UnbracketedIpv6,
    /// `host:`.
    #[error("the port after the colon is empty")]
    EmptyPort,
    /// `host:grpc`.
    #[error("the port \"{0}\" is not a number")]
    PortNotANumber(String),
    /// `host:0`, `host:65536`.
    #[error("the port {0} is outside 1-65535")]
    PortOutOfRange(String),
}

/// Checks an `address` against OLM's documented format
/// `<registry-host or ip>:<port>`: OLM hands it to a gRPC dialer, which
/// splits it like Go's `net.SplitHostPort` (an IPv6 host in brackets) and
/// needs a numeric port. The error says what is wrong, for the message.
pub fn check_address(address: &str) -> Result<(), AddressError> {
    if let Some((scheme, _)) = address.split_once("://") {
        return Err(AddressError::Scheme(scheme.to_string()));
    }
    let (host, port) = split_host_port(address)?;
    if host.is_empty() {
        return Err(AddressError::EmptyHost);
    }
    if let Some(c) = host.chars().find(|c| c.is_whitespace() || *c == '/') {
        return Err(AddressError::HostCharacter {
            host: host.to_string(),
            what: describe_char(c),
        });
    }
    check_port(port)
}

fn split_host_port(address: &str) -> Result<(&str, &str), AddressError> {
    if let Some(bracketed) = address.strip_prefix('[') {
        let (host, rest) = bracketed
            .split_once(']')
            .ok_or(AddressError::UnclosedBracket)?;
        let port = rest
            .strip_prefix(':')
            .ok_or(AddressError::NoPortAfterIpv6)?;
        return Ok((host, port));
    }
    let (host, port) = address.rsplit_once(':').ok_or(AddressError::NoPort)?;
    if host.contains(':') {
        return Err(AddressError::UnbracketedIpv6);
    }
    Ok((host, port))
}

fn check_port(port: &str) -> Result<(), AddressError> {
    if port.is_empty() {
        return Err(AddressError::EmptyPort);
    }
    if !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(AddressError::PortNotANumber(port.to_string()));
    }
    match port.parse::<u32>() {
        Ok(p) if (1..=65535).contains(&p) => Ok(()),
        _ => Err(AddressError::PortOutOfRange(port.to_string())),
    }
}

fn describe_char(c: char) -> &'static str {
    if c == '/' { "a slash" } else { "whitespace" }
}

/// serde lets a derived struct be read from a JSON array (fields by
/// position), so `catalogImageSource: ["img"]` would pass as an image. The
/// schema says object; these readers accept only objects (and `null`), and
/// keep the path through the object's fields (`olm_guard_core::decode`).
mod object_only {
    use std::fmt;
    use std::marker::PhantomData;

    use serde::de::value::MapAccessDeserializer;
    use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

    /// A `T` read only from an object.
    struct Object<T>(T);

    impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            struct ObjectVisitor<T>(PhantomData<T>);
            impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
                type Value = Object<T>;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                    T::deserialize(MapAccessDeserializer::new(map)).map(Object)
                }
            }
            deserializer.deserialize_map(ObjectVisitor(PhantomData))
        }
    }

    /// `Option<T>` for an object-valued field; `null` is `None`.
    pub fn option<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de>,
    {
        Ok(Option::<Object<T>>::deserialize(deserializer)?.map(|o| o.0))
    }

    /// `Option<Vec<T>>` for a list of objects; `null` is `None`.
    pub fn list<'de, D, T>(deserializer: D) -> Result<Option<Vec<T>>, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de>,
    {
        struct ListVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ListVisitor<T> {
            type Value = Vec<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of objects")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                while let Some(Object(item)) = seq.next_element::<Object<T>>()? {
                    items.push(item);
                }
                Ok(items)
            }
        }
        struct Nullable<T>(Option<Vec<T>>);
        impl<'de, T: Deserialize<'de>> Deserialize<'de> for Nullable<T> {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer
                    .deserialize_seq(ListVisitor(PhantomData))
                    .map(|v| Nullable(Some(v)))
            }
        }
        Ok(Option::<Nullable<T>>::deserialize(deserializer)?.and_then(|n| n.0))
    }
}

/// serde's own error for a non-integer `i64` says "expected i64", a Rust type
/// name; users are told "an integer" instead.
mod integer {
    use std::fmt;

    use serde::de::{Deserialize, Deserializer, Error, Visitor};

    struct Integer(i64);

    impl<'de> Deserialize<'de> for Integer {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            struct IntegerVisitor;
            impl Visitor<'_> for IntegerVisitor {
                type Value = Integer;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("an integer")
                }
                fn visit_i64<E: Error>(self, v: i64) -> Result<Integer, E> {
                    Ok(Integer(v))
                }
                fn visit_u64<E: Error>(self, v: u64) -> Result<Integer, E> {
                    i64::try_from(v)
                        .map(Integer)
                        .map_err(|_| E::custom(format!("{v} is too large for an integer")))
                }
            }
            deserializer.deserialize_i64(IntegerVisitor)
        }
    }

    /// `Option<i64>`; `null` is `None`.
    pub fn option<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
        Ok(Option::<Integer>::deserialize(deserializer)?.map(|i| i.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn null_values_read_as_absent_and_empty_values_as_present() {
        let spec = CatalogSourceSpec::from_value(&json!({
            "sourceType": null, "image": "", "grpcPodConfig": null,
            "catalogImageSource": {}, "configMapSource": null
        }))
        .unwrap();
        assert_eq!(spec.source_type, None);
        assert_eq!(spec.image.as_deref(), Some(""));
        assert_eq!(spec.grpc_pod_config, None);
        assert_eq!(
            spec.catalog_image_source,
            Some(CatalogImageSource::default())
        );
        assert_eq!(spec.config_map_source, None);
    }

    #[test]
    fn type_errors_name_the_nested_field() {
        let err = CatalogSourceSpec::from_value(&json!({
            "catalogImageSource": {"catalogImage": "x", "podSpecOverrides": {"tolerations": [{"key": 5}]}}
        }))
        .unwrap_err();
        assert_eq!(
            err.path,
            "catalogImageSource.podSpecOverrides.tolerations[0].key"
        );
        assert!(err.reason.contains("expected a string"), "{}", err.reason);

        let err =
            CatalogSourceSpec::from_value(&json!({"catalogServiceSource": "host:1"})).unwrap_err();
        assert_eq!(err.path, "catalogServiceSource");
        assert!(err.reason.contains("expected an object"), "{}", err.reason);
    }

    #[test]
    fn object_fields_are_not_read_from_lists() {
        for spec in [
            json!({"catalogImageSource": ["quay.io/x:1"]}),
            json!({"catalogImageSource": []}),
            json!({"grpcPodConfig": [{"a": "b"}]}),
            json!({"catalogImageSource": {"podSpecOverrides": ["n"]}}),
        ] {
            let err = CatalogSourceSpec::from_value(&spec).unwrap_err();
            assert!(err.reason.contains("expected an object"), "{spec}: {err:?}");
        }
        let err = CatalogSourceSpec::from_value(&json!({
            "grpcPodConfig": {"tolerations": [{"key": "a"}, ["b", "Exists"]]}
        }))
        .unwrap_err();
        assert_eq!(err.path, "grpcPodConfig.tolerations[1]");
        assert!(err.reason.contains("expected an object"), "{err:?}");
        let err =
            CatalogSourceSpec::from_value(&json!({"grpcPodConfig": {"tolerations": {"key": "a"}}}))
                .unwrap_err();
        assert_eq!(err.path, "grpcPodConfig.tolerations");
        assert!(err.reason.contains("expected a list of objects"), "{err:?}");
        let spec = CatalogSourceSpec::from_value(&json!({"grpcPodConfig": {"tolerations": null}}))
            .unwrap();
        assert_eq!(spec.grpc_pod_config.unwrap().tolerations, None);
    }

    #[test]
    fn toleration_seconds_must_be_an_integer() {
        let read = |seconds: Value| {
            CatalogSourceSpec::from_value(
                &json!({"grpcPodConfig": {"tolerations": [{"tolerationSeconds": seconds}]}}),
            )
        };
        let seconds = |spec: CatalogSourceSpec| {
            spec.grpc_pod_config.unwrap().tolerations.unwrap()[0].toleration_seconds
        };
        assert_eq!(seconds(read(json!(300)).unwrap()), Some(300));
        assert_eq!(seconds(read(json!(-1)).unwrap()), Some(-1));
        assert_eq!(seconds(read(Value::Null).unwrap()), None);
        for bad in [json!("300"), json!(1.5), json!(u64::MAX)] {
            let err = read(bad.clone()).unwrap_err();
            assert_eq!(err.path, "grpcPodConfig.tolerations[0].tolerationSeconds");
            assert!(
                err.reason.contains("integer") && !err.reason.contains("i64"),
                "{bad}: {err:?}"
            );
        }
    }

    #[test]
    fn display_fields_and_unknown_keys_do_not_matter() {
        let spec = CatalogSourceSpec::from_value(&json!({
            "displayName": 5, "publisher": ["x"], "catalogImageSource": {"catalogImage": "i", "extra": 1}
        }))
        .unwrap();
        assert_eq!(
            spec.catalog_image_source.unwrap().catalog_image.as_deref(),
            Some("i")
        );
    }

    #[test]
    fn grpc_pod_config_keeps_only_the_override_fields() {
        let config: GrpcPodConfig = serde_json::from_value(json!({
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "tolerations": [{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}],
            "priorityClassName": "system-cluster-critical"
        }))
        .unwrap();
        assert!(config.unportable_fields().is_empty());
        let overrides = serde_json::to_value(config.pod_spec_overrides()).unwrap();
        assert_eq!(
            overrides,
            json!({
                "nodeSelector": {"kubernetes.io/os": "linux"},
                "tolerations": [{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}],
                "priorityClassName": "system-cluster-critical"
            })
        );
    }

    #[test]
    fn grpc_pod_config_reports_what_overrides_cannot_hold() {
        let config: GrpcPodConfig = serde_json::from_value(json!({
            "securityContextConfig": "restricted", "memoryTarget": "30Mi", "affinity": null
        }))
        .unwrap();
        assert_eq!(
            config.unportable_fields(),
            vec!["securityContextConfig", "memoryTarget"]
        );
    }

    #[test]
    fn empty_pod_config_carries_nothing() {
        let config: GrpcPodConfig = serde_json::from_value(
            json!({"nodeSelector": {}, "tolerations": [], "priorityClassName": ""}),
        )
        .unwrap();
        assert_eq!(config.pod_spec_overrides(), None);
    }

    #[test]
    fn source_types_match_exactly_with_a_suggestion_for_case() {
        assert_eq!(SourceType::parse("grpc"), Some(SourceType::Grpc));
        assert_eq!(SourceType::parse("gRPC"), None);
        assert_eq!(SourceType::suggest("gRPC"), Some(SourceType::Grpc));
        assert_eq!(
            SourceType::suggest("ConfigMap"),
            Some(SourceType::ConfigMap)
        );
        assert_eq!(SourceType::suggest("image"), None);
        for name in SourceType::NAMES {
            assert_eq!(SourceType::parse(name).map(SourceType::as_str), Some(name));
        }
    }

    #[test]
    fn addresses_must_be_host_and_numeric_port() {
        for ok in [
            "operatorhubio-catalog.olm.svc:50051",
            "10.0.0.1:1",
            "[fd00::1]:65535",
            "localhost:50051",
        ] {
            assert_eq!(check_address(ok), Ok(()), "{ok}");
        }
        for (bad, why) in [
            ("some.namespace.svc", "port is missing"),
            ("host:", "empty"),
            (":50051", "host before the colon is empty"),
            ("host:0", "outside 1-65535"),
            ("host:65536", "outside 1-65535"),
            ("host:99999999999999999999", "outside 1-65535"),
            ("host:grpc", "not a number"),
            ("host:+80", "not a number"),
            ("fd00::1:50051", "brackets"),
            ("[fd00::1", "closing bracket"),
            ("[fd00::1]50051", "port after the IPv6 host is missing"),
            ("dns:///host:50051", "scheme \"dns://\""),
            ("host/path:50051", "slash"),
            ("my host:50051", "whitespace"),
            ("", "port is missing"),
        ] {
            let err = check_address(bad).unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }
}
