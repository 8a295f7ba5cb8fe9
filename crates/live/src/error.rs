//! Why the live cluster could not answer, each said in one line that names
//! the kubeconfig or the server, what was being done, and what to do.
//!
//! The messages are built from what was asked and from the server's own
//! status; none quotes the kubeconfig's contents, so no token, key or
//! certificate can reach a terminal, a log or a report through them.

use std::time::Duration;

/// The longest text quoted from a server or a library in one message.
const QUOTE: usize = 300;

/// One line of at most [`QUOTE`] characters.
pub(crate) fn quote(text: &str) -> String {
    olm_guard_core::text::one_line(text, QUOTE)
}

/// Why the live cluster could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LiveError {
    /// The kubeconfig could not be read or used.
    #[error("kubeconfig {file}: {reason}")]
    Kubeconfig {
        /// The file (or `KUBECONFIG=...`) it was read from.
        file: String,
        /// What is wrong, and the fix.
        reason: String,
    },
    /// `--context` (or the current context) names no context of the
    /// kubeconfig.
    #[error(
        "kubeconfig {file} has no context \"{context}\" (its contexts: {known}); pass --context with one of them"
    )]
    UnknownContext {
        /// The kubeconfig.
        file: String,
        /// The context asked for.
        context: String,
        /// The contexts it has, comma-separated.
        known: String,
    },
    /// The server could not be reached: connection refused, no route, or a
    /// TLS handshake that failed.
    #[error("cannot reach the API server {server} ({what}): {reason}")]
    Unreachable {
        /// The server's URL.
        server: String,
        /// What was being done.
        what: String,
        /// The cause, and the fix where one is known.
        reason: String,
    },
    /// 401: the server does not accept the kubeconfig's credentials.
    #[error(
        "the API server {server} refused the credentials of the kubeconfig's user ({what}: 401 Unauthorized): the client certificate or token is wrong or expired; renew them or choose another user or context"
    )]
    Unauthorized {
        /// The server's URL.
        server: String,
        /// What was being done.
        what: String,
    },
    /// 403: the kubeconfig's user may not do it.
    #[error("the API server {server} forbids {what} (403 Forbidden: {message}); {fix}")]
    Forbidden {
        /// The server's URL.
        server: String,
        /// What was being done.
        what: String,
        /// The server's message.
        message: String,
        /// The permission to ask for.
        fix: String,
    },
    /// No answer within the timeout.
    #[error(
        "the API server {server} did not answer {what} within {after:?}; is it overloaded or unreachable? (--request-timeout sets the limit)"
    )]
    Timeout {
        /// The server's URL.
        server: String,
        /// What was being done.
        what: String,
        /// The timeout.
        after: Duration,
    },
    /// Any other refusal, with the server's status.
    #[error("the API server {server} answered {what} with {code}: {message}")]
    Api {
        /// The server's URL.
        server: String,
        /// What was being done.
        what: String,
        /// The HTTP status code.
        code: u16,
        /// The server's message.
        message: String,
    },
    /// A client-side failure (an answer that is not JSON, a request that
    /// cannot be built, the async runtime).
    #[error("the API server {server}: {what}: {reason}")]
    Client {
        /// The server's URL (empty before one is known).
        server: String,
        /// What was being done.
        what: String,
        /// The cause.
        reason: String,
    },
}

impl LiveError {
    /// Whether the error says the cluster as a whole could not be read
    /// (unreachable, credentials refused, no answer), rather than that one
    /// request was refused: a command then stops instead of reporting the
    /// rest as if complete.
    pub fn is_access_failure(&self) -> bool {
        matches!(
            self,
            LiveError::Unreachable { .. }
                | LiveError::Unauthorized { .. }
                | LiveError::Forbidden { .. }
                | LiveError::Timeout { .. }
        )
    }

    /// The HTTP status of an answered request.
    pub fn code(&self) -> Option<u16> {
        match self {
            LiveError::Unauthorized { .. } => Some(401),
            LiveError::Forbidden { .. } => Some(403),
            LiveError::Api { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// The error of `kube` while doing `what` against `server`, classified.
pub(crate) fn classify(server: &str, what: &str, error: kube::Error) -> LiveError {
    let server = server.to_string();
    let what = what.to_string();
    match error {
        kube::Error::Api(status) => match status.code {
            401 => LiveError::Unauthorized { server, what },
            403 => LiveError::Forbidden {
                server,
                message: quote(&status.message),
                fix: "ask for the permission it names (kubectl auth can-i), or use a user that has it"
                    .into(),
                what,
            },
            code => LiveError::Api {
                server,
                what,
                code,
                message: quote(&status.message),
            },
        },
        kube::Error::HyperError(e) => unreachable(server, what, &e),
        kube::Error::Service(e) => unreachable(server, what, e.as_ref()),
        kube::Error::Auth(_) => LiveError::Unreachable {
            server,
            what,
            // The auth error may quote an exec plugin's output; it is not
            // repeated.
            reason: "the credentials of the kubeconfig's user could not be obtained (its token \
                     file, exec plugin or auth provider failed); check the user entry"
                .into(),
        },
        other => LiveError::Client {
            server,
            what,
            reason: quote(&other.to_string()),
        },
    }
}

/// A connection that failed: the most specific cause in the chain, and the
/// fix for the common ones. TLS failures reach here as the `std::io::Error`
/// of the handshake (`InvalidData`), whose text is rustls' own.
fn unreachable(
    server: String,
    what: String,
    error: &(dyn std::error::Error + 'static),
) -> LiveError {
    let mut innermost: &(dyn std::error::Error + 'static) = error;
    let mut io_kind = None;
    let mut current = Some(error);
    while let Some(e) = current {
        innermost = e;
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            io_kind = Some(io.kind());
        }
        current = e.source();
    }
    let cause = quote(&innermost.to_string());
    let reason = if io_kind == Some(std::io::ErrorKind::ConnectionRefused) {
        "connection refused: is the cluster running, and does the kubeconfig's context point at it?"
            .into()
    } else if cause.starts_with("invalid peer certificate") {
        format!(
            "TLS failed ({cause}): the server's certificate is not trusted by the kubeconfig's \
             certificate-authority, or it expired, or it names another host"
        )
    } else if cause.contains("close_notify")
        || matches!(
            io_kind,
            Some(std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::UnexpectedEof)
        )
    {
        "the server closed the connection in the middle of the answer (did it stop?)".into()
    } else if cause.starts_with("received fatal alert") {
        format!(
            "TLS failed ({cause}): the server refused the handshake, likely the kubeconfig's client \
             certificate"
        )
    } else {
        cause
    };
    LiveError::Unreachable {
        server,
        what,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An API error as kube-rs gives it for a status the server sent.
    fn answered(code: u16, message: &str, reason: &str) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure(message, reason)
                .with_code(code)
                .boxed(),
        )
    }

    // The test cluster cannot produce a 403 (its delegated authorizer
    // answers 500), so the statuses are classified here as the server
    // sends them (k8s.io/apiserver, pkg/endpoints/handlers/responsewriters,
    // `ErrorNegotiated` with a `metav1.Status`).
    #[test]
    fn a_403_names_what_was_forbidden_and_the_fix() {
        let error = classify(
            "https://cluster:6443",
            "listing catalogsources.operators.coreos.com",
            answered(
                403,
                "catalogsources.operators.coreos.com is forbidden: User \"alice\" cannot list resource \"catalogsources\" in API group \"operators.coreos.com\" at the cluster scope",
                "Forbidden",
            ),
        );
        assert!(error.is_access_failure());
        assert_eq!(error.code(), Some(403));
        let line = error.to_string();
        assert!(line.starts_with("the API server https://cluster:6443 forbids listing catalogsources.operators.coreos.com (403 Forbidden: "), "{line}");
        assert!(line.contains("User \"alice\" cannot list"), "{line}");
        assert!(line.contains("kubectl auth can-i"), "{line}");
        assert!(!line.contains('\n'), "{line}");
    }

    #[test]
    fn a_401_is_the_credentials_and_other_statuses_are_one_request() {
        let unauthorized = classify(
            "https://c",
            "reading /version",
            answered(401, "Unauthorized", "Unauthorized"),
        );
        assert!(matches!(unauthorized, LiveError::Unauthorized { .. }));
        assert!(unauthorized.is_access_failure());
        let missing = classify(
            "https://c",
            "getting a Namespace",
            answered(404, "namespaces \"x\" not found", "NotFound"),
        );
        assert_eq!(missing.code(), Some(404));
        // One refused request does not say the cluster cannot be read.
        assert!(!missing.is_access_failure());
    }
}
