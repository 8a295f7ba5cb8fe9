//! catalog-union, natively: a CatalogSource configures exactly one catalog
//! source (rules 1-4 of `olm_guard_rules::catalog_union`, on today's CRD and
//! on the union the enhancement proposes), a valid legacy spec is accepted
//! (rule 5, with `warnLegacy`'s warning), and an UPDATE is judged by what it
//! changes (rule 7), so that a CatalogSource stored before the policy stays
//! writable. The problems are computed for `object` and `oldObject` by the
//! same expressions, so rule 7 compares them as the module does.

use olm_guard_olm::catalog_source::{GROUP, VERSION};
use olm_guard_rules::catalog_union::Settings;
use serde_json::Value as Json;

use super::{Check, Enforcement, GenerateError, Native};
use crate::crd::{CrdRule, SchemaPatch};
use crate::model::{BoundMutation, JsonPatch, MutatingPolicySpec, Mutation, json_patch_op};
use crate::model::{BoundPolicy, MatchResources, NamedExpression, PolicySpec, Validation, named};

/// The rule's name.
pub const RULE: &str = "catalog-union";

/// Every check of the rule and where it is enforced.
pub const CHECKS: &[Check] = &[
    Check::new(
        "exactly one catalog source, in today's CRD's fields, in the CRD's schema",
        Enforcement::Schema,
        "x-kubernetes-validations on spec; it checks presence only (not an address's form, \
         empty values or grpcPodConfig), and a schema has no rule 7: an update that changes \
         the spec of a CatalogSource stored broken must fix it",
    ),
    Check::new(
        "exactly one catalog source: none or several are denied (rules 1 and 2)",
        Enforcement::Policy,
        "presence of keys in the object; the CRD patch carries the same rule for the API \
         server's schema validation",
    ),
    Check::new(
        "no deprecated key beside a union member, and a legacy spec OLM runs as written \
         (rule 3)",
        Enforcement::Policy,
        "keys and values of the object",
    ),
    Check::new(
        "the source names something: a non-empty image or ConfigMap, an address that is \
         host:port with a port in 1-65535 (rule 4)",
        Enforcement::Policy,
        "CEL's matches() with RE2 expressions equivalent to the module's address reader",
    ),
    Check::new(
        "a valid legacy spec is accepted; with warnLegacy, with a warning naming its union \
         member (rule 5)",
        Enforcement::Policy,
        "a second policy with a Warn binding",
    ),
    Check::new(
        "migrateLegacy: rewrite a legacy spec into its union member (rule 6), on a CRD with the \
         members",
        Enforcement::Mutation,
        "a MutatingAdmissionPolicy rewrites the spec before the validating policies judge it \
         (Kubernetes 1.36, or 1.34-1.35 with the v1beta1 API); with allowLegacy: false, and \
         for the module's warning that it rewrote the spec, run the module",
    ),
    Check::new(
        "an UPDATE of a CatalogSource stored broken is allowed, with a warning, when it leaves \
         the catalog configuration as it was or fixes part of it (rule 7)",
        Enforcement::Policy,
        "oldObject's problems are computed by the same expressions and compared",
    ),
];

/// The longest source field (`address`, `image`, `configMap`, `sourceType`)
/// the native policy judges: an address costs about five units of cel-go's
/// cost per character to read, and one expression may spend 1,000,000
/// (`crates/native/tests/limits.rs` measures it). Real ones are host names
/// and image references, a few hundred characters at most.
pub const MAX_SOURCE_LENGTH: usize = 100_000;

/// Rust's `char::is_whitespace` in RE2 (`\s` lacks `\v` and U+0085; `\pZ`
/// holds the Unicode spaces).
const WS: &str = "[\\\\s\\\\x{0B}\\\\x{85}\\\\pZ]";

/// The policies for `settings`.
pub fn generate(settings: &Settings, cluster: Option<&[Json]>) -> Result<Native, GenerateError> {
    if settings.migrate_legacy && !settings.allow_legacy {
        return Err(GenerateError::NotNative {
            rule: RULE,
            setting: "migrateLegacy: true with allowLegacy: false",
            reason: "a legacy spec the migration cannot rewrite is then denied, with a message \
                     the native policies do not write; run the module for it, or keep \
                     allowLegacy at its default (true) natively",
        });
    }
    let mut variables = Vec::new();
    variables.extend(problems_of("object", "n", settings));
    variables.extend(problems_of("oldObject", "o", settings));
    variables.push(named(
        "sameConfiguration",
        "variables.nConfiguration == variables.oConfiguration",
    ));
    // Rule 7: a stored object that was already broken, updated without a
    // new problem.
    variables.push(named(
        "storedBroken",
        "request.operation == 'UPDATE' && size(variables.oProblems) > 0",
    ));
    variables.push(named(
        "tolerated",
        "size(variables.nProblems) > 0 && variables.storedBroken && \
         (variables.sameConfiguration || variables.nProblems.all(p, p in variables.oProblems))",
    ));
    // Above the lengths the policy can judge within the API server's cost
    // limits, it says so instead of judging.
    let judgeable = Validation {
        expression: "size(variables.nTooLong) == 0".into(),
        message: Some(format!(
            "a catalog source field is longer than the native policy can check \
             ({MAX_SOURCE_LENGTH} characters): run olm-guard's catalog-union module"
        )),
        message_expression: Some(format!(
            "variables.nTooLong.join(', ') + ' ' + (size(variables.nTooLong) == 1 ? 'is' : \
             'are') + ' longer than the {MAX_SOURCE_LENGTH} characters this \
             ValidatingAdmissionPolicy can check within the API server\\'s CEL cost limits: run \
             olm-guard\\'s catalog-union module to judge this CatalogSource'"
        )),
        reason: Some("Invalid".into()),
    };
    let one_source = Validation {
        expression: "size(variables.nProblems) == 0 || variables.tolerated".into(),
        message: Some("spec must configure exactly one catalog source".into()),
        message_expression: Some("variables.nProblems.join('; ')".into()),
        reason: Some("Invalid".into()),
    };
    let rules = vec![crate::model::rule_for(
        GROUP,
        VERSION,
        "catalogsources",
        &["CREATE", "UPDATE"],
    )];
    let deny = BoundPolicy::new(
        "olm-guard-catalog-union",
        RULE,
        "a CatalogSource configures exactly one catalog source, as OLM runs it",
        PolicySpec::fail_closed(
            MatchResources {
                resource_rules: rules.clone(),
            },
            variables.clone(),
            vec![judgeable, one_source],
        ),
        &["Deny"],
    );
    let mut warnings = vec![Validation {
        expression: "!variables.tolerated".into(),
        message: Some("this CatalogSource already breaks catalog-union".into()),
        message_expression: Some(
            "variables.sameConfiguration ? 'this CatalogSource already breaks catalog-union and \
             this update leaves its catalog configuration as it was, so the update is allowed; \
             fix it: ' + variables.nProblems.join('; ') : 'this update fixes part of what this \
             CatalogSource breaks in catalog-union, so it is allowed; still to fix: ' + \
             variables.nProblems.join('; ')"
                .into(),
        ),
        reason: None,
    }];
    if settings.migrate_legacy {
        // The mutation has rewritten every legacy spec it could before the
        // policies see it: a legacy spec left is one it could not, which
        // the module admits with these two warnings.
        warnings.push(Validation {
            expression: "!(size(variables.nProblems) == 0 && \
                         variables.nAlternatives == ['legacy'])"
                .into(),
            message: Some("the deprecated legacy fields configure this catalog".into()),
            message_expression: Some(format!(
                "'the deprecated ' + {keys} + ' configure this catalog; write ' + \
                 variables.nReplacement + ' instead'",
                keys = join_and("variables.nLegacyKeys.map(k, 'spec.' + k)"),
            )),
            reason: None,
        });
        warnings.push(Validation {
            expression: "!(size(variables.nProblems) == 0 && \
                         variables.nAlternatives == ['legacy'] && variables.nUnportable != '')"
                .into(),
            message: Some("this spec was not migrated".into()),
            message_expression: Some(
                "'this spec was not migrated: ' + variables.nUnportableReason + '; remove ' + \
                 variables.nUnportable + ' to let it be migrated'"
                    .into(),
            ),
            reason: None,
        });
    } else if settings.warn_legacy {
        warnings.push(Validation {
            expression: "!(size(variables.nProblems) == 0 && \
                         variables.nAlternatives == ['legacy'])"
                .into(),
            message: Some("the deprecated legacy fields configure this catalog".into()),
            message_expression: Some(format!(
                "'the deprecated ' + {keys} + ' configure this catalog; write ' + \
                 {replacement} + ' instead' + (variables.nUnportable != '' ? '; but ' + \
                 variables.nUnportableReason + ', so that form would drop ' + \
                 variables.nUnportable : '')",
                keys = join_and("variables.nLegacyKeys.map(k, 'spec.' + k)"),
                replacement = "variables.nReplacement",
            )),
            reason: None,
        });
    }
    let warn = BoundPolicy::new(
        "olm-guard-catalog-union-warnings",
        RULE,
        "warns where the module allows with a warning",
        PolicySpec::fail_closed(
            MatchResources {
                resource_rules: rules,
            },
            variables,
            warnings,
        ),
        &["Warn"],
    );
    let (mutations, mutation_previews) = if settings.migrate_legacy {
        let (mutation, preview) = migration(settings);
        (vec![mutation], vec![preview])
    } else {
        (Vec::new(), Vec::new())
    };
    Ok(Native {
        rule: RULE,
        policies: vec![deny, warn],
        schema_patches: vec![schema_patch(cluster)?],
        mutations,
        mutation_previews,
        checks: CHECKS,
    })
}

/// The name of the mutating policy that migrates legacy specs.
const MIGRATION: &str = "olm-guard-catalog-union-migrate";

/// Rule 6 as a MutatingAdmissionPolicy: a legacy spec that rules 1-4
/// accept, and whose `grpcPodConfig` fits `podSpecOverrides`, is rewritten
/// into its union member, the deprecated keys removed and every other key
/// kept (the module's `migrate`); and the roll-out's preview of it, a
/// validating policy that warns where the mutation would rewrite a spec.
fn migration(settings: &Settings) -> (BoundMutation, BoundPolicy) {
    let rules = vec![crate::model::rule_for(
        GROUP,
        VERSION,
        "catalogsources",
        &["CREATE", "UPDATE"],
    )];
    // A legacy spec and no member: the shape of every spec the module
    // rewrites. Match conditions cannot read variables, so whether rules
    // 1-4 accept it is decided in the patch (below), which then writes
    // no operation; those specs are denied by the validating policies.
    let conditions = vec![named(
        "legacy-spec",
        "has(object.spec) && has(object.spec.sourceType) && (has(object.spec.image) || \
         has(object.spec.address) || has(object.spec.configMap)) && \
         !has(object.spec.catalogImageSource) && !has(object.spec.catalogServiceSource) && \
         !has(object.spec.configMapSource)",
    )];
    let mut variables = problems_of("object", "n", settings);
    variables.push(named(
        "migrate",
        "size(variables.nTooLong) == 0 && size(variables.nProblems) == 0 && \
         variables.nAlternatives == ['legacy'] && variables.nUnportable == ''",
    ));
    let spec = "object.spec";
    let gpc = format!("{spec}.grpcPodConfig");
    let overrides = "'/spec/catalogImageSource/podSpecOverrides'";
    let field = |name: &str, non_empty: &str| {
        format!(
            "(has({gpc}) && has({gpc}.{name}) && {non_empty} ? [{}] : [])",
            json_patch_op(
                "add",
                &format!("{overrides} + '/{name}'"),
                Some(&format!("{gpc}.{name}"))
            ),
        )
    };
    let node_selector = field("nodeSelector", &format!("size({gpc}.nodeSelector) > 0"));
    let tolerations = field("tolerations", &format!("size({gpc}.tolerations) > 0"));
    let priority = field(
        "priorityClassName",
        &format!("{gpc}.priorityClassName != ''"),
    );
    let image_source = format!(
        "[{}] + ({node_selector} + {tolerations} + {priority} == [] ? [] : [{}] + \
         {node_selector} + {tolerations} + {priority})",
        json_patch_op(
            "add",
            "'/spec/catalogImageSource'",
            Some(&format!("{{'catalogImage': string({spec}.image)}}"))
        ),
        json_patch_op("add", overrides, Some("{}")),
    );
    let removed = format!(
        "['sourceType', 'image', 'address', 'configMap', 'grpcPodConfig'].filter(k, k in \
         {spec}).map(k, {})",
        json_patch_op("remove", "'/spec/' + k", None)
    );
    let patch = format!(
        "!variables.migrate ? [] : {removed} + (has({spec}.image) ? {image_source} : \
         {spec}.sourceType == 'grpc' ? [{service}] : [{config_map}])",
        service = json_patch_op(
            "add",
            "'/spec/catalogServiceSource'",
            Some(&format!("{{'address': string({spec}.address)}}"))
        ),
        config_map = json_patch_op(
            "add",
            "'/spec/configMapSource'",
            Some(&format!("{{'configMap': string({spec}.configMap)}}"))
        ),
    );
    let mutation = BoundMutation::new(
        MIGRATION,
        RULE,
        "migrateLegacy: a legacy spec rewritten into its union member",
        MutatingPolicySpec {
            // A rewrite that cannot be applied fails the write with its
            // error rather than leaving the legacy spec in place unsaid.
            failure_policy: "Fail".into(),
            match_constraints: MatchResources {
                resource_rules: rules.clone(),
            },
            match_conditions: conditions.clone(),
            variables: variables.clone(),
            mutations: vec![Mutation {
                patch_type: "JSONPatch".into(),
                json_patch: JsonPatch { expression: patch },
            }],
            // Idempotent: a rewritten spec has no legacy key left.
            reinvocation_policy: "IfNeeded".into(),
        },
    );
    let preview = BoundPolicy::new(
        &format!("{MIGRATION}-preview"),
        RULE,
        "roll-out preview of migrateLegacy: warns where the mutation would rewrite a spec",
        PolicySpec {
            match_conditions: conditions,
            ..PolicySpec::fail_closed(
                MatchResources {
                    resource_rules: rules,
                },
                variables,
                vec![Validation {
                    expression: "!variables.migrate".into(),
                    message: Some(format!(
                        "MutatingAdmissionPolicy {MIGRATION} would rewrite this spec"
                    )),
                    message_expression: Some(format!(
                        "'MutatingAdmissionPolicy {MIGRATION} would rewrite the deprecated ' + \
                         {keys} + ' to ' + variables.nReplacement",
                        keys = join_and("variables.nLegacyKeys.map(k, 'spec.' + k)"),
                    )),
                    reason: None,
                }],
            )
        },
        &["Warn", "Audit"],
    );
    (mutation, preview)
}

/// The one-source rule in the CatalogSource CRD of today (operator-framework
/// api `crds/operators.coreos.com_catalogsources.yaml`: one version,
/// v1alpha1, `sourceType` required, no union members, no rules of its own),
/// with messages that name the fields rather than the proposal's `oneOf`.
fn schema_patch(cluster: Option<&[Json]>) -> Result<SchemaPatch, GenerateError> {
    let one_source = CrdRule {
        path: "spec",
        // The schema already requires sourceType; without it (a CRD with the
        // union members) the rule has nothing to say.
        rule: "!has(self.sourceType) || (self.sourceType == 'grpc' ? has(self.image) != \
               has(self.address) && !has(self.configMap) : (self.sourceType == 'configmap' || \
               self.sourceType == 'internal') && has(self.configMap) && !has(self.image) && \
               !has(self.address))"
            .into(),
        message: format!(
            "spec must configure exactly one catalog source: set {HOW_TO_CONFIGURE_LEGACY}"
        ),
        message_expression: Some(format!(
            "self.sourceType == 'grpc' ? (has(self.image) && has(self.address) ? 'spec.address \
             is ignored because spec.image is set (OLM runs the image): remove one of them' : \
             has(self.configMap) ? 'spec.configMap is ignored with spec.sourceType \"grpc\": \
             remove it' : 'spec.sourceType \"grpc\" needs spec.image (an operator-registry \
             image) or spec.address (host:port of a running registry)') : self.sourceType == \
             'configmap' || self.sourceType == 'internal' ? (has(self.image) || \
             has(self.address) ? 'spec.image and spec.address are ignored with spec.sourceType \
             \"' + self.sourceType + '\": remove them' : 'spec.sourceType \"' + \
             self.sourceType + '\" needs spec.configMap (the name of the ConfigMap that holds \
             the catalog)') : 'spec.sourceType \"' + self.sourceType + '\" is not a source \
             type OLM knows: set {HOW_TO_CONFIGURE_LEGACY}'"
        )),
    };
    let crd = crate::crd::find(CRD, cluster).map_err(|problem| GenerateError::Crd {
        rule: RULE,
        problem,
    })?;
    let patch = crd
        .add_rules(&["spec"], std::slice::from_ref(&one_source))
        .map_err(|problem| GenerateError::Crd {
            rule: RULE,
            problem,
        })?;
    Ok(SchemaPatch {
        crd: CRD.into(),
        file: format!("{RULE}.crd-patch.json"),
        step: format!(
            "written against {}; rules the CRD has are kept (appended to)",
            crd.source
        ),
        patch: Json::Array(patch),
        rules: vec![one_source],
    })
}

/// The CatalogSource CRD's name.
const CRD: &str = "catalogsources.operators.coreos.com";

/// `items` (a CEL list of distinct strings) as "a", "a and b", "a, b and c".
fn join_and(items: &str) -> String {
    format!(
        "(size({items}) == 0 ? '' : size({items}) == 1 ? {items}[0] : \
         {items}.filter(x, x != {items}[size({items}) - 1]).join(', ') + ' and ' + \
         {items}[size({items}) - 1])"
    )
}

/// The variables computing the problems of `object` (a request variable)
/// under the prefix `p`: `{p}Spec`, `{p}Problems`, ... What reaches
/// admission is typed by the CRD's schema (sourceType required, the source
/// fields strings), so nothing here guards a type. On the CRD clusters run
/// today the union members do not exist (the API server prunes them), so
/// they are written only under the settings that name them (`warnLegacy`,
/// `allowLegacy: false`), for a CRD that has them.
fn problems_of(object: &str, p: &str, settings: &Settings) -> Vec<NamedExpression> {
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

/// The variables only a CRD with the union members needs: its members, and
/// what rule 5's warning and the stray keys' advice name.
fn union_variables(s: &str, p: &str) -> Vec<NamedExpression> {
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
fn stray(p: &str) -> String {
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
fn member_problem(s: &str, p: &str) -> String {
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
fn several(p: &str) -> String {
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
fn none_found_why(s: &str, p: &str, legacy_counts: bool) -> Vec<NamedExpression> {
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
fn none_found(p: &str, how: &str) -> String {
    let why = format!("variables.{p}NoneWhy");
    format!(
        "'spec must configure exactly one catalog source (oneOf) but configures none' + \
         (size({why}) == 0 ? '' : ' (' + {why}.join('; ') + ')') + '; ' + {how}"
    )
}

/// The module's reason an address is not host:port (OLM dials it like Go's
/// `net.SplitHostPort` and needs a numeric port), or `''`.
fn address_why(value: &str) -> String {
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

const HOW_TO_CONFIGURE: &str = "spec.catalogImageSource.catalogImage (an operator-registry \
     image), spec.catalogServiceSource.address (host:port of a running registry) or \
     spec.configMapSource.configMap (the name of a ConfigMap)";

const HOW_TO_CONFIGURE_LEGACY: &str = "spec.sourceType: grpc with spec.image (an \
     operator-registry image) or spec.address (host:port of a running registry), or \
     spec.sourceType: configmap with spec.configMap (the name of a ConfigMap)";
