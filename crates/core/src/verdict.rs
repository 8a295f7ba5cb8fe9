//! What a rule decides. The Kubewarden adapter turns it into the SDK's
//! `ValidationResponse`; the host turns that into an AdmissionResponse.

use serde_json::Value;

/// What a rule decides about one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// Whether the request is admitted.
    pub allowed: bool,
    /// Why it is not (or a note), shown to the client.
    pub message: Option<String>,
    /// HTTP-like status: 403 policy denial, 400 unreadable request, 500 failed lookup.
    pub code: Option<u16>,
    /// The whole object after mutation (the host diffs it into a JSON Patch).
    pub mutated_object: Option<Value>,
    /// Admission warnings returned to the client.
    pub warnings: Vec<String>,
}

impl Verdict {
    /// Admit the request unchanged.
    pub fn accept() -> Verdict {
        Verdict {
            allowed: true,
            message: None,
            code: None,
            mutated_object: None,
            warnings: Vec::new(),
        }
    }

    /// A policy decision against the object: 403 like the API server's own
    /// admission denials.
    pub fn deny(message: impl Into<String>) -> Verdict {
        Verdict {
            allowed: false,
            message: Some(message.into()),
            code: Some(403),
            ..Verdict::accept()
        }
    }

    /// The request itself could not be read (400): wrong JSON shapes.
    pub fn bad_request(message: impl Into<String>) -> Verdict {
        Verdict {
            code: Some(400),
            ..Verdict::deny(message)
        }
    }

    /// Fail closed: a context lookup the rule needs did not answer (500).
    pub fn context_unavailable(what: &str, error: impl std::fmt::Display) -> Verdict {
        // The host's words, as one bounded line: a backtrace or a page of
        // text would bury what failed (text::QUOTE_MAX says why the bound).
        let error = crate::text::one_line(&error.to_string(), crate::text::QUOTE_MAX);
        Verdict {
            code: Some(500),
            ..Verdict::deny(format!(
                "cannot verify this request: looking up {what} failed ({error}); \
                 denied because the policy fails closed"
            ))
        }
    }

    /// Admit the request with `object` instead of the one sent.
    pub fn mutate(object: Value) -> Verdict {
        Verdict {
            mutated_object: Some(object),
            ..Verdict::accept()
        }
    }

    /// The same verdict with one more warning.
    pub fn with_warning(mut self, warning: impl Into<String>) -> Verdict {
        self.warnings.push(warning.into());
        self
    }

    /// The same verdict with more warnings.
    pub fn with_warnings(mut self, warnings: impl IntoIterator<Item = String>) -> Verdict {
        self.warnings.extend(warnings);
        self
    }
}
