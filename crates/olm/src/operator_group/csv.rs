//! The ClusterServiceVersion: its provided APIs (`apiSurfaceOfCSV`,
//! labeler.go) and whether it is a copy (`IsCopied`, operator-framework/api).

use olm_guard_core::ObjectMeta;
use serde::Deserialize;
use serde_json::Value;
use serde_with::DefaultOnNull;

use super::{
    ApiKey, ApiSet, COPIED_LABEL, COPIED_REASON, OPERATOR_NAMESPACE_ANNOTATION, read_object,
};

/// `operators.coreos.com/v1alpha1` ClusterServiceVersion: what decides
/// its provided APIs and whether it is a copy.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ClusterServiceVersion {
    /// The CSV's metadata; copies carry OLM's annotation and label.
    #[serde_as(as = "DefaultOnNull")]
    pub metadata: ObjectMeta,
    /// The owned and required APIs.
    #[serde_as(as = "DefaultOnNull")]
    pub spec: CsvSpec,
    /// `status.reason`, which marks copies.
    #[serde_as(as = "DefaultOnNull")]
    pub status: CsvStatus,
}

/// `spec` of a ClusterServiceVersion: its API descriptions.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CsvSpec {
    /// `spec.customresourcedefinitions`: CRD-backed APIs.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(rename = "customresourcedefinitions")]
    pub custom_resource_definitions: CrdDescriptions,
    /// `spec.apiservicedefinitions`: APIService-backed APIs.
    #[serde_as(as = "DefaultOnNull")]
    #[serde(rename = "apiservicedefinitions")]
    pub api_service_definitions: ApiServiceDescriptions,
}

/// The CRD-backed APIs a CSV owns and requires.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CrdDescriptions {
    /// APIs the operator provides.
    #[serde_as(as = "DefaultOnNull")]
    pub owned: Vec<CrdDescription>,
    /// APIs the operator needs from others.
    #[serde_as(as = "DefaultOnNull")]
    pub required: Vec<CrdDescription>,
}

/// One CRD-backed API of a CSV.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CrdDescription {
    /// `<plural>.<group>`, the CRD's name.
    #[serde_as(as = "DefaultOnNull")]
    pub name: String,
    /// The API version served.
    #[serde_as(as = "DefaultOnNull")]
    pub version: String,
    /// The kind.
    #[serde_as(as = "DefaultOnNull")]
    pub kind: String,
}

/// The APIService-backed APIs a CSV owns and requires.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ApiServiceDescriptions {
    /// APIs the operator provides.
    #[serde_as(as = "DefaultOnNull")]
    pub owned: Vec<ApiServiceDescription>,
    /// APIs the operator needs from others.
    #[serde_as(as = "DefaultOnNull")]
    pub required: Vec<ApiServiceDescription>,
}

/// One APIService-backed API of a CSV.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ApiServiceDescription {
    /// The APIService's name.
    #[serde_as(as = "DefaultOnNull")]
    pub name: String,
    /// The API group.
    #[serde_as(as = "DefaultOnNull")]
    pub group: String,
    /// The API version.
    #[serde_as(as = "DefaultOnNull")]
    pub version: String,
    /// The kind.
    #[serde_as(as = "DefaultOnNull")]
    pub kind: String,
}

/// `status` of a ClusterServiceVersion, as far as copies are concerned.
#[serde_with::serde_as]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CsvStatus {
    /// `Copied` on the copies OLM makes in target namespaces.
    #[serde_as(as = "DefaultOnNull")]
    pub reason: String,
}

/// An owned CRD whose name has no dot, so OLM cannot tell its group: OLM
/// fails the whole CSV (`error parsing crd name`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrdNameError {
    /// Index in `spec.customresourcedefinitions.owned`.
    pub index: usize,
    /// The name as written.
    pub name: String,
}

impl ClusterServiceVersion {
    /// Reads `request.object`; the error names the field at fault.
    pub fn from_object(object: &Value) -> Result<ClusterServiceVersion, crate::ObjectError> {
        read_object(object)
    }

    /// `IsCopied`: reason `Copied`, an `olm.operatorNamespace` annotation
    /// naming another namespace, or an `olm.copiedFrom` label. Copies never
    /// count as providers.
    pub fn is_copied(&self) -> bool {
        self.status.reason == COPIED_REASON
            || self
                .metadata
                .annotation(OPERATOR_NAMESPACE_ANNOTATION)
                .is_some_and(|ns| ns != self.metadata.namespace)
            || self.metadata.labels.contains_key(COPIED_LABEL)
    }

    /// `apiSurfaceOfCSV` provided APIs, plural stripped: owned CRDs (name
    /// split at the first dot into plural and group) and owned API
    /// services. `required` entries are required APIs, not provided ones.
    pub fn provided_apis(&self) -> Result<ApiSet, CrdNameError> {
        let mut apis = ApiSet::new();
        for (index, crd) in self
            .spec
            .custom_resource_definitions
            .owned
            .iter()
            .enumerate()
        {
            let Some((_plural, group)) = crd.name.split_once('.') else {
                return Err(CrdNameError {
                    index,
                    name: crd.name.clone(),
                });
            };
            apis.insert(ApiKey::new(group, &crd.version, &crd.kind));
        }
        for api in &self.spec.api_service_definitions.owned {
            apis.insert(ApiKey::new(&api.group, &api.version, &api.kind));
        }
        Ok(apis)
    }

    /// Whether `other` provides the same APIs, the way OLM sees them: the
    /// same [`provided_apis`](Self::provided_apis) set, so order,
    /// descriptions and plurals do not matter. When a CRD name cannot be
    /// parsed, the owned entries themselves must be equal: the same broken
    /// entry is the same problem, any other edit is a change.
    pub fn provides_same_apis(&self, other: &ClusterServiceVersion) -> bool {
        match (self.provided_apis(), other.provided_apis()) {
            (Ok(mine), Ok(theirs)) => mine == theirs,
            (Err(_), Err(_)) => {
                self.spec.custom_resource_definitions.owned
                    == other.spec.custom_resource_definitions.owned
                    && self.spec.api_service_definitions.owned
                        == other.spec.api_service_definitions.owned
            }
            _ => false,
        }
    }
}
