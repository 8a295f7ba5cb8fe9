//! Rule 6, `migrateLegacy`, as a MutatingAdmissionPolicy, and its preview
//! for the roll-out.

use olm_guard_olm::catalog_source::{GROUP, VERSION};
use olm_guard_rules::catalog_union::Settings;

use super::problems::problems_of;
use super::{RULE, join_and};
use crate::model::{BoundMutation, JsonPatch, MutatingPolicySpec, Mutation, json_patch_op};
use crate::model::{BoundPolicy, MatchResources, PolicySpec, Validation, named};

/// The name of the mutating policy that migrates legacy specs.
const MIGRATION: &str = "olm-guard-catalog-union-migrate";

/// Rule 6 as a MutatingAdmissionPolicy: a legacy spec that rules 1-4
/// accept, and whose `grpcPodConfig` fits `podSpecOverrides`, is rewritten
/// into its union member, the deprecated keys removed and every other key
/// kept (the module's `migrate`); and the roll-out's preview of it, a
/// validating policy that warns where the mutation would rewrite a spec.
pub(super) fn migration(settings: &Settings) -> (BoundMutation, BoundPolicy) {
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
