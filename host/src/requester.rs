//! Who a request comes from: `--as USER` and `--as-group GROUP`, as the API
//! server knows that user, for `run` and `audit` alike.
//!
//! kubectl's `--as` and `--as-group` become impersonation headers, and the
//! API server fills in the user's groups as it does for every impersonated
//! user (kubernetes/kubernetes, `staging/src/k8s.io/apiserver/pkg/endpoints/filters/impersonation.go`,
//! `WithImpersonation`): a service account
//! (`system:serviceaccount:NS:NAME`) given no group is in
//! `system:serviceaccounts` and `system:serviceaccounts:NS`
//! (`serviceaccount.MakeGroupNames`); every user but `system:anonymous` is
//! in `system:authenticated` unless a group given is it or
//! `system:unauthenticated`; `system:anonymous` is in
//! `system:unauthenticated`. The request a module judges carries those
//! groups, so a binding to `system:authenticated` counts as it would in the
//! cluster.

/// The group of every authenticated user.
const AUTHENTICATED: &str = "system:authenticated";
/// The group of unauthenticated requests.
const UNAUTHENTICATED: &str = "system:unauthenticated";
/// The anonymous user.
const ANONYMOUS: &str = "system:anonymous";
/// How service-account user names begin.
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// The groups of `user` given `groups` (`--as-group`), as the API server
/// completes them for an impersonated user.
pub fn groups_of(user: &str, groups: &[String]) -> Vec<String> {
    let mut groups = groups.to_vec();
    if groups.is_empty()
        && let Some(namespace) = service_account_namespace(user)
    {
        groups.push("system:serviceaccounts".into());
        groups.push(format!("system:serviceaccounts:{namespace}"));
    }
    if user == ANONYMOUS {
        if !groups.iter().any(|g| g == UNAUTHENTICATED) {
            groups.push(UNAUTHENTICATED.into());
        }
    } else if !groups
        .iter()
        .any(|g| g == AUTHENTICATED || g == UNAUTHENTICATED)
    {
        groups.push(AUTHENTICATED.into());
    }
    groups
}

/// The namespace of a service account's user name
/// (`system:serviceaccount:NS:NAME`, `serviceaccount.SplitUsername`).
fn service_account_namespace(user: &str) -> Option<&str> {
    let (namespace, name) = user.strip_prefix(SERVICE_ACCOUNT_PREFIX)?.split_once(':')?;
    (!namespace.is_empty() && !name.is_empty() && !name.contains(':')).then_some(namespace)
}

/// The requester of `run`: `--as` with its groups completed, or an
/// anonymous request (no `userInfo`) without `--as`.
pub fn of(user: Option<&str>, groups: &[String]) -> olm_guard_evaluator::input::Requester {
    match user {
        Some(user) => olm_guard_evaluator::input::Requester {
            username: user.to_string(),
            groups: groups_of(user, groups),
        },
        None => olm_guard_evaluator::input::Requester {
            username: String::new(),
            groups: groups.to_vec(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(groups: &[&str]) -> Vec<String> {
        groups.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn groups_are_completed_as_the_api_server_completes_an_impersonated_user() {
        assert_eq!(groups_of("alice", &[]), strings(&["system:authenticated"]));
        assert_eq!(
            groups_of("alice", &strings(&["team-a"])),
            strings(&["team-a", "system:authenticated"])
        );
        assert_eq!(
            groups_of("alice", &strings(&["system:authenticated"])),
            strings(&["system:authenticated"])
        );
        assert_eq!(
            groups_of("system:serviceaccount:olm:installer", &[]),
            strings(&[
                "system:serviceaccounts",
                "system:serviceaccounts:olm",
                "system:authenticated"
            ])
        );
        // Groups given replace the service account's, as the server does.
        assert_eq!(
            groups_of("system:serviceaccount:olm:installer", &strings(&["x"])),
            strings(&["x", "system:authenticated"])
        );
        assert_eq!(
            groups_of("system:anonymous", &[]),
            strings(&["system:unauthenticated"])
        );
        // Not a service account's name: an ordinary user.
        assert_eq!(
            groups_of("system:serviceaccount:olm", &[]),
            strings(&["system:authenticated"])
        );
    }
}
