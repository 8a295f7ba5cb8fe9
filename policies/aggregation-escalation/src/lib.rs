#![doc = include_str!("../README.md")]
// The README is written for GitHub and Artifact Hub: the `[system:authenticated]`
// of its quoted denials is the module's output, not a rustdoc link.
#![allow(rustdoc::broken_intra_doc_links)]

olm_guard_kubewarden::policy_module!(
    olm_guard_rules::aggregation_escalation::Settings,
    olm_guard_rules::aggregation_escalation::validate,
    // metadata.yml's hostCapabilities; `olm-guard annotate` checks they agree.
    host_capabilities: [ListAll, CanI]
);
