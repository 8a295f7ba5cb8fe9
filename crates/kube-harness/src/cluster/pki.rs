//! The test cluster's certificates: a throw-away CA, the serving
//! certificate for 127.0.0.1, and the kubeconfigs of the identities the
//! tests need.

use std::path::{Path, PathBuf};

use base64::Engine;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use serde_json::json;

use super::{ClusterError, request_error};

/// The kubeconfigs the fault tests need, beside the working one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    /// The cluster's CA and a valid `system:masters` client certificate.
    Admin,
    /// A client certificate of the cluster's CA that expired in 2001.
    ExpiredCertificate,
    /// A client certificate signed by another CA, which the server does
    /// not trust.
    ForeignCertificate,
    /// A certificate-authority that did not sign the server's certificate.
    UntrustedServer,
}

/// The cluster's certificates.
pub(super) struct Pki {
    pub(super) ca_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Pki {
    pub(super) fn new(name: &str) -> Result<Pki, rcgen::Error> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = params.self_signed(&key)?;
        Ok(Pki {
            ca_pem: ca.pem(),
            issuer: Issuer::new(params, key),
        })
    }

    /// (certificate, key) as PEM.
    fn sign(&self, params: CertificateParams) -> Result<(String, String), rcgen::Error> {
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok((cert.pem(), key.serialize_pem()))
    }

    pub(super) fn serving(&self) -> Result<(String, String), rcgen::Error> {
        let mut params =
            CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])?;
        params
            .distinguished_name
            .push(DnType::CommonName, "127.0.0.1");
        self.sign(params)
    }

    fn client(&self, expired: bool) -> Result<(String, String), rcgen::Error> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params
            .distinguished_name
            .push(DnType::CommonName, "olm-guard-test-admin");
        params
            .distinguished_name
            .push(DnType::OrganizationName, "system:masters");
        if expired {
            params.not_before = rcgen::date_time_ymd(2000, 1, 1);
            params.not_after = rcgen::date_time_ymd(2001, 1, 1);
        }
        self.sign(params)
    }
}

/// Writes a kubeconfig (context `olm-guard-test`) for `identity` into `dir`.
pub(super) fn write_kubeconfig(
    dir: &Path,
    server: &str,
    pki: &Pki,
    identity: Identity,
) -> Result<PathBuf, ClusterError> {
    let other = || Pki::new("another CA").map_err(pki_error);
    let (ca, (cert, key)) = match identity {
        Identity::Admin => (pki.ca_pem.clone(), pki.client(false).map_err(pki_error)?),
        Identity::ExpiredCertificate => (pki.ca_pem.clone(), pki.client(true).map_err(pki_error)?),
        Identity::ForeignCertificate => (
            pki.ca_pem.clone(),
            other()?.client(false).map_err(pki_error)?,
        ),
        Identity::UntrustedServer => (other()?.ca_pem, pki.client(false).map_err(pki_error)?),
    };
    let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "olm-guard-test", "cluster": {
            "server": server,
            "certificate-authority-data": b64(&ca),
        }}],
        "users": [{"name": "olm-guard-test-admin", "user": {
            "client-certificate-data": b64(&cert),
            "client-key-data": b64(&key),
        }}],
        "contexts": [{"name": "olm-guard-test", "context": {
            "cluster": "olm-guard-test",
            "user": "olm-guard-test-admin",
        }}],
        "current-context": "olm-guard-test",
    });
    let name = match identity {
        Identity::Admin => "kubeconfig".to_string(),
        other => format!("kubeconfig-{other:?}").to_lowercase(),
    };
    let path = dir.join(name);
    let text =
        serde_json::to_string_pretty(&config).map_err(|e| request_error("a kubeconfig", e))?;
    std::fs::write(&path, text)?;
    Ok(path)
}

pub(super) fn pki_error(e: rcgen::Error) -> ClusterError {
    ClusterError::Request {
        what: "making its certificates".into(),
        reason: e.to_string(),
    }
}
