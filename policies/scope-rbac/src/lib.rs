#![doc = include_str!("../README.md")]

olm_guard_kubewarden::policy_module!(
    olm_guard_rules::scope_rbac::Settings,
    olm_guard_rules::scope_rbac::validate
);
