//! catalog-union: a CatalogSource configures exactly one catalog, and nothing
//! OLM would ignore (contract "catalog-union", seed 004, domain §4).
//!
//! The seed's CRD `oneOf` only counts keys and answers "must validate one and
//! only one schema (oneOf)". This rule counts the same alternatives (rules 1
//! and 2), then rejects what the `oneOf` lets through although OLM ignores it
//! (rule 3) or cannot run it (rule 4), and says which field to change. Legacy
//! specs are accepted, with a warning only when asked for (rule 5), or
//! rewritten (rule 6). An UPDATE is judged on what it changes (rule 7).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use olm_guard_core::{AdmissionRequest, Cluster, Operation, PolicySettings, Verdict};
use olm_guard_olm::catalog_source::{
    self, CatalogImageSource, CatalogServiceSource, CatalogSourceSpec, ConfigMapSource,
    GrpcPodConfig, SourceType,
};

/// The policy's settings; every key is optional (see the settings table in
/// the README).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// Count the legacy `sourceType` + `image`/`address`/`configMap` spec as
    /// an alternative (rule 1). On by default: it is the only form the
    /// CatalogSource CRD clusters run today can store.
    pub allow_legacy: bool,
    /// Warn about every accepted legacy spec, naming its union member
    /// (rule 5). Meant for clusters whose CatalogSource CRD has the union
    /// members: on today's CRD the advice cannot be followed.
    pub warn_legacy: bool,
    /// Rewrite a valid legacy spec into its union member (rule 6). The legacy
    /// spec is then validated as if `allowLegacy` were on, since it is not
    /// what gets stored; one that cannot be rewritten without loss is
    /// accepted as legacy only while `allowLegacy` is on. Meant, like
    /// `warnLegacy`, for clusters whose CRD has the union members.
    pub migrate_legacy: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            allow_legacy: true,
            warn_legacy: false,
            migrate_legacy: false,
        }
    }
}

impl PolicySettings for Settings {}

/// Judges a CREATE or UPDATE of a CatalogSource by rules 1-7; every other
/// request is accepted untouched.
pub fn validate(request: &AdmissionRequest, settings: &Settings, _: &dyn Cluster) -> Verdict {
    if !request.targets(catalog_source::GROUP, catalog_source::KIND)
        || !matches!(request.operation, Operation::Create | Operation::Update)
    {
        return Verdict::accept();
    }
    let Some(object) = request.object.as_object() else {
        return Verdict::bad_request(
            "request.object must be the CatalogSource being written (a JSON object); \
             send the whole object with the CREATE or UPDATE",
        );
    };
    match judge_object(object, settings) {
        Judgement::Admitted(verdict) | Judgement::Unreadable(verdict) => verdict,
        Judgement::Broken(problems) => {
            match stored_breakage(request, object, settings, &problems) {
                Some(warning) => Verdict::accept().with_warning(warning),
                None => Verdict::deny(problems.join("; ")),
            }
        }
    }
}

/// What rules 1-6 make of one object.
enum Judgement {
    /// Accepted, possibly with warnings or a migration.
    Admitted(Verdict),
    /// Denied: every problem found, each naming its field and the fix.
    Broken(Vec<String>),
    /// The spec cannot be read (a 400).
    Unreadable(Verdict),
}

fn judge_object(object: &Map<String, Value>, settings: &Settings) -> Judgement {
    let terms = Terms::for_object(object, settings);
    let spec = match read_spec(object, terms) {
        Ok(spec) => spec,
        Err(verdict) => return Judgement::Unreadable(verdict),
    };
    let legacy_counts = settings.allow_legacy || settings.migrate_legacy;
    match judge(&spec, legacy_counts, terms) {
        Err(problems) => Judgement::Broken(problems),
        Ok(Configured::Member) => Judgement::Admitted(Verdict::accept()),
        Ok(Configured::Legacy(legacy)) => admit_legacy(object, &legacy, settings),
    }
}

/// Rule 7: an UPDATE of a CatalogSource that already broke the rule when it
/// was stored (created before the policy, or under other settings) is let
/// through when it leaves the catalog configuration as it was, or when every
/// problem it has was already a problem of the stored object: labels,
/// annotations, owner references and finalizers must stay writable, or the
/// object could never be repaired or deleted. The warning says what is still
/// wrong. `None` means deny as for a CREATE.
fn stored_breakage(
    request: &AdmissionRequest,
    object: &Map<String, Value>,
    settings: &Settings,
    problems: &[String],
) -> Option<String> {
    if request.operation != Operation::Update {
        return None;
    }
    // An oldObject that is missing or cannot be read stands for nothing
    // stored: the request is judged like a CREATE.
    let stored = request.old_object.as_object()?;
    let Judgement::Broken(stored_problems) = judge_object(stored, settings) else {
        return None;
    };
    let problems_text = problems.join("; ");
    if configuration(object) == configuration(stored) {
        Some(format!(
            "this CatalogSource already breaks catalog-union and this update leaves its catalog \
             configuration as it was, so the update is allowed; fix it: {problems_text}"
        ))
    } else if problems.iter().all(|p| stored_problems.contains(p)) {
        Some(format!(
            "this update fixes part of what this CatalogSource breaks in catalog-union, so it \
             is allowed; still to fix: {problems_text}"
        ))
    } else {
        None
    }
}

/// The spec keys the rule reads, the catalog configuration, with `null`
/// values left out as the rule counts them absent.
const CONFIGURATION: [&str; 8] = [
    "sourceType",
    "image",
    "address",
    "configMap",
    "grpcPodConfig",
    "catalogImageSource",
    "catalogServiceSource",
    "configMapSource",
];

fn configuration(object: &Map<String, Value>) -> Vec<(&'static str, &Value)> {
    let spec = object.get("spec").and_then(Value::as_object);
    CONFIGURATION
        .into_iter()
        .filter_map(|key| {
            spec.and_then(|s| s.get(key))
                .filter(|v| !v.is_null())
                .map(|v| (key, v))
        })
        .collect()
}

/// Which fields advice may name. The CatalogSource CRD clusters run today
/// has only the legacy fields and prunes the union members, so advice to
/// write a union member could not be followed there. Union terms are used
/// only where the cluster evidently has them: a union member is in the
/// object, or the settings were chosen for such a CRD (`warnLegacy`,
/// `migrateLegacy`, or `allowLegacy: false`, under which only members pass).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Terms {
    Legacy,
    Union,
}

impl Terms {
    fn for_object(object: &Map<String, Value>, settings: &Settings) -> Terms {
        let member_present = object
            .get("spec")
            .and_then(Value::as_object)
            .is_some_and(|spec| {
                MEMBERS
                    .iter()
                    .any(|key| spec.get(*key).is_some_and(|v| !v.is_null()))
            });
        if member_present
            || settings.warn_legacy
            || settings.migrate_legacy
            || !settings.allow_legacy
        {
            Terms::Union
        } else {
            Terms::Legacy
        }
    }
}

/// The union members, as spec keys.
const MEMBERS: [&str; 3] = [
    "catalogImageSource",
    "catalogServiceSource",
    "configMapSource",
];

/// `spec` as typed fields. A missing or `null` spec is `{}` (rule 1).
fn read_spec(object: &Map<String, Value>, terms: Terms) -> Result<CatalogSourceSpec, Verdict> {
    let spec = match object.get("spec") {
        None | Some(Value::Null) => return Ok(CatalogSourceSpec::default()),
        Some(spec @ Value::Object(_)) => spec,
        Some(other) => {
            let holding = match terms {
                Terms::Union => {
                    "one of catalogImageSource, catalogServiceSource or configMapSource"
                }
                Terms::Legacy => "sourceType and one of image, address or configMap",
            };
            return Err(Verdict::bad_request(format!(
                "spec must be an object holding {holding}, but it is {}; write spec as a mapping",
                json_kind(other)
            )));
        }
    };
    CatalogSourceSpec::from_value(spec).map_err(|e| {
        Verdict::bad_request(format!(
            "spec.{} has the wrong type ({}); {}",
            e.path,
            e.reason,
            shape_of(&e.path)
        ))
    })
}

/// How a field whose type was wrong is written, for the rejection.
fn shape_of(path: &str) -> &'static str {
    match path {
        "catalogImageSource" => {
            "write it as an object: catalogImageSource: {catalogImage: <image>, \
             podSpecOverrides: {nodeSelector, tolerations, priorityClassName}}"
        }
        "catalogServiceSource" => {
            "write it as an object: catalogServiceSource: {address: <host>:<port>}"
        }
        "configMapSource" => "write it as an object: configMapSource: {configMap: <name>}",
        _ => "write a value of the expected type",
    }
}

/// What a spec that passed rules 2-4 configures.
#[derive(Debug)]
enum Configured<'a> {
    /// One union member, nothing else.
    Member,
    /// A consistent legacy spec, in the form OLM reconciles it.
    Legacy(Legacy<'a>),
}

/// A legacy spec OLM would run without ignoring anything.
#[derive(Debug)]
enum Legacy<'a> {
    Image {
        image: &'a str,
        pod_config: Option<&'a GrpcPodConfig>,
    },
    Address(&'a str),
    ConfigMap(&'a str),
}

/// One alternative of the seed's `oneOf`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Alternative {
    ImageSource,
    ServiceSource,
    ConfigMapSource,
    /// `sourceType` with `image`, `address` or `configMap`.
    Legacy,
}

/// The deprecated keys, in the order messages list them.
const DEPRECATED: [&str; 5] = [
    "sourceType",
    "image",
    "address",
    "configMap",
    "grpcPodConfig",
];

/// Rules 1-4: which alternative is configured, or every problem found, each
/// naming its field.
fn judge(
    spec: &CatalogSourceSpec,
    legacy_counts: bool,
    terms: Terms,
) -> Result<Configured<'_>, Vec<String>> {
    let found = alternatives(spec, legacy_counts);
    match found.as_slice() {
        [] => Err(vec![none_found(spec, legacy_counts, terms)]),
        [Alternative::Legacy] => judge_legacy(spec, terms),
        [member] => judge_member(spec, *member),
        several => Err(vec![several_found(spec, several)]),
    }
}

/// Rule 1: presence only, as the seed's `required` lists test it.
fn alternatives(spec: &CatalogSourceSpec, legacy_counts: bool) -> Vec<Alternative> {
    let legacy = legacy_counts
        && spec.source_type.is_some()
        && (spec.image.is_some() || spec.address.is_some() || spec.config_map.is_some());
    [
        (
            Alternative::ImageSource,
            spec.catalog_image_source.is_some(),
        ),
        (
            Alternative::ServiceSource,
            spec.catalog_service_source.is_some(),
        ),
        (
            Alternative::ConfigMapSource,
            spec.config_map_source.is_some(),
        ),
        (Alternative::Legacy, legacy),
    ]
    .into_iter()
    .filter_map(|(alternative, present)| present.then_some(alternative))
    .collect()
}

fn deprecated_present(spec: &CatalogSourceSpec) -> Vec<&'static str> {
    let present = [
        spec.source_type.is_some(),
        spec.image.is_some(),
        spec.address.is_some(),
        spec.config_map.is_some(),
        spec.grpc_pod_config.is_some(),
    ];
    DEPRECATED
        .into_iter()
        .zip(present)
        .filter_map(|(key, present)| present.then_some(key))
        .collect()
}

/// Where the value of a deprecated key belongs in the union.
fn replacement_of(key: &str) -> &'static str {
    match key {
        "image" => "spec.catalogImageSource.catalogImage",
        "address" => "spec.catalogServiceSource.address",
        "configMap" => "spec.configMapSource.configMap",
        "grpcPodConfig" => "spec.catalogImageSource.podSpecOverrides",
        _ => "the member key itself (catalogImageSource, catalogServiceSource or configMapSource)",
    }
}

/// The `sourceType` a legacy source key is read with.
fn source_type_for(key: &str) -> &'static str {
    match key {
        "configMap" => "configmap",
        _ => "grpc",
    }
}

/// Rule 6's limit, for every piece of advice that moves `grpcPodConfig`:
/// the fields set in it that `podSpecOverrides` cannot hold, as
/// `(fields, reason)` texts, or `None` when nothing would be lost.
fn unportable(pod_config: Option<&GrpcPodConfig>) -> Option<(String, String)> {
    let fields: Vec<String> = pod_config
        .map(GrpcPodConfig::unportable_fields)
        .unwrap_or_default()
        .iter()
        .map(|f| format!("spec.grpcPodConfig.{f}"))
        .collect();
    if fields.is_empty() {
        return None;
    }
    let fields = join_and(&fields);
    let reason = format!(
        "{fields} has no place in spec.catalogImageSource.podSpecOverrides, which holds only \
         nodeSelector, tolerations and priorityClassName"
    );
    Some((fields, reason))
}

fn spec_fields(keys: &[&str]) -> String {
    let fields: Vec<String> = keys.iter().map(|k| format!("spec.{k}")).collect();
    join_and(&fields)
}

fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

fn describe(spec: &CatalogSourceSpec, alternative: Alternative) -> String {
    match alternative {
        Alternative::ImageSource => "spec.catalogImageSource".into(),
        Alternative::ServiceSource => "spec.catalogServiceSource".into(),
        Alternative::ConfigMapSource => "spec.configMapSource".into(),
        Alternative::Legacy => {
            let keys: Vec<&str> = deprecated_present(spec)
                .into_iter()
                .filter(|k| *k != "grpcPodConfig")
                .collect();
            format!("the legacy {}", spec_fields(&keys))
        }
    }
}

const HOW_TO_CONFIGURE: &str = "spec.catalogImageSource.catalogImage (an operator-registry \
     image), spec.catalogServiceSource.address (host:port of a running registry) or \
     spec.configMapSource.configMap (the name of a ConfigMap)";

/// The same choice in the fields of the CRD clusters run today.
const HOW_TO_CONFIGURE_LEGACY: &str = "spec.sourceType: grpc with spec.image (an \
     operator-registry image) or spec.address (host:port of a running registry), or \
     spec.sourceType: configmap with spec.configMap (the name of a ConfigMap)";

/// Rule 2, too many.
fn several_found(spec: &CatalogSourceSpec, found: &[Alternative]) -> String {
    let names: Vec<String> = found.iter().map(|a| describe(spec, *a)).collect();
    let fix = if found.contains(&Alternative::Legacy) {
        format!(
            "keep one of them; to keep a union member, remove the deprecated {}",
            spec_fields(&deprecated_present(spec))
        )
    } else {
        "keep one of them and remove the others".to_string()
    };
    format!(
        "spec must configure exactly one catalog source (oneOf) but configures {}: {}; {fix}",
        found.len(),
        join_and(&names)
    )
}

/// Rule 2, none: explain why the keys that are there do not count.
fn none_found(spec: &CatalogSourceSpec, legacy_counts: bool, terms: Terms) -> String {
    let deprecated = deprecated_present(spec);
    let mut why = Vec::new();
    if !deprecated.is_empty() && !legacy_counts {
        let lost = unportable(spec.grpc_pod_config.as_ref());
        let replacements: Vec<String> = deprecated
            .iter()
            .filter(|k| **k != "sourceType")
            .map(|k| match (*k, &lost) {
                ("grpcPodConfig", Some((_, reason))) => {
                    format!("spec.{k} with {} ({reason})", replacement_of(k))
                }
                _ => format!("spec.{k} with {}", replacement_of(k)),
            })
            .collect();
        why.push(format!(
            "the deprecated {} {} not accepted here because allowLegacy is false{}",
            spec_fields(&deprecated),
            if deprecated.len() == 1 { "is" } else { "are" },
            if replacements.is_empty() {
                String::new()
            } else {
                format!("; replace {}", join_and(&replacements))
            }
        ));
    } else if spec.source_type.is_none() && !deprecated.is_empty() {
        let sources: Vec<&str> = deprecated
            .iter()
            .copied()
            .filter(|k| *k != "grpcPodConfig")
            .collect();
        if !sources.is_empty() {
            why.push(match terms {
                Terms::Union => format!(
                    "the deprecated {} {} no spec.sourceType, so no legacy source is \
                     configured; rather than adding one, write {} instead",
                    spec_fields(&sources),
                    if sources.len() == 1 { "has" } else { "have" },
                    join_and(
                        &sources
                            .iter()
                            .map(|k| replacement_of(k).to_string())
                            .collect::<Vec<_>>()
                    )
                ),
                Terms::Legacy => {
                    let add: Vec<String> = sources
                        .iter()
                        .map(|k| format!("spec.sourceType: {} for spec.{k}", source_type_for(k)))
                        .collect();
                    format!(
                        "{} {} no spec.sourceType, so no catalog is configured; add {}{}",
                        spec_fields(&sources),
                        if sources.len() == 1 { "has" } else { "have" },
                        join_and(&add),
                        if sources.len() == 1 {
                            ""
                        } else {
                            " and keep only one of them"
                        }
                    )
                }
            });
        }
        if spec.grpc_pod_config.is_some() {
            why.push(match terms {
                Terms::Union => {
                    let mut text = "the deprecated spec.grpcPodConfig only tunes a registry pod \
                                    and names no catalog; its replacement \
                                    spec.catalogImageSource.podSpecOverrides goes beside \
                                    spec.catalogImageSource.catalogImage"
                        .to_string();
                    if let Some((_, reason)) = unportable(spec.grpc_pod_config.as_ref()) {
                        text.push_str(&format!(", but {reason}"));
                    }
                    text
                }
                Terms::Legacy => "spec.grpcPodConfig only tunes the registry pod of \
                                  spec.sourceType: grpc with spec.image and names no catalog"
                    .to_string(),
            });
        }
    } else if let Some(source_type) = &spec.source_type {
        why.push(format!(
            "spec.sourceType \"{source_type}\" alone names no catalog: legacy sources also need \
             spec.image, spec.address or spec.configMap"
        ));
    }
    let why = if why.is_empty() {
        String::new()
    } else {
        format!(" ({})", why.join("; "))
    };
    let how = match terms {
        Terms::Union => format!("set exactly one of {HOW_TO_CONFIGURE}"),
        Terms::Legacy => format!("set {HOW_TO_CONFIGURE_LEGACY}"),
    };
    format!(
        "spec must configure exactly one catalog source (oneOf) but configures none{why}; {how}"
    )
}

/// Rules 3 and 4 for a spec whose one alternative is a union member.
fn judge_member(
    spec: &CatalogSourceSpec,
    member: Alternative,
) -> Result<Configured<'_>, Vec<String>> {
    let member_name = describe(spec, member);
    let mut problems: Vec<String> = deprecated_present(spec)
        .into_iter()
        .map(|key| {
            format!(
                "spec.{key} is deprecated and OLM ignores it beside {member_name}: remove it{}",
                match key {
                    "sourceType" => String::new(),
                    "grpcPodConfig" => match unportable(spec.grpc_pod_config.as_ref()) {
                        Some((_, reason)) => format!(
                            " (its replacement is {}, but {reason})",
                            replacement_of(key)
                        ),
                        None => format!(" (its replacement is {})", replacement_of(key)),
                    },
                    _ => format!(" (its replacement is {})", replacement_of(key)),
                }
            )
        })
        .collect();
    problems.extend(member_problem(spec, member));
    if problems.is_empty() {
        Ok(Configured::Member)
    } else {
        Err(problems)
    }
}

/// Rule 4: the member must configure its one thing.
fn member_problem(spec: &CatalogSourceSpec, member: Alternative) -> Option<String> {
    match member {
        Alternative::ImageSource => spec
            .catalog_image_source
            .as_ref()
            .and_then(|s: &CatalogImageSource| empty_field(s.catalog_image.as_deref()))
            .map(|what| {
                format!(
                    "spec.catalogImageSource.catalogImage is {what}: name the operator-registry \
                     image to serve, e.g. quay.io/operatorhubio/catalog:latest"
                )
            }),
        Alternative::ServiceSource => {
            spec.catalog_service_source
                .as_ref()
                .and_then(|s: &CatalogServiceSource| {
                    address_problem("spec.catalogServiceSource.address", s.address.as_deref())
                })
        }
        Alternative::ConfigMapSource => spec
            .config_map_source
            .as_ref()
            .and_then(|s: &ConfigMapSource| empty_field(s.config_map.as_deref()))
            .map(|what| {
                format!(
                    "spec.configMapSource.configMap is {what}: name the ConfigMap in this \
                     namespace that holds the catalog"
                )
            }),
        Alternative::Legacy => None,
    }
}

/// "missing" or "empty" when a string field configures nothing.
fn empty_field(value: Option<&str>) -> Option<&'static str> {
    match value {
        None => Some("missing"),
        Some(v) if v.trim().is_empty() => Some("empty"),
        Some(_) => None,
    }
}

fn address_problem(field: &str, address: Option<&str>) -> Option<String> {
    const EXAMPLE: &str = "e.g. my-registry.my-namespace.svc:50051";
    if let Some(what) = empty_field(address) {
        return Some(format!(
            "{field} is {what}: write the host:port of the running registry, {EXAMPLE}"
        ));
    }
    let address = address.unwrap_or_default();
    catalog_source::check_address(address)
        .err()
        .map(|why| format!("{field} \"{address}\" is not host:port ({why}); write it as {EXAMPLE}"))
}

/// Rules 3 and 4 for a spec whose one alternative is the legacy one.
fn judge_legacy(spec: &CatalogSourceSpec, terms: Terms) -> Result<Configured<'_>, Vec<String>> {
    let raw_type = spec.source_type.as_deref().unwrap_or_default();
    let Some(source_type) = SourceType::parse(raw_type) else {
        return Err(vec![unknown_source_type(raw_type, terms)]);
    };
    let mut problems = Vec::new();
    let legacy = match source_type {
        SourceType::Grpc => grpc_legacy(spec, terms, &mut problems),
        SourceType::ConfigMap | SourceType::Internal => {
            configmap_legacy(spec, source_type, terms, &mut problems)
        }
    };
    match legacy {
        Some(legacy) if problems.is_empty() => Ok(Configured::Legacy(legacy)),
        _ => Err(problems),
    }
}

fn unknown_source_type(value: &str, terms: Terms) -> String {
    let hint = match SourceType::suggest(value) {
        Some(meant) => format!(" (did you mean \"{}\"?)", meant.as_str()),
        None => String::new(),
    };
    let fix = match terms {
        Terms::Union => {
            format!("better, drop the deprecated spec.sourceType and set one of {HOW_TO_CONFIGURE}")
        }
        Terms::Legacy => format!("set {HOW_TO_CONFIGURE_LEGACY}"),
    };
    format!(
        "spec.sourceType \"{value}\" is not a source type OLM knows{hint}: OLM accepts only \
         {}; {fix}",
        SourceType::NAMES.map(|n| format!("\"{n}\"")).join(", ")
    )
}

/// `sourceType: grpc`: OLM runs `image` if set, else dials `address`
/// (`ReconcilerForSource`); `configMap` is never read.
fn grpc_legacy<'a>(
    spec: &'a CatalogSourceSpec,
    terms: Terms,
    problems: &mut Vec<String>,
) -> Option<Legacy<'a>> {
    if spec.config_map.is_some() {
        problems.push(
            "spec.configMap is ignored with spec.sourceType \"grpc\": remove it, or set \
             spec.sourceType \"configmap\" if the catalog is in that ConfigMap"
                .into(),
        );
    }
    match (spec.image.as_deref(), spec.address.as_deref()) {
        (Some(image), address) => {
            if address.is_some() {
                problems.push(
                    "spec.address is ignored because spec.image is set (OLM runs the image): \
                     remove spec.address, or remove spec.image to use the running registry"
                        .into(),
                );
            }
            if let Some(what) = empty_field(Some(image)) {
                problems.push(format!(
                    "spec.image is {what}: name the operator-registry image to serve"
                ));
            }
            Some(Legacy::Image {
                image,
                pod_config: spec.grpc_pod_config.as_ref(),
            })
        }
        (None, Some(address)) => {
            if spec.grpc_pod_config.is_some() {
                problems.push(grpc_pod_config_without_image());
            }
            problems.extend(address_problem("spec.address", Some(address)));
            Some(Legacy::Address(address))
        }
        (None, None) => {
            problems.push(match terms {
                Terms::Union => "spec.sourceType \"grpc\" needs spec.image or spec.address; \
                                 better, write spec.catalogImageSource.catalogImage or \
                                 spec.catalogServiceSource.address"
                    .into(),
                Terms::Legacy => "spec.sourceType \"grpc\" needs spec.image (an \
                                  operator-registry image) or spec.address (host:port of a \
                                  running registry)"
                    .into(),
            });
            None
        }
    }
}

/// `sourceType: configmap|internal`: OLM serves `configMap` and reads neither
/// `image` nor `address`.
fn configmap_legacy<'a>(
    spec: &'a CatalogSourceSpec,
    source_type: SourceType,
    terms: Terms,
    problems: &mut Vec<String>,
) -> Option<Legacy<'a>> {
    let named = source_type.as_str();
    for (key, value) in [("image", &spec.image), ("address", &spec.address)] {
        if value.is_some() {
            problems.push(format!(
                "spec.{key} is ignored with spec.sourceType \"{named}\": remove it, or set \
                 spec.sourceType \"grpc\" if the catalog comes from it"
            ));
        }
    }
    if spec.grpc_pod_config.is_some() {
        problems.push(grpc_pod_config_without_image());
    }
    match spec.config_map.as_deref() {
        None => {
            problems.push(match terms {
                Terms::Union => format!(
                    "spec.sourceType \"{named}\" needs spec.configMap; better, write \
                     spec.configMapSource.configMap"
                ),
                Terms::Legacy => format!(
                    "spec.sourceType \"{named}\" needs spec.configMap (the name of the \
                     ConfigMap that holds the catalog)"
                ),
            });
            None
        }
        Some(name) => {
            if let Some(what) = empty_field(Some(name)) {
                problems.push(format!(
                    "spec.configMap is {what}: name the ConfigMap that holds the catalog"
                ));
            }
            Some(Legacy::ConfigMap(name))
        }
    }
}

fn grpc_pod_config_without_image() -> String {
    "spec.grpcPodConfig is only used with spec.sourceType \"grpc\" and spec.image, which this \
     spec does not set: remove it"
        .into()
}

impl Legacy<'_> {
    /// The deprecated keys this source is written with.
    fn keys(&self) -> Vec<&'static str> {
        match self {
            Legacy::Image { pod_config, .. } => {
                let mut keys = vec!["sourceType", "image"];
                if pod_config.is_some() {
                    keys.push("grpcPodConfig");
                }
                keys
            }
            Legacy::Address(_) => vec!["sourceType", "address"],
            Legacy::ConfigMap(_) => vec!["sourceType", "configMap"],
        }
    }

    /// The `grpcPodConfig` this source carries, if any.
    fn pod_config(&self) -> Option<&GrpcPodConfig> {
        match self {
            Legacy::Image { pod_config, .. } => *pod_config,
            Legacy::Address(_) | Legacy::ConfigMap(_) => None,
        }
    }

    /// The union member that replaces it, as `spec.<member>: <json>` text.
    fn replacement_text(&self) -> String {
        match self.member() {
            Ok((key, value)) => format!("spec.{key}: {value}"),
            Err(_) => match self {
                Legacy::Image { image, .. } => format!(
                    "spec.catalogImageSource.catalogImage: {}",
                    Value::String(image.to_string())
                ),
                _ => String::new(),
            },
        }
    }

    /// Rule 6: the member key and value, or the `grpcPodConfig` fields the
    /// seed's `podSpecOverrides` cannot hold.
    fn member(&self) -> Result<(&'static str, Value), Vec<&'static str>> {
        let (key, value) = match self {
            Legacy::Image { image, pod_config } => {
                let unportable = pod_config.map(GrpcPodConfig::unportable_fields);
                if let Some(fields) = unportable.filter(|f| !f.is_empty()) {
                    return Err(fields);
                }
                let member = CatalogImageSource {
                    catalog_image: Some(image.to_string()),
                    pod_spec_overrides: pod_config.and_then(GrpcPodConfig::pod_spec_overrides),
                };
                ("catalogImageSource", serde_json::to_value(member))
            }
            Legacy::Address(address) => {
                let member = CatalogServiceSource {
                    address: Some(address.to_string()),
                };
                ("catalogServiceSource", serde_json::to_value(member))
            }
            Legacy::ConfigMap(name) => {
                let member = ConfigMapSource {
                    config_map: Some(name.to_string()),
                };
                ("configMapSource", serde_json::to_value(member))
            }
        };
        // Serialising these plain structs cannot fail; an empty object would
        // still be a valid (if odd) answer, never a panic.
        Ok((key, value.unwrap_or_else(|_| Value::Object(Map::new()))))
    }
}

/// Rules 5 and 6 for a consistent legacy spec.
fn admit_legacy(object: &Map<String, Value>, legacy: &Legacy, settings: &Settings) -> Judgement {
    let keys = spec_fields(&legacy.keys());
    if settings.migrate_legacy
        && let Ok((member, value)) = legacy.member()
    {
        return Judgement::Admitted(
            Verdict::mutate(migrate(object, member, value)).with_warning(format!(
                "the deprecated {keys} were rewritten to spec.{member} (migrateLegacy); \
                 update the manifest the same way so the next apply does not bring them back"
            )),
        );
    }
    let lost = unportable(legacy.pod_config());
    if !settings.allow_legacy {
        // Only reached with migrateLegacy on, for a spec it could not rewrite.
        let (cannot, remove) = match &lost {
            Some((fields, reason)) => (
                format!(", and this spec cannot be migrated: {reason}"),
                format!("remove {fields} and "),
            ),
            None => (String::new(), String::new()),
        };
        return Judgement::Broken(vec![format!(
            "the deprecated {keys} are not accepted here because allowLegacy is false{cannot}; \
             {remove}write {} instead",
            legacy.replacement_text()
        )]);
    }
    if !settings.warn_legacy && !settings.migrate_legacy {
        // Today's CRD has only the legacy form: it is the normal one.
        return Judgement::Admitted(Verdict::accept());
    }
    let mut warning = format!(
        "the deprecated {keys} configure this catalog; write {} instead",
        legacy.replacement_text()
    );
    let not_migrated = if settings.migrate_legacy {
        lost.map(|(fields, reason)| {
            format!("this spec was not migrated: {reason}; remove {fields} to let it be migrated")
        })
    } else {
        // Advice never drops a setting silently: say what the member form
        // cannot hold (the migration says it in its own warning).
        if let Some((fields, reason)) = lost {
            warning.push_str(&format!("; but {reason}, so that form would drop {fields}"));
        }
        None
    };
    Judgement::Admitted(
        Verdict::accept()
            .with_warning(warning)
            .with_warnings(not_migrated),
    )
}

/// The object with the deprecated keys replaced by `member`; every other key
/// of the object and of its spec is kept as it was.
fn migrate(object: &Map<String, Value>, member: &str, value: Value) -> Value {
    let mut object = object.clone();
    if let Some(Value::Object(spec)) = object.get_mut("spec") {
        for key in DEPRECATED {
            spec.remove(key);
        }
        spec.insert(member.to_string(), value);
    }
    Value::Object(object)
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{admission_request, assert_contains_all, assert_no_debug_output};
    use olm_guard_core::NoCluster;
    use serde_json::json;

    /// `operatorhubio-catalog` from OLM's quickstart (realworld/olm/quickstart-olm.yaml).
    fn operatorhubio_spec() -> Value {
        json!({
            "sourceType": "grpc",
            "image": "quay.io/operatorhubio/catalog:latest",
            "displayName": "Community Operators",
            "publisher": "OperatorHub.io",
            "updateStrategy": {"registryPoll": {"interval": "60m"}}
        })
    }

    fn catalog(spec: Value) -> Value {
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "CatalogSource",
            "metadata": {"name": "operatorhubio-catalog", "namespace": "olm"},
            "spec": spec
        })
    }

    fn request_for(operation: &str, object: Value) -> AdmissionRequest {
        admission_request(
            ["operators.coreos.com", "v1alpha1", "CatalogSource"],
            "catalogsources",
            json!({
                "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                "name": "operatorhubio-catalog",
                "namespace": "olm",
                "operation": operation,
                "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
                "object": object
            }),
        )
    }

    fn check_with(spec: Value, settings: &Settings) -> Verdict {
        validate(&request_for("CREATE", catalog(spec)), settings, &NoCluster)
    }

    fn check(spec: Value) -> Verdict {
        check_with(spec, &Settings::default())
    }

    fn legacy_off() -> Settings {
        Settings {
            allow_legacy: false,
            warn_legacy: false,
            migrate_legacy: false,
        }
    }

    fn warning() -> Settings {
        Settings {
            allow_legacy: true,
            warn_legacy: true,
            migrate_legacy: false,
        }
    }

    fn migrating() -> Settings {
        Settings {
            allow_legacy: true,
            warn_legacy: false,
            migrate_legacy: true,
        }
    }

    fn migrating_only() -> Settings {
        Settings {
            allow_legacy: false,
            warn_legacy: false,
            migrate_legacy: true,
        }
    }

    #[track_caller]
    fn assert_clean_accept(verdict: &Verdict) {
        assert!(verdict.allowed, "denied: {:?}", verdict.message);
        assert!(
            verdict.warnings.is_empty(),
            "warnings: {:?}",
            verdict.warnings
        );
        assert_eq!(verdict.mutated_object, None);
    }

    #[track_caller]
    fn denial(verdict: &Verdict) -> &str {
        assert!(
            !verdict.allowed,
            "accepted, warnings {:?}",
            verdict.warnings
        );
        let message = verdict.message.as_deref().unwrap_or_default();
        assert_no_debug_output(message);
        message
    }

    /// A denial whose advice names only fields of the CatalogSource CRD
    /// clusters run today.
    #[track_caller]
    fn assert_legacy_terms(verdict: &Verdict) {
        let message = denial(verdict);
        for member in [
            "catalogImageSource",
            "catalogServiceSource",
            "configMapSource",
        ] {
            assert!(!message.contains(member), "{member} in: {message}");
        }
        assert!(!message.contains("deprecated"), "{message}");
    }

    /// The spec of a mutated object, after checking the mutation leaves the
    /// rest of the object alone.
    #[track_caller]
    fn migrated_spec(verdict: &Verdict) -> Value {
        assert!(verdict.allowed, "denied: {:?}", verdict.message);
        let object = verdict.mutated_object.clone().expect("a mutation");
        assert_eq!(
            object["metadata"],
            json!({"name": "operatorhubio-catalog", "namespace": "olm"})
        );
        assert_eq!(object["kind"], "CatalogSource");
        object["spec"].clone()
    }

    // Settings.

    #[test]
    fn settings_default_to_legacy_allowed_and_not_migrated() {
        let defaults: Settings = olm_guard_core::settings::parse(&Value::Null).unwrap();
        assert_eq!(
            defaults,
            Settings {
                allow_legacy: true,
                warn_legacy: false,
                migrate_legacy: false
            }
        );
        let empty: Settings = olm_guard_core::settings::parse(&json!({})).unwrap();
        assert_eq!(empty, defaults);
        let set: Settings =
            olm_guard_core::settings::parse(&json!({"allowLegacy": false, "migrateLegacy": true}))
                .unwrap();
        assert_eq!(set, migrating_only());
        let warn: Settings = olm_guard_core::settings::parse(&json!({"warnLegacy": true})).unwrap();
        assert_eq!(warn, warning());
    }

    #[test]
    fn settings_reject_unknown_keys_and_wrong_types() {
        let typo = olm_guard_core::settings::parse::<Settings>(&json!({"allowlegacy": false}));
        assert!(typo.unwrap_err().contains("unknown field `allowlegacy`"));
        let wrong = olm_guard_core::settings::parse::<Settings>(&json!({"migrateLegacy": "yes"}));
        assert!(wrong.unwrap_err().contains("expected a boolean"));
    }

    // Requests the policy does not judge.

    #[test]
    fn other_kinds_subresources_and_operations_pass_untouched() {
        let broken = catalog(json!({"catalogImageSource": {}, "configMapSource": {}}));
        let mut other_kind = request_for("CREATE", broken.clone());
        other_kind.kind.kind = "Subscription".into();
        assert_clean_accept(&validate(&other_kind, &Settings::default(), &NoCluster));

        let mut other_group = request_for("CREATE", broken.clone());
        other_group.kind.group = "example.com".into();
        assert_clean_accept(&validate(&other_group, &Settings::default(), &NoCluster));

        let mut status = request_for("UPDATE", broken.clone());
        status.sub_resource = Some("status".into());
        assert_clean_accept(&validate(&status, &Settings::default(), &NoCluster));

        for operation in ["DELETE", "CONNECT"] {
            let request = request_for(operation, broken.clone());
            assert_clean_accept(&validate(&request, &migrating_only(), &NoCluster));
        }
    }

    fn update(object: Value, old: Value, settings: &Settings) -> Verdict {
        let mut request = request_for("UPDATE", object);
        request.old_object = old;
        validate(&request, settings, &NoCluster)
    }

    /// Objects stored before the policy, each breaking it in its own way.
    fn stored_invalid_specs() -> Vec<Value> {
        vec![
            json!({"sourceType": "grpc"}),
            json!({"sourceType": "grpc", "image": "quay.io/x:1", "address": "h.ns.svc:50051"}),
            json!({"sourceType": "grpc", "image": "quay.io/x:1", "configMap": "m"}),
            json!({"catalogImageSource": {}, "configMapSource": {"configMap": "m"}}),
            json!({}),
        ]
    }

    #[test]
    fn an_update_that_writes_a_violation_is_checked_like_create() {
        // Nothing stored: judged like a CREATE.
        let request = request_for(
            "UPDATE",
            catalog(json!({"catalogImageSource": {}, "configMapSource": {"configMap": "m"}})),
        );
        let verdict = validate(&request, &Settings::default(), &NoCluster);
        assert_contains_all(
            denial(&verdict),
            &["oneOf", "spec.catalogImageSource", "spec.configMapSource"],
        );

        let request = request_for("UPDATE", catalog(operatorhubio_spec()));
        let verdict = validate(&request, &migrating(), &NoCluster);
        assert!(verdict.mutated_object.is_some());

        // A valid stored object: a new violation is denied as on CREATE.
        let mut broken = operatorhubio_spec();
        broken["address"] = json!("h.ns.svc:50051");
        let verdict = update(
            catalog(broken),
            catalog(operatorhubio_spec()),
            &Settings::default(),
        );
        assert_contains_all(
            denial(&verdict),
            &["spec.address is ignored because spec.image is set"],
        );
    }

    #[test]
    fn a_stored_violation_does_not_freeze_metadata_updates() {
        for spec in stored_invalid_specs() {
            let stored = catalog(spec.clone());
            let mut labelled = stored.clone();
            labelled["metadata"]["labels"] = json!({"team": "a"});
            labelled["metadata"]["finalizers"] = json!([]);
            labelled["metadata"]["annotations"] = json!({
                "kubectl.kubernetes.io/last-applied-configuration": "{}"
            });
            // On its own the object is denied; as an UPDATE of itself it
            // passes with a warning that says what is still wrong.
            let created = check(spec.clone());
            let problems = denial(&created).to_string();
            for settings in [Settings::default(), legacy_off(), warning(), migrating()] {
                let verdict = update(labelled.clone(), stored.clone(), &settings);
                assert!(verdict.allowed, "{spec}: {:?}", verdict.message);
                assert_eq!(verdict.mutated_object, None);
                assert_eq!(verdict.warnings.len(), 1, "{:?}", verdict.warnings);
                assert_contains_all(
                    &verdict.warnings[0],
                    &[
                        "already breaks catalog-union",
                        "leaves its catalog configuration as it was",
                        "fix it: ",
                    ],
                );
                assert_no_debug_output(&verdict.warnings[0]);
            }
            let verdict = update(labelled, stored, &Settings::default());
            assert_contains_all(&verdict.warnings[0], &[&problems]);
        }
    }

    #[test]
    fn null_valued_keys_do_not_change_the_configuration() {
        let stored = catalog(json!({"sourceType": "grpc"}));
        let nulls = catalog(json!({"sourceType": "grpc", "image": null, "configMapSource": null}));
        let verdict = update(nulls, stored, &Settings::default());
        assert!(verdict.allowed, "{:?}", verdict.message);
        assert_contains_all(&verdict.warnings.join("\n"), &["as it was"]);
    }

    #[test]
    fn an_update_that_fixes_part_of_a_stored_violation_is_accepted() {
        let stored = catalog(json!({
            "sourceType": "grpc", "image": "quay.io/x:1", "address": "h.ns.svc:50051", "configMap": "m"
        }));
        let partly = catalog(
            json!({"sourceType": "grpc", "image": "quay.io/x:1", "address": "h.ns.svc:50051"}),
        );
        let verdict = update(partly, stored.clone(), &Settings::default());
        assert!(verdict.allowed, "{:?}", verdict.message);
        assert_contains_all(
            &verdict.warnings.join("\n"),
            &[
                "this update fixes part of what this CatalogSource breaks",
                "still to fix: spec.address is ignored because spec.image is set",
            ],
        );
        assert!(
            !verdict
                .warnings
                .join("\n")
                .contains("spec.configMap is ignored")
        );

        let fixed = catalog(json!({"sourceType": "grpc", "image": "quay.io/x:1"}));
        assert_clean_accept(&update(fixed, stored, &Settings::default()));
    }

    #[test]
    fn an_update_that_adds_a_violation_to_a_stored_one_is_denied() {
        let stored = catalog(
            json!({"sourceType": "grpc", "image": "quay.io/x:1", "address": "h.ns.svc:50051"}),
        );
        // A new problem beside the stored one.
        let worse = catalog(json!({
            "sourceType": "grpc", "image": "quay.io/x:1", "address": "h.ns.svc:50051", "configMap": "m"
        }));
        let message = denial(&update(worse, stored.clone(), &Settings::default())).to_string();
        assert_contains_all(
            &message,
            &["spec.configMap is ignored", "spec.address is ignored"],
        );
        // A different problem instead of the stored one.
        let other = catalog(json!({"sourceType": "configmap", "configMap": "m", "image": "i"}));
        let message = denial(&update(other, stored, &Settings::default())).to_string();
        assert_contains_all(&message, &["spec.image is ignored with spec.sourceType"]);
    }

    #[test]
    fn an_unreadable_or_missing_old_object_means_nothing_stored() {
        let broken = catalog(json!({"sourceType": "grpc"}));
        for old in [
            Value::Null,
            json!("x"),
            json!([1]),
            json!({"spec": "grpc"}),
            json!({"spec": {"catalogImageSource": ["i"]}}),
        ] {
            let verdict = update(broken.clone(), old.clone(), &Settings::default());
            assert_contains_all(denial(&verdict), &["alone names no catalog"]);
        }
    }

    #[test]
    fn an_unreadable_new_object_is_a_bad_request_even_when_the_stored_one_broke() {
        let stored = catalog(json!({"sourceType": "grpc"}));
        let verdict = update(catalog(json!("grpc")), stored, &Settings::default());
        assert_eq!(verdict.code, Some(400));
    }

    // Unreadable input.

    #[test]
    fn a_missing_object_is_a_bad_request() {
        let mut request = request_for("CREATE", Value::Null);
        request.object = Value::Null;
        let verdict = validate(&request, &Settings::default(), &NoCluster);
        assert_eq!(verdict.code, Some(400));
        assert_contains_all(denial(&verdict), &["request.object"]);

        let request = request_for("UPDATE", json!(["not", "an", "object"]));
        let verdict = validate(&request, &Settings::default(), &NoCluster);
        assert_eq!(verdict.code, Some(400));
    }

    #[test]
    fn a_spec_that_is_not_an_object_is_a_bad_request() {
        for (spec, kind) in [
            (json!("grpc"), "a string"),
            (json!([1]), "a list"),
            (json!(7), "a number"),
            (json!(true), "a boolean"),
        ] {
            let verdict = check_with(spec.clone(), &warning());
            assert_eq!(verdict.code, Some(400));
            assert_contains_all(
                denial(&verdict),
                &["spec must be an object", kind, "catalogImageSource"],
            );
            // Today's CRD has no union members: the default names the
            // legacy fields only.
            let verdict = check(spec);
            assert_eq!(verdict.code, Some(400));
            let message = denial(&verdict);
            assert_contains_all(
                message,
                &[
                    "spec must be an object holding sourceType and one of image, address or configMap",
                    kind,
                ],
            );
            assert!(!message.contains("catalogImageSource"), "{message}");
        }
    }

    #[test]
    fn a_list_where_an_object_belongs_is_not_read_as_one() {
        let verdict = check(json!({"catalogImageSource": ["quay.io/x:1"]}));
        assert_eq!(verdict.code, Some(400));
        assert_contains_all(
            denial(&verdict),
            &[
                "spec.catalogImageSource has the wrong type",
                "expected an object",
                "catalogImage: <image>",
            ],
        );
        let verdict = check(
            json!({"sourceType": "grpc", "image": "i", "grpcPodConfig": {"tolerations": [["k"]]}}),
        );
        assert_contains_all(
            denial(&verdict),
            &["spec.grpcPodConfig.tolerations[0] has the wrong type"],
        );
    }

    #[test]
    fn a_field_of_the_wrong_type_is_named_with_its_path() {
        let verdict = check(json!({"catalogImageSource": {"catalogImage": 5}}));
        assert_eq!(verdict.code, Some(400));
        assert_contains_all(
            denial(&verdict),
            &["spec.catalogImageSource.catalogImage", "expected a string"],
        );

        let verdict = check(
            json!({"sourceType": "grpc", "image": "i", "grpcPodConfig": {"nodeSelector": {"a": 1}}}),
        );
        assert_contains_all(
            denial(&verdict),
            &["spec.grpcPodConfig.nodeSelector.a", "expected a string"],
        );

        let verdict = check(json!({"configMapSource": "my-map"}));
        assert_contains_all(
            denial(&verdict),
            &[
                "spec.configMapSource has the wrong type",
                "expected an object",
                "configMapSource: {configMap: <name>}",
            ],
        );
    }

    // Rules 1 and 2.

    #[test]
    fn each_union_member_alone_is_accepted_without_warning() {
        assert_clean_accept(&check(
            json!({"catalogImageSource": {"catalogImage": "quay.io/operatorhubio/catalog:latest"}}),
        ));
        assert_clean_accept(&check(json!({
            "catalogImageSource": {
                "catalogImage": "quay.io/operatorhubio/catalog:latest",
                "podSpecOverrides": {"nodeSelector": {"label": "value"}, "priorityClassName": "high"}
            },
            "displayName": "Community Operators", "publisher": "OperatorHub.io"
        })));
        assert_clean_accept(&check(
            json!({"catalogServiceSource": {"address": "my-registry.default.svc:50051"}}),
        ));
        assert_clean_accept(&check(json!({"configMapSource": {"configMap": "somemap"}})));
        for settings in [legacy_off(), migrating(), migrating_only()] {
            assert_clean_accept(&check_with(
                json!({"configMapSource": {"configMap": "somemap"}}),
                &settings,
            ));
        }
    }

    #[test]
    fn two_members_are_denied_naming_both() {
        let message = denial(&check(json!({
            "catalogImageSource": {"catalogImage": "i"},
            "catalogServiceSource": {"address": "h:1"}
        })))
        .to_string();
        assert_contains_all(
            &message,
            &[
                "oneOf",
                "configures 2",
                "spec.catalogImageSource and spec.catalogServiceSource",
                "keep one",
            ],
        );
    }

    #[test]
    fn three_members_are_denied_naming_all() {
        let message = denial(&check(json!({
            "catalogImageSource": {"catalogImage": "i"},
            "catalogServiceSource": {"address": "h:1"},
            "configMapSource": {"configMap": "m"}
        })))
        .to_string();
        assert_contains_all(
            &message,
            &[
                "oneOf",
                "configures 3",
                "spec.catalogImageSource, spec.catalogServiceSource and spec.configMapSource",
            ],
        );
    }

    #[test]
    fn a_member_beside_a_complete_legacy_source_is_two_alternatives() {
        let message = denial(&check(json!({
            "catalogImageSource": {"catalogImage": "i"},
            "sourceType": "grpc",
            "image": "i"
        })))
        .to_string();
        assert_contains_all(
            &message,
            &[
                "oneOf",
                "configures 2",
                "spec.catalogImageSource and the legacy spec.sourceType and spec.image",
                "remove the deprecated spec.sourceType and spec.image",
            ],
        );
    }

    #[test]
    fn no_alternative_is_denied_saying_none_and_how_to_fix() {
        for spec in [
            json!({}),
            Value::Null,
            json!({"displayName": "x", "priority": 3}),
        ] {
            let message = denial(&check_with(spec.clone(), &warning())).to_string();
            assert_contains_all(
                &message,
                &[
                    "oneOf",
                    "configures none",
                    "spec.catalogImageSource.catalogImage",
                    "spec.catalogServiceSource.address",
                    "spec.configMapSource.configMap",
                ],
            );
            assert_legacy_terms(&check(spec));
        }
        let mut object = catalog(json!({}));
        object.as_object_mut().unwrap().remove("spec");
        let verdict = validate(
            &request_for("CREATE", object),
            &Settings::default(),
            &NoCluster,
        );
        assert_contains_all(denial(&verdict), &["oneOf", "configures none"]);
    }

    #[test]
    fn null_valued_keys_count_as_absent() {
        assert_clean_accept(&check(json!({
            "catalogImageSource": null, "catalogServiceSource": null,
            "sourceType": null, "image": null, "address": null, "configMap": null, "grpcPodConfig": null,
            "configMapSource": {"configMap": "m"}
        })));
        let message = denial(&check(
            json!({"catalogImageSource": null, "sourceType": null}),
        ))
        .to_string();
        assert_contains_all(&message, &["oneOf", "configures none"]);
        let verdict =
            check(json!({"sourceType": "grpc", "image": "i", "address": null, "configMap": null}));
        assert!(verdict.allowed);
    }

    #[test]
    fn empty_keys_count_as_present() {
        let message = denial(&check(
            json!({"catalogImageSource": {}, "configMapSource": {"configMap": "m"}}),
        ))
        .to_string();
        assert_contains_all(&message, &["oneOf", "configures 2"]);
    }

    #[test]
    fn incomplete_legacy_keys_are_explained_when_nothing_is_configured() {
        let message = denial(&check_with(json!({"image": "quay.io/x:1"}), &warning())).to_string();
        assert_contains_all(
            &message,
            &[
                "oneOf",
                "configures none",
                "spec.image has no spec.sourceType",
                "spec.catalogImageSource.catalogImage",
            ],
        );

        let message = denial(&check(json!({"sourceType": "grpc"}))).to_string();
        assert_contains_all(
            &message,
            &["oneOf", "spec.sourceType \"grpc\" alone names no catalog"],
        );

        let message = denial(&check_with(
            json!({"grpcPodConfig": {"priorityClassName": "p"}}),
            &warning(),
        ))
        .to_string();
        assert_contains_all(
            &message,
            &[
                "oneOf",
                "configures none (the deprecated spec.grpcPodConfig only tunes a registry pod and \
                 names no catalog",
            ],
        );
        assert!(!message.contains("no spec.sourceType"), "{message}");
    }

    #[test]
    fn incomplete_legacy_keys_are_explained_in_legacy_terms_by_default() {
        for (spec, parts) in [
            (
                json!({"image": "quay.io/x:1"}),
                vec![
                    "configures none (spec.image has no spec.sourceType, so no catalog is \
                     configured; add spec.sourceType: grpc for spec.image)",
                ],
            ),
            (
                json!({"configMap": "m"}),
                vec!["add spec.sourceType: configmap for spec.configMap"],
            ),
            (
                json!({"address": "h:1", "configMap": "m"}),
                vec![
                    "add spec.sourceType: grpc for spec.address and spec.sourceType: configmap \
                     for spec.configMap and keep only one of them",
                ],
            ),
            (
                json!({"grpcPodConfig": {"priorityClassName": "p"}}),
                vec![
                    "spec.grpcPodConfig only tunes the registry pod of spec.sourceType: grpc \
                     with spec.image and names no catalog",
                ],
            ),
            (
                json!({"sourceType": "grpc"}),
                vec!["spec.sourceType \"grpc\" alone names no catalog"],
            ),
            (
                json!({"sourceType": "grpc", "configMap": "m"}),
                vec![
                    "spec.sourceType \"grpc\" needs spec.image (an operator-registry image) or spec.address",
                ],
            ),
            (
                json!({"sourceType": "configmap", "image": "i"}),
                vec![
                    "spec.sourceType \"configmap\" needs spec.configMap (the name of the ConfigMap",
                ],
            ),
            (
                json!({"sourceType": "oci", "image": "i"}),
                vec![
                    "OLM accepts only \"grpc\", \"configmap\", \"internal\"; set spec.sourceType: grpc with spec.image",
                ],
            ),
        ] {
            let verdict = check(spec.clone());
            assert_contains_all(denial(&verdict), &parts);
            assert_legacy_terms(&verdict);
        }
    }

    #[test]
    fn a_union_member_in_the_object_allows_union_advice() {
        let message = denial(&check(json!({
            "catalogImageSource": {"catalogImage": "i"}, "grpcPodConfig": {"nodeSelector": {}}
        })))
        .to_string();
        assert_contains_all(&message, &["spec.catalogImageSource.podSpecOverrides"]);
    }

    #[test]
    fn advice_to_move_grpc_pod_config_names_what_the_member_cannot_hold() {
        let config = json!({"securityContextConfig": "restricted", "memoryTarget": "30Mi", "nodeSelector": {"a": "b"}});
        let lost = "spec.grpcPodConfig.securityContextConfig and spec.grpcPodConfig.memoryTarget \
                    has no place in spec.catalogImageSource.podSpecOverrides";
        // Beside a member.
        let message = denial(&check(
            json!({"catalogImageSource": {"catalogImage": "i"}, "grpcPodConfig": config}),
        ))
        .to_string();
        assert_contains_all(
            &message,
            &[
                "its replacement is spec.catalogImageSource.podSpecOverrides, but",
                lost,
            ],
        );
        // Alone, in union terms.
        let message = denial(&check_with(json!({"grpcPodConfig": config}), &warning())).to_string();
        assert_contains_all(&message, &["goes beside", lost]);
        // allowLegacy: false names the replacement of each key.
        let message = denial(&check_with(
            json!({"sourceType": "grpc", "image": "i", "grpcPodConfig": config}),
            &legacy_off(),
        ))
        .to_string();
        assert_contains_all(
            &message,
            &[
                "spec.grpcPodConfig with spec.catalogImageSource.podSpecOverrides (",
                lost,
            ],
        );
        // The legacy warning.
        let verdict = check_with(
            json!({"sourceType": "grpc", "image": "i", "grpcPodConfig": config}),
            &warning(),
        );
        assert!(verdict.allowed);
        assert_eq!(verdict.warnings.len(), 1, "{:?}", verdict.warnings);
        assert_contains_all(
            &verdict.warnings[0],
            &[
                "write spec.catalogImageSource.catalogImage: \"i\" instead; but",
                lost,
                "so that form would drop spec.grpcPodConfig.securityContextConfig and \
                 spec.grpcPodConfig.memoryTarget",
            ],
        );
        // Nothing to lose, nothing said.
        let message = denial(&check(json!({
            "catalogImageSource": {"catalogImage": "i"}, "grpcPodConfig": {"nodeSelector": {"a": "b"}}
        })))
        .to_string();
        assert!(!message.contains("has no place"), "{message}");
    }

    // Rule 3.

    #[test]
    fn each_deprecated_key_beside_a_member_is_named() {
        for (key, value, replacement) in [
            ("sourceType", json!("grpc"), None),
            (
                "image",
                json!("quay.io/x:1"),
                Some("spec.catalogImageSource.catalogImage"),
            ),
            (
                "address",
                json!("h:1"),
                Some("spec.catalogServiceSource.address"),
            ),
            (
                "configMap",
                json!("m"),
                Some("spec.configMapSource.configMap"),
            ),
            (
                "grpcPodConfig",
                json!({"priorityClassName": "p"}),
                Some("spec.catalogImageSource.podSpecOverrides"),
            ),
        ] {
            let mut spec = json!({"catalogImageSource": {"catalogImage": "quay.io/x:1"}});
            spec[key] = value;
            let message = denial(&check(spec)).to_string();
            assert_contains_all(
                &message,
                &[&format!(
                    "spec.{key} is deprecated and OLM ignores it beside spec.catalogImageSource: remove it"
                )],
            );
            if let Some(replacement) = replacement {
                assert_contains_all(&message, &[replacement]);
            }
            assert!(!message.contains("oneOf"), "{message}");
        }
    }

    #[test]
    fn legacy_image_with_address_names_the_ignored_address() {
        let mut spec = operatorhubio_spec();
        spec["address"] = json!("operatorhubio-catalog.olm.svc:50051");
        let message = denial(&check(spec)).to_string();
        assert_contains_all(
            &message,
            &["spec.address is ignored because spec.image is set"],
        );
    }

    #[test]
    fn grpc_pod_config_without_image_is_named() {
        let message = denial(&check(json!({
            "sourceType": "grpc", "address": "h:50051", "grpcPodConfig": {"priorityClassName": "p"}
        })))
        .to_string();
        assert_contains_all(
            &message,
            &["spec.grpcPodConfig is only used with", "spec.image"],
        );

        let message = denial(&check(json!({
            "sourceType": "configmap", "configMap": "m", "grpcPodConfig": {}
        })))
        .to_string();
        assert_contains_all(&message, &["spec.grpcPodConfig is only used with"]);
    }

    #[test]
    fn config_map_with_grpc_is_named() {
        let mut spec = operatorhubio_spec();
        spec["configMap"] = json!("m");
        let message = denial(&check(spec)).to_string();
        assert_contains_all(
            &message,
            &["spec.configMap is ignored with spec.sourceType \"grpc\""],
        );
    }

    #[test]
    fn image_or_address_with_configmap_or_internal_is_named() {
        for source_type in ["configmap", "internal"] {
            for key in ["image", "address"] {
                let mut spec = json!({"sourceType": source_type, "configMap": "m"});
                spec[key] = json!("h:1");
                let message = denial(&check(spec)).to_string();
                assert_contains_all(
                    &message,
                    &[&format!(
                        "spec.{key} is ignored with spec.sourceType \"{source_type}\""
                    )],
                );
            }
        }
        let message = denial(&check(json!({"sourceType": "configmap", "image": "i"}))).to_string();
        assert_contains_all(
            &message,
            &[
                "spec.image is ignored",
                "spec.sourceType \"configmap\" needs spec.configMap",
            ],
        );
    }

    #[test]
    fn an_unknown_source_type_is_named_with_the_known_ones() {
        let message = denial(&check(json!({"sourceType": "gRPC", "image": "i"}))).to_string();
        assert_contains_all(
            &message,
            &[
                "spec.sourceType \"gRPC\" is not a source type OLM knows",
                "did you mean \"grpc\"",
                "\"grpc\", \"configmap\", \"internal\"",
            ],
        );

        let message = denial(&check_with(
            json!({"sourceType": "oci", "image": "i"}),
            &warning(),
        ))
        .to_string();
        assert_contains_all(
            &message,
            &[
                "spec.sourceType \"oci\"",
                "spec.catalogImageSource.catalogImage",
            ],
        );
        assert!(!message.contains("did you mean"));

        let message = denial(&check(json!({"sourceType": "", "configMap": "m"}))).to_string();
        assert_contains_all(&message, &["spec.sourceType \"\" is not a source type"]);
    }

    // Rule 4.

    #[test]
    fn an_image_member_must_name_an_image() {
        for (member, what) in [
            (json!({}), "missing"),
            (json!({"catalogImage": ""}), "empty"),
            (json!({"catalogImage": "  "}), "empty"),
            (
                json!({"catalogImage": null, "podSpecOverrides": {}}),
                "missing",
            ),
        ] {
            let message = denial(&check(json!({"catalogImageSource": member}))).to_string();
            assert_contains_all(
                &message,
                &[&format!("spec.catalogImageSource.catalogImage is {what}")],
            );
        }
    }

    #[test]
    fn a_service_member_needs_host_and_port() {
        let message = denial(&check(json!({"catalogServiceSource": {}}))).to_string();
        assert_contains_all(
            &message,
            &["spec.catalogServiceSource.address is missing", "host:port"],
        );
        // The seed's own example has no port: OLM could not dial it.
        let message = denial(&check(
            json!({"catalogServiceSource": {"address": "some.namespace.svc"}}),
        ))
        .to_string();
        assert_contains_all(
            &message,
            &[
                "spec.catalogServiceSource.address \"some.namespace.svc\" is not host:port",
                "port is missing",
            ],
        );
        for port in ["0", "65536", "70000", "http"] {
            let address = format!("registry.olm.svc:{port}");
            let message = denial(&check(
                json!({"catalogServiceSource": {"address": address}}),
            ))
            .to_string();
            assert_contains_all(&message, &[&format!("\"{address}\" is not host:port")]);
        }
        assert_clean_accept(&check(
            json!({"catalogServiceSource": {"address": "[fd00::1]:65535"}}),
        ));
        assert_clean_accept(&check(
            json!({"catalogServiceSource": {"address": "10.96.0.10:1"}}),
        ));
    }

    #[test]
    fn a_config_map_member_must_name_a_config_map() {
        let message = denial(&check(json!({"configMapSource": {"configMap": ""}}))).to_string();
        assert_contains_all(&message, &["spec.configMapSource.configMap is empty"]);
        let message = denial(&check(json!({"configMapSource": {}}))).to_string();
        assert_contains_all(&message, &["spec.configMapSource.configMap is missing"]);
    }

    #[test]
    fn legacy_values_must_configure_something_too() {
        let message = denial(&check(json!({"sourceType": "grpc", "image": ""}))).to_string();
        assert_contains_all(&message, &["spec.image is empty"]);
        let message =
            denial(&check(json!({"sourceType": "grpc", "address": "registry"}))).to_string();
        assert_contains_all(&message, &["spec.address \"registry\" is not host:port"]);
        let message =
            denial(&check(json!({"sourceType": "internal", "configMap": ""}))).to_string();
        assert_contains_all(&message, &["spec.configMap is empty"]);
    }

    #[test]
    fn all_problems_of_one_spec_are_reported_together() {
        let message = denial(&check(
            json!({"catalogServiceSource": {"address": "x"}, "grpcPodConfig": {}}),
        ))
        .to_string();
        assert_contains_all(
            &message,
            &[
                "spec.grpcPodConfig is deprecated",
                "spec.catalogServiceSource.address \"x\" is not host:port",
            ],
        );
    }

    // Rule 5.

    #[test]
    fn legacy_sources_are_accepted_without_warning_by_default() {
        for spec in [
            operatorhubio_spec(),
            json!({"sourceType": "grpc", "image": "i:1", "grpcPodConfig": {"nodeSelector": {"a": "b"}, "securityContextConfig": "restricted", "memoryTarget": "30Mi", "extractContent": {"catalogDir": "/configs", "cacheDir": "/tmp/cache"}}}),
            json!({"sourceType": "grpc", "address": "h.ns.svc:50051"}),
            json!({"sourceType": "configmap", "configMap": "m"}),
            json!({"sourceType": "internal", "configMap": "m"}),
        ] {
            assert_clean_accept(&check(spec.clone()));
            let object = catalog(spec);
            assert_clean_accept(&update(object.clone(), object, &Settings::default()));
        }
    }

    #[test]
    fn warn_legacy_warns_about_legacy_sources_naming_the_replacement() {
        for (spec, deprecated, replacement) in [
            (
                operatorhubio_spec(),
                "spec.sourceType and spec.image",
                "spec.catalogImageSource: {\"catalogImage\":\"quay.io/operatorhubio/catalog:latest\"}",
            ),
            (
                json!({"sourceType": "grpc", "image": "i:1", "grpcPodConfig": {"nodeSelector": {"a": "b"}}}),
                "spec.sourceType, spec.image and spec.grpcPodConfig",
                "spec.catalogImageSource: {\"catalogImage\":\"i:1\",\"podSpecOverrides\":{\"nodeSelector\":{\"a\":\"b\"}}}",
            ),
            (
                json!({"sourceType": "grpc", "address": "h.ns.svc:50051"}),
                "spec.sourceType and spec.address",
                "spec.catalogServiceSource: {\"address\":\"h.ns.svc:50051\"}",
            ),
            (
                json!({"sourceType": "configmap", "configMap": "m"}),
                "spec.sourceType and spec.configMap",
                "spec.configMapSource: {\"configMap\":\"m\"}",
            ),
            (
                json!({"sourceType": "internal", "configMap": "m"}),
                "spec.sourceType and spec.configMap",
                "spec.configMapSource: {\"configMap\":\"m\"}",
            ),
        ] {
            let verdict = check_with(spec, &warning());
            assert!(verdict.allowed, "{:?}", verdict.message);
            assert_eq!(verdict.mutated_object, None);
            assert_eq!(verdict.warnings.len(), 1, "{:?}", verdict.warnings);
            assert_contains_all(
                &verdict.warnings[0],
                &[
                    &format!("the deprecated {deprecated} configure this catalog"),
                    &format!("write {replacement} instead"),
                ],
            );
            assert_no_debug_output(&verdict.warnings[0]);
        }
    }

    #[test]
    fn without_allow_legacy_a_legacy_source_is_denied_with_its_replacement() {
        let message = denial(&check_with(operatorhubio_spec(), &legacy_off())).to_string();
        assert_contains_all(
            &message,
            &[
                "oneOf",
                "configures none",
                "because allowLegacy is false",
                "replace spec.image with spec.catalogImageSource.catalogImage",
            ],
        );

        let message = denial(&check_with(
            json!({"sourceType": "configmap", "configMap": "m"}),
            &legacy_off(),
        ))
        .to_string();
        assert_contains_all(
            &message,
            &["spec.configMap with spec.configMapSource.configMap"],
        );
    }

    #[test]
    fn without_allow_legacy_a_lone_deprecated_key_is_named() {
        let message = denial(&check_with(json!({"sourceType": "grpc"}), &legacy_off())).to_string();
        assert_contains_all(
            &message,
            &[
                "configures none (the deprecated spec.sourceType is not accepted here because allowLegacy is false)",
            ],
        );
    }

    #[test]
    fn without_allow_legacy_legacy_keys_beside_a_member_are_stray() {
        let message = denial(&check_with(json!({"catalogImageSource": {"catalogImage": "i"}, "sourceType": "grpc", "image": "i"}), &legacy_off())).to_string();
        assert_contains_all(
            &message,
            &[
                "spec.sourceType is deprecated and OLM ignores it",
                "spec.image is deprecated",
            ],
        );
        assert!(!message.contains("oneOf"));
    }

    // Rule 6.

    #[test]
    fn migration_rewrites_image_and_keeps_the_other_fields() {
        let verdict = check_with(operatorhubio_spec(), &migrating());
        assert_eq!(
            migrated_spec(&verdict),
            json!({
                "catalogImageSource": {"catalogImage": "quay.io/operatorhubio/catalog:latest"},
                "displayName": "Community Operators",
                "publisher": "OperatorHub.io",
                "updateStrategy": {"registryPoll": {"interval": "60m"}}
            })
        );
        assert_contains_all(
            &verdict.warnings.join("\n"),
            &["rewritten to spec.catalogImageSource"],
        );
    }

    #[test]
    fn migration_moves_grpc_pod_config_to_pod_spec_overrides() {
        let spec = json!({
            "sourceType": "grpc", "image": "quay.io/x/index:v1",
            "grpcPodConfig": {
                "nodeSelector": {"node-role.kubernetes.io/infra": ""},
                "tolerations": [{"key": "node-role.kubernetes.io/infra", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": null}],
                "priorityClassName": "system-cluster-critical",
                "affinity": null
            },
            "address": null
        });
        let verdict = check_with(spec, &migrating());
        assert_eq!(
            migrated_spec(&verdict),
            json!({"catalogImageSource": {
                "catalogImage": "quay.io/x/index:v1",
                "podSpecOverrides": {
                    "nodeSelector": {"node-role.kubernetes.io/infra": ""},
                    "tolerations": [{"key": "node-role.kubernetes.io/infra", "operator": "Exists", "effect": "NoSchedule"}],
                    "priorityClassName": "system-cluster-critical"
                }
            }})
        );
    }

    #[test]
    fn migration_rewrites_address_and_config_maps() {
        for (spec, expected) in [
            (
                json!({"sourceType": "grpc", "address": "h.ns.svc:50051"}),
                json!({"catalogServiceSource": {"address": "h.ns.svc:50051"}}),
            ),
            (
                json!({"sourceType": "configmap", "configMap": "m"}),
                json!({"configMapSource": {"configMap": "m"}}),
            ),
            (
                json!({"sourceType": "internal", "configMap": "m", "image": null}),
                json!({"configMapSource": {"configMap": "m"}}),
            ),
            (
                json!({"sourceType": "grpc", "image": "i:1", "grpcPodConfig": {"tolerations": []}}),
                json!({"catalogImageSource": {"catalogImage": "i:1"}}),
            ),
        ] {
            for settings in [migrating(), migrating_only()] {
                assert_eq!(
                    migrated_spec(&check_with(spec.clone(), &settings)),
                    expected
                );
            }
        }
    }

    #[test]
    fn migrated_objects_are_accepted_without_warning() {
        for spec in [
            operatorhubio_spec(),
            json!({"sourceType": "grpc", "image": "i:1", "grpcPodConfig": {"nodeSelector": {"a": "b"}, "tolerations": [{"operator": "Exists"}], "priorityClassName": "p"}}),
            json!({"sourceType": "grpc", "address": "h.ns.svc:50051"}),
            json!({"sourceType": "configmap", "configMap": "m"}),
            json!({"sourceType": "internal", "configMap": "m"}),
        ] {
            for settings in [migrating(), migrating_only()] {
                let verdict = check_with(spec.clone(), &settings);
                let migrated = verdict.mutated_object.clone().expect("a mutation");
                for again in [
                    Settings::default(),
                    legacy_off(),
                    migrating(),
                    migrating_only(),
                ] {
                    let request = request_for("CREATE", migrated.clone());
                    assert_clean_accept(&validate(&request, &again, &NoCluster));
                }
            }
        }
    }

    #[test]
    fn invalid_legacy_specs_are_not_migrated() {
        let mut spec = operatorhubio_spec();
        spec["address"] = json!("h:1");
        let message = denial(&check_with(spec, &migrating())).to_string();
        assert_contains_all(&message, &["spec.address is ignored"]);
    }

    #[test]
    fn grpc_pod_config_fields_the_seed_cannot_hold_stop_the_migration() {
        let spec = json!({
            "sourceType": "grpc", "image": "i:1",
            "grpcPodConfig": {"securityContextConfig": "restricted", "nodeSelector": {"a": "b"}}
        });
        let verdict = check_with(spec.clone(), &migrating());
        assert!(verdict.allowed);
        assert_eq!(verdict.mutated_object, None);
        let warnings = verdict.warnings.join("\n");
        assert_contains_all(
            &warnings,
            &[
                "this spec was not migrated: spec.grpcPodConfig.securityContextConfig has no \
                 place in spec.catalogImageSource.podSpecOverrides",
                "remove spec.grpcPodConfig.securityContextConfig to let it be migrated",
                "write spec.catalogImageSource.catalogImage: \"i:1\" instead",
            ],
        );

        let message = denial(&check_with(spec, &migrating_only())).to_string();
        assert_contains_all(
            &message,
            &[
                "allowLegacy is false, and this spec cannot be migrated: \
                 spec.grpcPodConfig.securityContextConfig has no place",
                "remove spec.grpcPodConfig.securityContextConfig and write \
                 spec.catalogImageSource.catalogImage: \"i:1\" instead",
            ],
        );
    }

    // Robustness.

    #[test]
    fn odd_json_never_panics_and_never_shows_debug_output() {
        let odd = [
            Value::Null,
            json!(true),
            json!(-1),
            json!(1.5),
            json!(""),
            json!("grpc"),
            json!([]),
            json!([null, {"a": 1}]),
            json!({}),
            json!({"catalogImage": {"x": []}}),
        ];
        let keys = [
            "sourceType",
            "image",
            "address",
            "configMap",
            "grpcPodConfig",
            "catalogImageSource",
            "catalogServiceSource",
            "configMapSource",
            "displayName",
        ];
        let settings = [
            Settings::default(),
            legacy_off(),
            warning(),
            migrating(),
            migrating_only(),
        ];
        for value in &odd {
            for key in keys {
                for base in [
                    json!({}),
                    operatorhubio_spec(),
                    json!({"catalogImageSource": {"catalogImage": "i"}}),
                ] {
                    let mut spec = base.clone();
                    spec[key] = value.clone();
                    for s in &settings {
                        let verdict = check_with(spec.clone(), s);
                        assert_no_debug_output(verdict.message.as_deref().unwrap_or_default());
                        verdict
                            .warnings
                            .iter()
                            .for_each(|w| assert_no_debug_output(w));
                    }
                }
                let nested = json!({"catalogImageSource": {"catalogImage": "i", "podSpecOverrides": {key: value}}});
                let verdict = check(nested);
                assert_no_debug_output(verdict.message.as_deref().unwrap_or_default());
            }
            let mut object = catalog(json!({}));
            object["metadata"] = value.clone();
            let _ = validate(&request_for("UPDATE", object), &migrating(), &NoCluster);
            let _ = check(value.clone());
        }
    }
}
