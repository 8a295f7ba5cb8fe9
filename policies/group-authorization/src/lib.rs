#![doc = include_str!("../README.md")]

olm_guard_kubewarden::policy_module!(
    olm_guard_rules::group_authorization::Settings,
    olm_guard_rules::group_authorization::validate,
    // metadata.yml's hostCapabilities; `olm-guard annotate` checks they agree.
    host_capabilities: [CanI]
);
