//! What only a CatalogSource CRD with the union members (the enhancement's
//! `catalogImageSource`, `catalogServiceSource`, `configMapSource`) needs:
//! its members, the deprecated keys beside one, and the words of rule 2
//! under the union terms.

use super::{WS, join_and};
use crate::model::{NamedExpression, named};

/// The variables only a CRD with the union members needs: its members, and
/// what rule 5's warning and the stray keys' advice name.
pub(super) fn union_variables(s: &str, p: &str) -> Vec<NamedExpression> {
    let v = |name: &str| format!("variables.{p}{name}");
    let present = |key: &str| format!("has({s}.{key})");
    let string_of = |key: &str| format!("({present} ? {s}.{key} : '')", present = present(key));
    let source_type = string_of("sourceType");
    vec![
        named(
            &format!("{p}Deprecated"),
            &format!(
                "['sourceType', 'image', 'address', 'configMap', 'grpcPodConfig'].filter(k, k in \
                 {s})"
            ),
        ),
        named(
            &format!("{p}Members"),
            &format!(
                "['catalogImageSource', 'catalogServiceSource', 'configMapSource'].filter(k, k in \
                 {s})"
            ),
        ),
        // grpcPodConfig's fields that podSpecOverrides cannot hold.
        named(
            &format!("{p}UnportableFields"),
            &format!(
                "!{gpc} ? [] : ['affinity', 'securityContextConfig', 'extractContent', \
                 'memoryTarget'].filter(f, f in {s}.grpcPodConfig).map(f, \
                 'spec.grpcPodConfig.' + f)",
                gpc = present("grpcPodConfig"),
            ),
        ),
        named(&format!("{p}Unportable"), &join_and(&v("UnportableFields"))),
        named(
            &format!("{p}UnportableReason"),
            &format!(
                "{} + ' has no place in spec.catalogImageSource.podSpecOverrides, which holds \
                 only nodeSelector, tolerations and priorityClassName'",
                v("Unportable")
            ),
        ),
        // The legacy source's keys and its union member, for rule 5's warning.
        named(
            &format!("{p}LegacyKeys"),
            &format!(
                "{image} ? (['sourceType', 'image'] + ({gpc} ? ['grpcPodConfig'] : [])) : \
                 {source_type} == 'grpc' ? ['sourceType', 'address'] : ['sourceType', \
                 'configMap']",
                image = present("image"),
                gpc = present("grpcPodConfig"),
            ),
        ),
        named(
            &format!("{p}Replacement"),
            &format!(
                "{image} && !{gpc} ? 'spec.catalogImageSource: {{\"catalogImage\":\"' + {img} + \
                 '\"}}' : {image} ? 'spec.catalogImageSource.catalogImage: \"' + {img} + '\"' : \
                 {source_type} == 'grpc' ? 'spec.catalogServiceSource: {{\"address\":\"' + \
                 {addr} + '\"}}' : 'spec.configMapSource: {{\"configMap\":\"' + {cm} + '\"}}'",
                image = present("image"),
                gpc = present("grpcPodConfig"),
                img = string_of("image"),
                addr = string_of("address"),
                cm = string_of("configMap"),
            ),
        ),
    ]
}

/// Rule 3 beside a member: each deprecated key is a problem.
pub(super) fn stray(p: &str) -> String {
    let v = |name: &str| format!("variables.{p}{name}");
    let replacement_of = "{'image': 'spec.catalogImageSource.catalogImage', 'address': \
                          'spec.catalogServiceSource.address', 'configMap': \
                          'spec.configMapSource.configMap', 'grpcPodConfig': \
                          'spec.catalogImageSource.podSpecOverrides', 'sourceType': 'the member \
                          key itself (catalogImageSource, catalogServiceSource or \
                          configMapSource)'}";
    format!(
        "{dep}.map(k, 'spec.' + k + ' is deprecated and OLM ignores it beside spec.' + \
         {members}[0] + ': remove it' + (k == 'sourceType' ? '' : k == 'grpcPodConfig' && \
         {unportable} != '' ? ' (its replacement is ' + {replacement_of}[k] + ', but ' + \
         {reason} + ')' : ' (its replacement is ' + {replacement_of}[k] + ')'))",
        dep = v("Deprecated"),
        members = v("Members"),
        unportable = v("Unportable"),
        reason = v("UnportableReason"),
    )
}

/// Rule 4 for the one member.
pub(super) fn member_problem(s: &str, p: &str) -> String {
    let members = format!("variables.{p}Members");
    let empty = |value: &str| format!("{value}.matches('^{WS}*$')");
    let address = format!("{s}.catalogServiceSource.address");
    let why = format!("variables.{p}MemberAddressWhy");
    format!(
        "({members}[0] == 'catalogImageSource' ? (!has({s}.catalogImageSource.catalogImage) ? \
         ['spec.catalogImageSource.catalogImage is missing: name the operator-registry image to \
         serve, e.g. quay.io/operatorhubio/catalog:latest'] : {img_empty} ? \
         ['spec.catalogImageSource.catalogImage is empty: name the operator-registry image to \
         serve, e.g. quay.io/operatorhubio/catalog:latest'] : []) : {members}[0] == \
         'catalogServiceSource' ? (!has({s}.catalogServiceSource.address) ? \
         ['spec.catalogServiceSource.address is missing: write the host:port of the running \
         registry, e.g. my-registry.my-namespace.svc:50051'] : {addr_empty} ? \
         ['spec.catalogServiceSource.address is empty: write the host:port of the running \
         registry, e.g. my-registry.my-namespace.svc:50051'] : {why} == '' ? [] : \
         ['spec.catalogServiceSource.address \"' + {address} + '\" is not host:port (' + {why} + \
         '); write it as e.g. my-registry.my-namespace.svc:50051']) : \
         (!has({s}.configMapSource.configMap) ? ['spec.configMapSource.configMap is missing: \
         name the ConfigMap in this namespace that holds the catalog'] : {cm_empty} ? \
         ['spec.configMapSource.configMap is empty: name the ConfigMap in this namespace that \
         holds the catalog'] : []))",
        img_empty = empty(&format!("{s}.catalogImageSource.catalogImage")),
        addr_empty = empty(&address),
        cm_empty = empty(&format!("{s}.configMapSource.configMap")),
    )
}

/// Rule 2, too many.
pub(super) fn several(p: &str) -> String {
    let v = |name: &str| format!("variables.{p}{name}");
    let alts = v("Alternatives");
    format!(
        "['spec must configure exactly one catalog source (oneOf) but configures ' + \
         string(size({alts})) + ': ' + {names} + '; ' + ('legacy' in {alts} ? 'keep one of \
         them; to keep a union member, remove the deprecated ' + {deprecated} : 'keep one of \
         them and remove the others')]",
        names = join_and(&v("AlternativeNames")),
        deprecated = join_and(&v("DeprecatedFields")),
    )
}

/// Rule 2, none found, on a CRD with the union members: why the keys that
/// are there do not count.
/// Why a spec under the union terms configures no source: the reasons
/// the denial puts in parentheses (`{p}NoneWhy`), after the lists it words
/// (each named once, since [`join_and`] reads its list six times).
pub(super) fn none_found_why(s: &str, p: &str, legacy_counts: bool) -> Vec<NamedExpression> {
    let v = |name: &str| format!("variables.{p}{name}");
    let deprecated = v("Deprecated");
    let sources = format!("{deprecated}.filter(k, k != 'grpcPodConfig')");
    let replacement_of = "{'image': 'spec.catalogImageSource.catalogImage', 'address': \
                          'spec.catalogServiceSource.address', 'configMap': \
                          'spec.configMapSource.configMap', 'grpcPodConfig': \
                          'spec.catalogImageSource.podSpecOverrides'}";
    let lists = vec![
        named(
            &format!("{p}DeprecatedFields"),
            &format!("{deprecated}.map(k, 'spec.' + k)"),
        ),
        named(
            &format!("{p}DeprecatedReplacements"),
            &format!(
                "{deprecated}.filter(k, k != 'sourceType').map(k, 'spec.' + k + ' with ' + \
                 {replacement_of}[k] + (k == 'grpcPodConfig' && {} != '' ? ' (' + {} + ')' : \
                 ''))",
                v("Unportable"),
                v("UnportableReason"),
            ),
        ),
        named(&format!("{p}Sources"), &sources),
        named(
            &format!("{p}SourceFields"),
            &format!("{}.map(k, 'spec.' + k)", v("Sources")),
        ),
        named(
            &format!("{p}SourceReplacements"),
            &format!("{}.map(k, {replacement_of}[k])", v("Sources")),
        ),
        named(
            &format!("{p}AlternativeNames"),
            &format!(
                "{}.map(a, a == 'legacy' ? 'the legacy ' + {} : 'spec.' + a)",
                v("Alternatives"),
                join_and(&v("SourceFields")),
            ),
        ),
    ];
    let not_accepted = format!(
        "['the deprecated ' + {fields} + (size({deprecated}) == 1 ? ' is' : ' are') + ' not \
         accepted here because allowLegacy is false' + (size({replacements}) == 0 ? '' : '; \
         replace ' + {joined})]",
        fields = join_and(&v("DeprecatedFields")),
        replacements = v("DeprecatedReplacements"),
        joined = join_and(&v("DeprecatedReplacements")),
    );
    let without_type = format!(
        "(size({sources}) == 0 ? [] : ['the deprecated ' + {fields} + ' ' + (size({sources}) \
         == 1 ? 'has' : 'have') + ' no spec.sourceType, so no legacy source is configured; \
         rather than adding one, write ' + {replacements} + ' instead']) + (!('grpcPodConfig' in \
         {s} && {s}.grpcPodConfig != null) ? [] : ['the deprecated spec.grpcPodConfig only tunes \
         a registry pod and names no catalog; its replacement \
         spec.catalogImageSource.podSpecOverrides goes beside \
         spec.catalogImageSource.catalogImage' + ({unportable} != '' ? ', but ' + {reason} : \
         '')])",
        sources = v("Sources"),
        fields = join_and(&v("SourceFields")),
        replacements = join_and(&v("SourceReplacements")),
        unportable = v("Unportable"),
        reason = v("UnportableReason"),
    );
    let source_type_alone = format!(
        "['spec.sourceType \"' + string({s}.sourceType) + '\" alone names no catalog: legacy \
         sources also need spec.image, spec.address or spec.configMap']"
    );
    let mut out = lists;
    out.push(named(
        &format!("{p}NoneWhy"),
        &format!(
            "(size({deprecated}) > 0 && !{legacy_counts} ? {not_accepted} : !('sourceType' in {s} \
             && {s}.sourceType != null) && size({deprecated}) > 0 ? {without_type} : \
             'sourceType' in {s} && {s}.sourceType != null ? {source_type_alone} : [])"
        ),
    ));
    out
}

/// Rule 2's denial for a spec under the union terms that configures no
/// source, with its reasons (`{p}NoneWhy`) and the way to fix it (`how`).
pub(super) fn none_found(p: &str, how: &str) -> String {
    let why = format!("variables.{p}NoneWhy");
    format!(
        "'spec must configure exactly one catalog source (oneOf) but configures none' + \
         (size({why}) == 0 ? '' : ' (' + {why}.join('; ') + ')') + '; ' + {how}"
    )
}
