//! The connection: the kubeconfig resolved as kubectl resolves it, a kube-rs
//! client, and every request bounded by the timeout.

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
use kube::{Client, Config};

use crate::discovery::Discovery;
use crate::error::{LiveError, classify, quote};

/// How long one request may take when the user sets nothing.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Which cluster to talk to, as kubectl's `--kubeconfig`, `--context` and
/// `--request-timeout` choose it.
#[derive(Debug, Clone)]
pub struct Target {
    /// The kubeconfig file; `None`: the files of `KUBECONFIG` merged, else
    /// `~/.kube/config`.
    pub kubeconfig: Option<PathBuf>,
    /// The context; `None`: the kubeconfig's `current-context`.
    pub context: Option<String>,
    /// The longest one request may take (connection, TLS and answer).
    pub timeout: Duration,
}

impl Default for Target {
    fn default() -> Self {
        Target {
            kubeconfig: None,
            context: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// A connection to one API server.
pub struct Live {
    pub(crate) client: Client,
    runtime: tokio::runtime::Runtime,
    server: String,
    context: String,
    timeout: Duration,
    pub(crate) discovery: Discovery,
}

impl std::fmt::Debug for Live {
    // The client and its configuration hold credentials: only the server
    // and the context are shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("server", &self.server)
            .field("context", &self.context)
            .finish_non_exhaustive()
    }
}

/// rustls' process-wide crypto provider: ring, as everywhere in the
/// workspace (a build that also links aws-lc-rs has no default otherwise).
fn crypto_provider() {
    // Err only when a provider is installed already, which is all we want.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The kubeconfig as kubectl reads it, and how to name it in messages.
fn read_kubeconfig(target: &Target) -> Result<(Kubeconfig, String), LiveError> {
    if let Some(path) = &target.kubeconfig {
        let file = path.display().to_string();
        if !path.exists() {
            return Err(LiveError::Kubeconfig {
                file,
                reason:
                    "no such file; pass --kubeconfig with an existing file, or leave it out to \
                         use KUBECONFIG or ~/.kube/config"
                        .into(),
            });
        }
        return Kubeconfig::read_from(path)
            .map(|config| (config, file.clone()))
            .map_err(|e| kubeconfig_error(&file, &e));
    }
    if let Some(value) = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
        let file = format!("KUBECONFIG={}", value.to_string_lossy());
        return match Kubeconfig::from_env() {
            Ok(Some(config)) => Ok((config, file)),
            Ok(None) => Err(LiveError::Kubeconfig {
                file,
                reason: "names no file".into(),
            }),
            Err(e) => Err(kubeconfig_error(&file, &e)),
        };
    }
    let file = "~/.kube/config".to_string();
    match Kubeconfig::read() {
        Ok(config) => Ok((config, file)),
        Err(KubeconfigError::ReadConfig(..) | KubeconfigError::FindPath) => {
            Err(LiveError::Kubeconfig {
                file,
                reason: "cannot be read, and neither --kubeconfig nor KUBECONFIG is set; pass \
                         --kubeconfig PATH for a live cluster, or --cluster FILE for objects \
                         read offline (kubectl get ... -o yaml)"
                    .into(),
            })
        }
        Err(e) => Err(kubeconfig_error(&file, &e)),
    }
}

/// A kubeconfig that kube-rs could not use, without quoting its text.
fn kubeconfig_error(file: &str, error: &KubeconfigError) -> LiveError {
    let reason = match error {
        KubeconfigError::ReadConfig(e, path) => {
            format!("cannot read {}: {}", path.display(), quote(&e.to_string()))
        }
        // The parser's message may quote the file, and with it a token.
        KubeconfigError::Parse(_) => {
            "is not valid YAML or not a kubeconfig (kind: Config); fix it, or pass another with \
             --kubeconfig"
                .into()
        }
        other => quote(&other.to_string()),
    };
    LiveError::Kubeconfig {
        file: file.to_string(),
        reason,
    }
}

impl Live {
    /// Reads the kubeconfig, builds the client and asks the server for its
    /// `/version`, so that everything that stops a connection is known
    /// before any evaluation.
    pub fn connect(target: &Target) -> Result<Live, LiveError> {
        crypto_provider();
        let (kubeconfig, file) = read_kubeconfig(target)?;
        let context = match target
            .context
            .clone()
            .or_else(|| kubeconfig.current_context.clone())
        {
            Some(context) => context,
            None => {
                return Err(LiveError::Kubeconfig {
                    file,
                    reason: "has no current-context; pass --context NAME".into(),
                });
            }
        };
        if !kubeconfig.contexts.iter().any(|c| c.name == context) {
            let known: Vec<&str> = kubeconfig
                .contexts
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            return Err(LiveError::UnknownContext {
                file,
                context,
                known: if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                },
            });
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("olm-guard-live")
            .enable_all()
            .build()
            .map_err(|e| LiveError::Client {
                server: String::new(),
                what: "starting the client's runtime".into(),
                reason: quote(&e.to_string()),
            })?;
        let options = KubeConfigOptions {
            context: Some(context.clone()),
            ..KubeConfigOptions::default()
        };
        let mut config = runtime
            .block_on(Config::from_custom_kubeconfig(kubeconfig, &options))
            .map_err(|e| kubeconfig_error(&file, &e))?;
        // One limit for the whole request (connection, TLS, answer), in
        // `Live::call`: kube-rs' own timeouts would race it with errors of
        // their own.
        config.connect_timeout = None;
        config.read_timeout = None;
        config.write_timeout = None;
        let server = config
            .cluster_url
            .to_string()
            .trim_end_matches('/')
            .to_string();
        let client = {
            // The client's buffer spawns its worker on the current runtime.
            let _entered = runtime.enter();
            Client::try_from(config).map_err(|e| classify(&server, "building the client", e))?
        };
        let live = Live {
            client,
            runtime,
            server,
            context,
            timeout: target.timeout,
            discovery: Discovery::default(),
        };
        let client = live.client.clone();
        live.call("reading /version", async move {
            client.apiserver_version().await
        })?;
        Ok(live)
    }

    /// The server's URL, as the kubeconfig names it.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The kubeconfig context in use.
    pub fn context(&self) -> &str {
        &self.context
    }

    /// Runs one request to completion, bounded by the timeout; `what` says
    /// what it is in an error (`listing operators.coreos.com/v1
    /// OperatorGroup`).
    pub(crate) fn call<T>(
        &self,
        what: &str,
        request: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, LiveError> {
        self.runtime
            .block_on(async { tokio::time::timeout(self.timeout, request).await })
            .map_err(|_elapsed| LiveError::Timeout {
                server: self.server.clone(),
                what: what.to_string(),
                after: self.timeout,
            })?
            .map_err(|e| classify(&self.server, what, e))
    }

    /// Builds a request with `build` ([`kube::core::Request`]'s builders)
    /// and [`Live::call`]s it, the answer read as JSON; a request that
    /// cannot be built is a client error naming `what`.
    pub(crate) fn send<T: serde::de::DeserializeOwned>(
        &self,
        what: &str,
        build: impl FnOnce() -> Result<http::Request<Vec<u8>>, kube::core::request::Error>,
    ) -> Result<T, LiveError> {
        let request = build().map_err(|e| LiveError::Client {
            server: self.server.clone(),
            what: what.to_string(),
            reason: e.to_string(),
        })?;
        let client = self.client.clone();
        self.call(what, async move { client.request::<T>(request).await })
    }
}
