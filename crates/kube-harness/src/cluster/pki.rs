//! The test cluster's certificates and keys: a throw-away CA, the serving
//! certificate for 127.0.0.1, the service-account signing key, and the
//! kubeconfigs of the identities the tests need.

use std::path::{Path, PathBuf};

use base64::Engine;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
};
use serde_json::json;

use super::{ClusterError, request_error};

/// Who a kubeconfig is for: the administrator, an ordinary user, or one of
/// the broken kubeconfigs the fault tests need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    /// The cluster's CA and a valid `system:masters` client certificate.
    Admin,
    /// A valid client certificate for `name` in `groups` (its common name
    /// and organizations), whom the cluster's RBAC decides.
    User {
        /// The user name (the certificate's common name).
        name: String,
        /// The groups (its organizations); the API server adds
        /// `system:authenticated`.
        groups: Vec<String>,
    },
    /// A client certificate of the cluster's CA that expired in 2001.
    ExpiredCertificate,
    /// A client certificate signed by another CA, which the server does
    /// not trust.
    ForeignCertificate,
    /// A certificate-authority that did not sign the server's certificate.
    UntrustedServer,
}

/// A throw-away certificate authority: the test cluster's, or the one
/// policy-server's serving certificate is signed by.
pub(crate) struct Pki {
    pub(crate) ca_pem: String,
    /// The same certificate, DER (what a client's root store takes).
    pub(crate) ca_der: Vec<u8>,
    issuer: Issuer<'static, KeyPair>,
}

impl Pki {
    pub(crate) fn new(name: &str) -> Result<Pki, rcgen::Error> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = params.self_signed(&key)?;
        Ok(Pki {
            ca_pem: ca.pem(),
            ca_der: ca.der().to_vec(),
            issuer: Issuer::new(params, key),
        })
    }

    /// (certificate, key) as PEM.
    fn sign(&self, params: CertificateParams) -> Result<(String, String), rcgen::Error> {
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok((cert.pem(), key.serialize_pem()))
    }

    /// A serving certificate for `127.0.0.1` (an IP subjectAltName, which
    /// a client checks an address against) and `localhost`: (certificate,
    /// key) as PEM.
    pub(crate) fn serving(&self) -> Result<(String, String), rcgen::Error> {
        let mut params =
            CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])?;
        params
            .distinguished_name
            .push(DnType::CommonName, "127.0.0.1");
        self.sign(params)
    }

    /// A client certificate for `user` in `groups`.
    fn client(
        &self,
        user: &str,
        groups: &[String],
        expired: bool,
    ) -> Result<(String, String), rcgen::Error> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, user);
        for group in groups {
            params
                .distinguished_name
                .push(DnType::OrganizationName, group.as_str());
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        if expired {
            params.not_before = rcgen::date_time_ymd(2000, 1, 1);
            params.not_after = rcgen::date_time_ymd(2001, 1, 1);
        }
        self.sign(params)
    }
}

/// The administrator's certificate subject: a member of `system:masters`,
/// whom kube-apiserver authorizes without asking RBAC.
const ADMIN: &str = "olm-guard-test-admin";

/// A service-account signing key pair, as PEM: (public, private).
pub(super) fn service_account_keys() -> Result<(String, String), rcgen::Error> {
    let key = KeyPair::generate()?;
    Ok((key.public_key_pem(), key.serialize_pem()))
}

/// Writes a kubeconfig (context `olm-guard-test`) for `identity` into `dir`.
pub(super) fn write_kubeconfig(
    dir: &Path,
    server: &str,
    pki: &Pki,
    identity: &Identity,
) -> Result<PathBuf, ClusterError> {
    let other = || Pki::new("another CA").map_err(pki_error);
    let masters = ["system:masters".to_string()];
    let admin = |pki: &Pki, expired| pki.client(ADMIN, &masters, expired).map_err(pki_error);
    let (ca, (cert, key)) = match identity {
        Identity::Admin => (pki.ca_pem.clone(), admin(pki, false)?),
        Identity::User { name, groups } => (
            pki.ca_pem.clone(),
            pki.client(name, groups, false).map_err(pki_error)?,
        ),
        Identity::ExpiredCertificate => (pki.ca_pem.clone(), admin(pki, true)?),
        Identity::ForeignCertificate => (pki.ca_pem.clone(), admin(&other()?, false)?),
        Identity::UntrustedServer => (other()?.ca_pem, admin(pki, false)?),
    };
    let user = json!({
        "client-certificate-data": b64(&cert),
        "client-key-data": b64(&key),
    });
    let config = kubeconfig(server, &ca, user);
    let name = match identity {
        Identity::Admin => "kubeconfig".to_string(),
        Identity::User { name, .. } => format!("kubeconfig-user-{}", file_safe(name)),
        Identity::ExpiredCertificate => "kubeconfig-expiredcertificate".into(),
        Identity::ForeignCertificate => "kubeconfig-foreigncertificate".into(),
        Identity::UntrustedServer => "kubeconfig-untrustedserver".into(),
    };
    let path = dir.join(name);
    let text =
        serde_json::to_string_pretty(&config).map_err(|e| request_error("a kubeconfig", e))?;
    std::fs::write(&path, text)?;
    Ok(path)
}

/// Writes a kubeconfig (context `olm-guard-test`) named `file` into `dir`
/// whose user is a bearer `token` (a ServiceAccount's, as a pod mounts
/// one), trusting `pki`'s CA.
pub(super) fn write_token_kubeconfig(
    dir: &Path,
    server: &str,
    pki: &Pki,
    file: &str,
    token: &str,
) -> Result<PathBuf, ClusterError> {
    let config = kubeconfig(server, &pki.ca_pem, json!({"token": token}));
    let path = dir.join(file_safe(file));
    let text =
        serde_json::to_string_pretty(&config).map_err(|e| request_error("a kubeconfig", e))?;
    std::fs::write(&path, text)?;
    Ok(path)
}

/// A kubeconfig of one cluster (`server`, trusting `ca`), one user and the
/// context `olm-guard-test` that joins them.
fn kubeconfig(server: &str, ca: &str, user: serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "olm-guard-test", "cluster": {
            "server": server,
            "certificate-authority-data": b64(ca),
        }}],
        "users": [{"name": "olm-guard-test-user", "user": user}],
        "contexts": [{"name": "olm-guard-test", "context": {
            "cluster": "olm-guard-test",
            "user": "olm-guard-test-user",
        }}],
        "current-context": "olm-guard-test",
    })
}

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// `name` with every character a file name might not take as `-`.
fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

pub(crate) fn pki_error(e: rcgen::Error) -> ClusterError {
    ClusterError::Request {
        what: "making its certificates".into(),
        reason: e.to_string(),
    }
}
