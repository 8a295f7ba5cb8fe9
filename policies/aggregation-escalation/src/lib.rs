#![doc = include_str!("../README.md")]

olm_guard_kubewarden::policy_module!(
    olm_guard_rules::aggregation_escalation::Settings,
    olm_guard_rules::aggregation_escalation::validate,
    // metadata.yml's hostCapabilities; `olm-guard annotate` checks they agree.
    host_capabilities: [ListAll, CanI]
);
