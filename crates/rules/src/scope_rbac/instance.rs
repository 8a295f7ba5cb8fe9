//! ScopeInstance rules 1 to 3: its fields, its template, and whether its
//! author may bind each of the template's ClusterRoles in each target.

use olm_guard_core::protocol::ResourceAttributes;
use olm_guard_core::{AdmissionRequest, Cluster, ClusterExt, UserInfo, Verdict};
use olm_guard_olm::scope::{self, ScopeInstance, ScopeTemplate};
use olm_guard_rbac::{PolicyRule, RBAC_GROUP, SYSTEM_MASTERS};

use super::Settings;
use super::lookup::{find_template, rbac_lookup, rules_held};
use super::messages::{rules_text, where_text};
use crate::common::{display_name, read_or_bad_request};

pub(super) fn validate_instance(
    request: &AdmissionRequest,
    group: &str,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> Verdict {
    let read = ScopeInstance::from_object(&request.object);
    let instance = match read_or_bad_request(read, |e| {
        format!("ScopeInstance \"{}\" cannot be read: {e}", request.name)
    }) {
        Ok(instance) => instance,
        Err(verdict) => return verdict,
    };
    let name = display_name(&instance.metadata, request);
    // Rule 1: the instance's own fields.
    let template_name = &instance.spec.scope_template_name;
    if template_name.is_empty() {
        return Verdict::deny(format!(
            "ScopeInstance \"{name}\": spec.scopeTemplateName is required: set it to the name of \
             the ScopeTemplate whose ClusterRoles this instance binds"
        ));
    }
    let bad_namespaces: Vec<String> = instance
        .spec
        .namespaces
        .iter()
        .enumerate()
        .filter_map(|(index, namespace)| {
            scope::namespace_name_problem(namespace).map(|why| {
                format!("spec.namespaces[{index}] \"{namespace}\" is not a namespace name ({why})")
            })
        })
        .collect();
    if !bad_namespaces.is_empty() {
        return Verdict::deny(format!(
            "ScopeInstance \"{name}\": {}; list existing namespace names, or leave spec.namespaces \
             empty to bind cluster-wide",
            bad_namespaces.join("; ")
        ));
    }

    // Rule 2: the template, in the instance's API group.
    let template = match find_template(cluster, group, template_name) {
        Ok(Some(object)) => match ScopeTemplate::from_object(&object) {
            Ok(template) => template,
            Err(e) => {
                return Verdict::context_unavailable(
                    &format!("ScopeTemplate \"{template_name}\""),
                    format!("it cannot be read: {e}"),
                );
            }
        },
        Ok(None) if settings.allow_pending_template => {
            return Verdict::accept().with_warning(format!(
                "ScopeTemplate \"{template_name}\" ({}) does not exist yet; ScopeInstance \
                 \"{name}\" was accepted without checking its bindings because \
                 allowPendingTemplate is set, so whoever creates that template decides what \
                 this instance grants",
                scope::api_version(group)
            ));
        }
        Ok(None) => {
            return Verdict::deny(format!(
                "ScopeTemplateNotFound: ScopeInstance \"{name}\" names ScopeTemplate \
                 \"{template_name}\" in spec.scopeTemplateName, which does not exist in {}, so \
                 the bindings it asks for cannot be checked; create the ScopeTemplate first, or \
                 correct spec.scopeTemplateName",
                scope::api_version(group)
            ));
        }
        Err(e) => {
            return Verdict::context_unavailable(
                &format!(
                    "ScopeTemplate \"{template_name}\" ({})",
                    scope::api_version(group)
                ),
                e,
            );
        }
    };

    // Rule 3: every entry, in every target.
    let user = &request.user_info;
    if user.in_group(SYSTEM_MASTERS) {
        return Verdict::accept();
    }
    let mut refused = Vec::new();
    for target in targets(&instance) {
        match unbindable_entries(cluster, user, &template, target) {
            Ok(entries) => refused.extend(entries),
            Err(verdict) => return verdict,
        }
    }
    if refused.is_empty() {
        return Verdict::accept();
    }
    let fix = if instance.spec.namespaces.is_empty() {
        "Get verb bind on those ClusterRoles cluster-wide (or the missing permissions through a \
         ClusterRoleBinding), or list in spec.namespaces only the namespaces where you may bind them"
    } else {
        "Get verb bind on those ClusterRoles (or the missing permissions) in those namespaces, or \
         remove the namespaces from spec.namespaces"
    };
    Verdict::deny(format!(
        "ScopeInstance \"{name}\" asks oria, which binds with its own bind permission, to bind \
         ClusterRoles of ScopeTemplate \"{template_name}\" that {} may not bind: {}. {fix}",
        user.describe(),
        refused.join("; ")
    ))
}

/// Where oria binds: each listed namespace, or the whole cluster (`""`)
/// through a ClusterRoleBinding when none is listed. Duplicates bind once.
pub(super) fn targets(instance: &ScopeInstance) -> Vec<&str> {
    let mut targets: Vec<&str> = Vec::new();
    for namespace in &instance.spec.namespaces {
        if !targets.contains(&namespace.as_str()) {
            targets.push(namespace);
        }
    }
    if targets.is_empty() {
        targets.push("");
    }
    targets
}

/// The template entries the user may not bind in `target`, described for
/// the message. RBAC is loaded at most once per target, and only when some
/// entry is not already allowed by `bind`.
fn unbindable_entries(
    cluster: &dyn Cluster,
    user: &UserInfo,
    template: &ScopeTemplate,
    target: &str,
) -> Result<Vec<String>, Verdict> {
    let mut held: Option<Vec<PolicyRule>> = None;
    let mut refused = Vec::new();
    for (index, entry) in template.spec.cluster_roles.iter().enumerate() {
        let bind = ResourceAttributes::new("bind", RBAC_GROUP, "clusterroles")
            .name(&entry.generate_name)
            .namespace(target);
        match cluster.authorized(user, bind) {
            Ok(true) => continue,
            Ok(false) => {}
            Err(e) => {
                return Err(Verdict::context_unavailable(
                    &format!("the user's bind permission {} (can_i)", where_text(target)),
                    e,
                ));
            }
        }
        let held = match &mut held {
            Some(held) => held,
            None => match rules_held(cluster, user, target) {
                Ok(rules) => held.insert(rules),
                Err(e) => return Err(Verdict::context_unavailable(&rbac_lookup(target), e)),
            },
        };
        if let Err(missing) = olm_guard_rbac::covers(held, &entry.rules) {
            refused.push(format!(
                "{} of the template {} (not authorized to bind clusterroles \"{}\" there, and \
                 missing {})",
                entry.describe(index),
                where_text(target),
                entry.generate_name,
                rules_text(&missing)
            ));
        }
    }
    Ok(refused)
}
