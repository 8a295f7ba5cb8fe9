#![doc = include_str!("../README.md")]

olm_guard_kubewarden::policy_module!(
    olm_guard_rules::revision_uniqueness::Settings,
    olm_guard_rules::revision_uniqueness::validate
);
