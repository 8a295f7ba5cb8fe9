#![doc = include_str!("../README.md")]

olm_guard_kubewarden::policy_module!(
    olm_guard_rules::og_intersection::Settings,
    olm_guard_rules::og_intersection::validate
);
