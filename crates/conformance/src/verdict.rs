//! One host's answer to one evaluation, reduced to what two hosts must
//! agree on.

use std::fmt;

use anyhow::Context;
use base64::Engine as _;
use serde_json::Value;

use olm_guard_core::response::AdmissionResponse;

/// One host's answer to one scenario.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// `validate_settings` refused the settings with this message.
    SettingsRefused(String),
    /// The settings were accepted and `validate` answered.
    Response(Verdict),
    /// The host failed (trap, deadline, undecodable answer).
    Failed(String),
}

/// The parts of an AdmissionResponse that must agree.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// `response.allowed`.
    pub allowed: bool,
    /// `response.status.message`.
    pub message: Option<String>,
    /// `response.status.code`.
    pub code: Option<u16>,
    /// `None` and `Some([])` are the same answer to a client.
    pub warnings: Vec<String>,
    /// The request's object with the response's patch applied; `None`
    /// when the response carries no patch.
    pub patched: Option<Value>,
}

impl Verdict {
    /// The verdict of `response` to a request holding `object`.
    pub fn of(response: &AdmissionResponse, object: &Value) -> anyhow::Result<Verdict> {
        let status = response.status.clone().unwrap_or_default();
        Ok(Verdict {
            allowed: response.allowed,
            message: status.message,
            code: status.code,
            warnings: response.warnings.clone().unwrap_or_default(),
            patched: apply_patch(response.patch.as_deref(), object)?,
        })
    }
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Answer::SettingsRefused(message) => write!(f, "settings refused: {message:?}"),
            Answer::Failed(message) => write!(f, "host failure: {message}"),
            Answer::Response(v) => {
                write!(
                    f,
                    "allowed={} message={:?} code={:?}",
                    v.allowed, v.message, v.code
                )?;
                if !v.warnings.is_empty() {
                    write!(f, " warnings={:?}", v.warnings)?;
                }
                match &v.patched {
                    Some(object) => write!(f, " patched object={object}"),
                    None => write!(f, " no patch"),
                }
            }
        }
    }
}

/// Applies a base64 RFC 6902 patch to a copy of `object`, independently of
/// `olm_guard_core` (the code under test).
pub fn apply_patch(patch: Option<&str>, object: &Value) -> anyhow::Result<Option<Value>> {
    let Some(patch) = patch else {
        return Ok(None);
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(patch)
        .context("the patch is not base64")?;
    let patch: json_patch::Patch =
        serde_json::from_slice(&bytes).context("the patch is not a JSON Patch")?;
    let mut patched = object.clone();
    json_patch::patch(&mut patched, &patch).context("the patch does not apply")?;
    Ok(Some(patched))
}
