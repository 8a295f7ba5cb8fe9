#![doc = include_str!("../README.md")]

olm_guard_kubewarden::policy_module!(
    olm_guard_rules::scope_rbac::Settings,
    olm_guard_rules::scope_rbac::validate,
    // metadata.yml's hostCapabilities; `olm-guard annotate` checks they agree.
    host_capabilities: [Get, ListAll, CanI]
);
