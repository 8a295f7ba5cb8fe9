//! What the kubeconfig's own user may do: one SelfSubjectAccessReview
//! (`authorization.k8s.io/v1`) per permission, as `kubectl auth can-i`
//! asks it (kubernetes/kubectl, `pkg/cmd/auth/cani.go`, `RunAccessCheck`),
//! so that a command checks every permission it needs before it reads
//! anything, and names all those missing at once.

use k8s_openapi::api::authorization::v1 as authorization;
use kube::api::{Api, PostParams};

use crate::connect::Live;
use crate::error::LiveError;

impl Live {
    /// Whether the kubeconfig's user may `verb` the `resource` of `group`
    /// (`""`: the core group) in every namespace, or at the cluster scope
    /// (no namespace in the review, as `kubectl auth can-i VERB RESOURCE
    /// -A` asks). An error when the review itself cannot be created.
    pub fn can_i(&self, verb: &str, group: &str, resource: &str) -> Result<bool, LiveError> {
        let review = authorization::SelfSubjectAccessReview {
            spec: authorization::SelfSubjectAccessReviewSpec {
                resource_attributes: Some(authorization::ResourceAttributes {
                    verb: Some(verb.to_string()),
                    group: Some(group.to_string()),
                    resource: Some(resource.to_string()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let api: Api<authorization::SelfSubjectAccessReview> = Api::all(self.client.clone());
        let created = self.call(
            "creating a SelfSubjectAccessReview",
            api.create(&PostParams::default(), &review),
        )?;
        Ok(created.status.is_some_and(|status| status.allowed))
    }
}
