#![doc = include_str!("../README.md")]

olm_guard_kubewarden::policy_module!(
    olm_guard_rules::aggregation_escalation::Settings,
    olm_guard_rules::aggregation_escalation::validate
);
