//! The variables that find what is wrong with a CatalogSource's spec
//! (rules 1-4), for `object` and `oldObject` alike, and the module's words
//! for it.

use olm_guard_rules::catalog_union::Settings;

use super::union::{member_problem, none_found, none_found_why, several, stray, union_variables};
use super::{MAX_SOURCE_LENGTH, WS};
use crate::model::{NamedExpression, named};

/// The variables computing the problems of `object` (a request variable)
/// under the prefix `p`: `{p}Spec`, `{p}Problems`, ... What reaches
/// admission is typed by the CRD's schema (sourceType required, the source
/// fields strings), so nothing here guards a type. On the CRD clusters run
/// today the union members do not exist (the API server prunes them), so
/// they are written only under the settings that name them (`warnLegacy`,
/// `allowLegacy: false`), for a CRD that has them.
pub(super) fn problems_of(object: &str, p: &str, settings: &Settings) -> Vec<NamedExpression> {
    let legacy_counts = settings.allow_legacy || settings.migrate_legacy;
    let union = settings.warn_legacy || settings.migrate_legacy || !settings.allow_legacy;
    let s = format!("variables.{p}Spec");
    let v = |name: &str| format!("variables.{p}{name}");
    let present = |key: &str| format!("has({s}.{key})");
    let string_of = |key: &str| format!("({present} ? {s}.{key} : '')", present = present(key));
    let empty = |value: &str| format!("{value}.matches('^{WS}*$')");
    // `why` names the variable holding address_why(value): computed once,
    // where the expression needs it, rather than written out twice.
    let address_problem = |field: &str, key_present: &str, value: &str, why: &str| {
        format!(
            "(!{key_present} ? ['{field} is missing: write the host:port of the running \
             registry, e.g. my-registry.my-namespace.svc:50051'] : {empty_value} ? ['{field} is \
             empty: write the host:port of the running registry, e.g. \
             my-registry.my-namespace.svc:50051'] : {why} == '' ? [] : ['{field} \"' + {value} + \
             '\" is not host:port (' + {why} + '); write it as e.g. \
             my-registry.my-namespace.svc:50051'])",
            empty_value = empty(value),
        )
    };
    let how = if union {
        format!("'set exactly one of {HOW_TO_CONFIGURE}'")
    } else {
        format!("'set {HOW_TO_CONFIGURE_LEGACY}'")
    };
    let source_type = string_of("sourceType");
    let legacy_keys = if union {
        "['sourceType', 'image', 'address', 'configMap', 'grpcPodConfig', 'catalogImageSource', \
         'catalogServiceSource', 'configMapSource']"
    } else {
        "['sourceType', 'image', 'address', 'configMap', 'grpcPodConfig']"
    };
    let mut out = vec![
        named(
            &format!("{p}Spec"),
            &format!("{object} != null && has({object}.spec) ? {object}.spec : {{}}"),
        ),
        // The catalog configuration (rule 7): its keys, null when absent.
        named(
            &format!("{p}Configuration"),
            &format!("{legacy_keys}.map(k, k in {s} ? {s}[k] : null)"),
        ),
    ];
    if union {
        out.extend(union_variables(&s, p));
    }
    out.push(named(
        &format!("{p}Alternatives"),
        &format!(
            "{members}({legacy_counts} && {} && ({} || {} || {}) ? ['legacy'] : [])",
            present("sourceType"),
            present("image"),
            present("address"),
            present("configMap"),
            members = if union {
                format!("{} + ", v("Members"))
            } else {
                String::new()
            },
        ),
    ));

    // Rule 3 and 4 for a legacy spec.
    let pod_config_without_image = "'spec.grpcPodConfig is only used with spec.sourceType \
                                    \"grpc\" and spec.image, which this spec does not set: \
                                    remove it'";
    let grpc_alone = if union {
        "'spec.sourceType \"grpc\" needs spec.image or spec.address; better, write \
         spec.catalogImageSource.catalogImage or spec.catalogServiceSource.address'"
    } else {
        "'spec.sourceType \"grpc\" needs spec.image (an operator-registry image) or \
         spec.address (host:port of a running registry)'"
    };
    let grpc = format!(
        "({cm} ? ['spec.configMap is ignored with spec.sourceType \"grpc\": remove it, or set \
         spec.sourceType \"configmap\" if the catalog is in that ConfigMap'] : []) + ({image} ? \
         (({address} ? ['spec.address is ignored because spec.image is set (OLM runs the image): \
         remove spec.address, or remove spec.image to use the running registry'] : []) + \
         ({image_empty} ? ['spec.image is empty: name the operator-registry image to serve'] : \
         [])) : {address} ? (({gpc} ? [{pod_config_without_image}] : []) + {address_problem}) : \
         [{grpc_alone}])",
        cm = present("configMap"),
        image = present("image"),
        address = present("address"),
        gpc = present("grpcPodConfig"),
        image_empty = empty(&string_of("image")),
        address_problem = address_problem(
            "spec.address",
            "true",
            &string_of("address"),
            &v("AddressWhy")
        ),
    );
    // What is wrong with spec.address ('' when nothing), evaluated only
    // where a problem list reads it.
    out.push(named(
        &format!("{p}AddressWhy"),
        &address_why(&string_of("address")),
    ));
    if union {
        out.push(named(
            &format!("{p}MemberAddressWhy"),
            &format!(
                "has({s}.catalogServiceSource) && has({s}.catalogServiceSource.address) ? {} : ''",
                address_why(&format!("{s}.catalogServiceSource.address"))
            ),
        ));
    }
    let configmap_alone = if union {
        format!(
            "'spec.sourceType \"' + {source_type} + '\" needs spec.configMap; better, write \
             spec.configMapSource.configMap'"
        )
    } else {
        format!(
            "'spec.sourceType \"' + {source_type} + '\" needs spec.configMap (the name of the \
             ConfigMap that holds the catalog)'"
        )
    };
    let configmap = format!(
        "({image} ? ['spec.image is ignored with spec.sourceType \"' + {source_type} + '\": \
         remove it, or set spec.sourceType \"grpc\" if the catalog comes from it'] : []) + \
         ({address} ? ['spec.address is ignored with spec.sourceType \"' + {source_type} + '\": \
         remove it, or set spec.sourceType \"grpc\" if the catalog comes from it'] : []) + \
         ({gpc} ? [{pod_config_without_image}] : []) + (!{cm} ? [{configmap_alone}] : \
         {cm_empty} ? ['spec.configMap is empty: name the ConfigMap that holds the catalog'] : \
         [])",
        cm = present("configMap"),
        image = present("image"),
        address = present("address"),
        gpc = present("grpcPodConfig"),
        cm_empty = empty(&string_of("configMap")),
    );
    let hint = |name: &str| format!("{source_type}.matches('(?i)^{WS}*{name}{WS}*$')");
    let fix_source_type = if union {
        format!("better, drop the deprecated spec.sourceType and set one of {HOW_TO_CONFIGURE}")
    } else {
        format!("set {HOW_TO_CONFIGURE_LEGACY}")
    };
    let unknown_source_type = format!(
        "['spec.sourceType \"' + {source_type} + '\" is not a source type OLM knows' + ({grpc} \
         ? ' (did you mean \"grpc\"?)' : {configmap} ? ' (did you mean \"configmap\"?)' : \
         {internal} ? ' (did you mean \"internal\"?)' : '') + ': OLM accepts only \"grpc\", \
         \"configmap\", \"internal\"; {fix_source_type}']",
        grpc = hint("grpc"),
        configmap = hint("configmap"),
        internal = hint("internal"),
    );
    let legacy = format!(
        "({source_type} == 'grpc' ? {grpc} : {source_type} == 'configmap' || {source_type} == \
         'internal' ? {configmap} : {unknown_source_type})"
    );
    if union {
        out.extend(none_found_why(&s, p, legacy_counts));
    }
    out.push(named(
        &format!("{p}NoneFound"),
        &if union {
            none_found(p, &how)
        } else {
            // The CRD requires sourceType, so with no source beside it the
            // type alone is what is there; but an UPDATE of an object stored
            // without one passes the schema (a required field left missing
            // is ratcheted), and then there is nothing to name.
            format!(
                "'spec must configure exactly one catalog source but configures none' + \
                 ({has_source_type} ? ' (spec.sourceType \"' + {source_type} + '\" alone names \
                 no catalog: legacy sources also need spec.image, spec.address or \
                 spec.configMap)' : '') + '; ' + {how}",
                has_source_type = present("sourceType"),
            )
        },
    ));
    // The source fields' lengths bound the cost of judging them (the
    // address's form is read with regular expressions, about five units of
    // cost per character).
    let mut fields: Vec<String> = ["sourceType", "image", "address", "configMap"]
        .iter()
        .map(|f| format!("{s}.{f}"))
        .collect();
    if union {
        fields.extend([
            format!("{s}.catalogImageSource.catalogImage"),
            format!("{s}.catalogServiceSource.address"),
            format!("{s}.configMapSource.configMap"),
        ]);
    }
    out.push(named(
        &format!("{p}TooLong"),
        &fields
            .iter()
            .map(|f| {
                let (parent, _) = f.rsplit_once('.').unwrap_or(("", f));
                let present = if parent == s {
                    format!("has({f})")
                } else {
                    format!("has({parent}) && has({f})")
                };
                let name = f.replacen(&s, "spec", 1);
                format!("({present} && size({f}) > {MAX_SOURCE_LENGTH} ? ['{name}'] : [])")
            })
            .collect::<Vec<_>>()
            .join(" + "),
    ));
    let alts = v("Alternatives");
    let none = v("NoneFound");
    let too_long = v("TooLong");
    out.push(named(
        &format!("{p}Problems"),
        &if union {
            format!(
                "size({too_long}) > 0 ? [] : size({alts}) == 0 ? [{none}] : size({alts}) > 1 ? \
                 {several} : {alts}[0] == 'legacy' ? {legacy} : {stray} + {member_problem}",
                several = several(p),
                stray = stray(p),
                member_problem = member_problem(&s, p),
            )
        } else {
            format!("size({too_long}) > 0 ? [] : size({alts}) == 0 ? [{none}] : {legacy}")
        },
    ));
    out
}

/// The module's reason an address is not host:port (OLM dials it like Go's
/// `net.SplitHostPort` and needs a numeric port), or `''`.
pub(super) fn address_why(value: &str) -> String {
    let port = "(0*([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|\
                6553[0-5]))";
    format!(
        "({value}.contains('://') ? 'it starts with a scheme; write only host:port' : \
         {value}.startsWith('[') ? (!{value}.contains(']') ? 'the IPv6 host has no closing \
         bracket' : !{value}.matches('^\\\\[[^\\\\]]*\\\\]:') ? 'the port after the IPv6 host is \
         missing' : {value}.matches('^\\\\[\\\\]:') ? 'the host before the colon is empty' : \
         {value}.matches('^\\\\[[^\\\\]]*({WS}|/)[^\\\\]]*\\\\]:') ? 'the host contains a space or \
         /, which a host name or IP cannot' : {value}.matches('^\\\\[[^\\\\]]*\\\\]:$') ? 'the \
         port after the colon is empty' : !{value}.matches('^\\\\[[^\\\\]]*\\\\]:[0-9]+$') ? 'the \
         port is not a number' : !{value}.matches('^\\\\[[^\\\\]]*\\\\]:{port}$') ? 'the port is \
         outside 1-65535' : '') : !{value}.contains(':') ? 'the port is missing' : \
         {value}.matches(':.*:') ? 'an IPv6 host must be written in brackets, e.g. \
         [fd00::1]:50051' : {value}.startsWith(':') ? 'the host before the colon is empty' : \
         {value}.matches('^[^:]*({WS}|/)[^:]*:') ? 'the host contains a space or /, which a host \
         name or IP cannot' : {value}.endsWith(':') ? 'the port after the colon is empty' : \
         !{value}.matches(':[0-9]+$') ? 'the port is not a number' : \
         !{value}.matches(':{port}$') ? 'the port is outside 1-65535' : '')"
    )
}

pub(super) const HOW_TO_CONFIGURE: &str = "spec.catalogImageSource.catalogImage (an operator-registry \
     image), spec.catalogServiceSource.address (host:port of a running registry) or \
     spec.configMapSource.configMap (the name of a ConfigMap)";

pub(super) const HOW_TO_CONFIGURE_LEGACY: &str = "spec.sourceType: grpc with spec.image (an \
     operator-registry image) or spec.address (host:port of a running registry), or \
     spec.sourceType: configmap with spec.configMap (the name of a ConfigMap)";
