//! Webhook configurations registered with the test cluster and taken away
//! again, each time waited for until kube-apiserver decides with it.
//!
//! kube-apiserver reads webhook configurations through an informer, one per
//! kind (Validating-, MutatingWebhookConfiguration), so a configuration is in
//! force a moment after it is stored. A **sentinel** of the same kind,
//! stored after the configurations (and deleted after them), tells when:
//! its webhook calls an address where nothing listens, with `failurePolicy:
//! Fail`, for ConfigMaps labelled [`SENTINEL_LABEL`] only; while a dry-run
//! create of such a ConfigMap is refused naming it, the informer has seen
//! the sentinel, and so everything stored before it (one watch delivers
//! changes in order).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cluster::{ClusterError, TestCluster, Write};

/// The label a sentinel's webhook matches; its value is the sentinel's kind
/// in lower case (`validating`, `mutating`).
pub const SENTINEL_LABEL: &str = "olm-guard-test/webhook-sentinel";

/// How long a registration may take to be seen, on a busy machine.
const SEEN_WITHIN: Duration = Duration::from_secs(30);

/// The two kinds of webhook configuration, by the word the sentinels use.
const KINDS: [(&str, &str); 2] = [
    ("ValidatingWebhookConfiguration", "validating"),
    ("MutatingWebhookConfiguration", "mutating"),
];

/// The sentinel configuration of `kind`.
fn sentinel(kind: &str, word: &str) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": format!("olm-guard-test-sentinel-{word}")},
        "webhooks": [{
            "name": sentinel_webhook(word),
            // Nothing listens on port 1: every call fails at once.
            "clientConfig": {"url": "https://127.0.0.1:1/sentinel"},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                "resources": ["configmaps"]}],
            "objectSelector": {"matchLabels": {SENTINEL_LABEL: word}},
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "timeoutSeconds": 1,
            "admissionReviewVersions": ["v1"],
        }],
    })
}

fn sentinel_webhook(word: &str) -> String {
    format!("{word}.sentinel.olm-guard.test")
}

impl TestCluster {
    /// Stores `configurations` (webhook configurations, [`super::webhook_configuration`])
    /// and returns once kube-apiserver calls their webhooks.
    pub fn register_webhooks(&self, configurations: &[Value]) -> Result<(), ClusterError> {
        for configuration in configurations {
            if let Err(refusal) = self.create(configuration)? {
                return Err(ClusterError::Request {
                    what: format!(
                        "registering webhook configuration {}",
                        configuration["metadata"]["name"]
                    ),
                    reason: refusal.message,
                });
            }
        }
        for (kind, word) in kinds_of(configurations) {
            if let Err(refusal) = self.create(&sentinel(kind, word))?
                && refusal.reason != "AlreadyExists"
            {
                return Err(ClusterError::Request {
                    what: format!("registering the {word} sentinel"),
                    reason: refusal.message,
                });
            }
            self.wait_sentinel(word, true)?;
        }
        Ok(())
    }

    /// Deletes `configurations` and returns once kube-apiserver no longer
    /// calls their webhooks.
    pub fn unregister_webhooks(&self, configurations: &[Value]) -> Result<(), ClusterError> {
        for configuration in configurations {
            self.remove(configuration)?;
        }
        for (kind, word) in kinds_of(configurations) {
            self.remove(&sentinel(kind, word))?;
            self.wait_sentinel(word, false)?;
        }
        Ok(())
    }

    /// Waits until the `word` sentinel is in force (`present`) or gone.
    fn wait_sentinel(&self, word: &str, present: bool) -> Result<(), ClusterError> {
        let probe = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": format!("olm-guard-test-sentinel-{word}"), "namespace": "default",
            "labels": {SENTINEL_LABEL: word}}});
        let started = Instant::now();
        loop {
            let written = self.write_as(None, Write::Create, &probe, None, true)?;
            let answered = match &written.answer {
                Ok(_) => false,
                Err(refusal) => refusal.message.contains(&sentinel_webhook(word)),
            };
            if answered == present {
                return Ok(());
            }
            if started.elapsed() > SEEN_WITHIN {
                return Err(ClusterError::Request {
                    what: format!("waiting for the {word} webhook sentinel"),
                    reason: format!(
                        "still {} after {SEEN_WITHIN:?}",
                        if present { "not in force" } else { "in force" }
                    ),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The kinds among `configurations`, each once.
fn kinds_of(configurations: &[Value]) -> Vec<(&'static str, &'static str)> {
    KINDS
        .into_iter()
        .filter(|(kind, _)| configurations.iter().any(|c| c["kind"] == *kind))
        .collect()
}
