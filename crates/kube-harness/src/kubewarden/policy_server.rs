//! Kubewarden's policy-server as a process of the tests, configured as the
//! controller configures its Deployment (`getPolicyServerContainer` of
//! `internal/controller/policyserver_controller_deployment.go`): the same
//! environment variables, a serving certificate of its own throw-away CA
//! (the controller's `kubewarden-ca`), the policies file of
//! [`super::policies_yml`], and a kubeconfig in place of the pod's mounted
//! ServiceAccount token.
//!
//! What differs from a pod, and why: it binds 127.0.0.1 instead of every
//! address (`KUBEWARDEN_BIND_ADDRESS`), on ports the system gave instead of
//! 8443 and 8081; its `KUBECONFIG` is a kubeconfig with the account's token
//! (in a pod, kube-rs finds the mounted token itself); and its Sigstore
//! trust root is a file that does not exist
//! (`KUBEWARDEN_SIGSTORE_TRUST_CONFIG_PATH`), since these machines cannot
//! reach Sigstore's public service and no policy of ours is verified by
//! it (policy-server then only warns, at start).
//!
//! The process is stopped by its id when the [`PolicyServer`] is dropped,
//! also when a test fails, and by a watchdog when the test process dies.

use std::fs::File;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cluster::pki::{Pki, pki_error};
use crate::cluster::{ClusterError, PORT_TRIES, free_port, log_tail, stop, watchdog};

/// How long policy-server may take to become ready: it compiles every
/// module it is given before it serves, which on a busy two-core machine
/// takes a while.
const READY_WITHIN: Duration = Duration::from_secs(240);

/// A running policy-server.
pub struct PolicyServer {
    binary: PathBuf,
    /// Its environment, as the controller sets it (module doc).
    env: Vec<(String, String)>,
    child: Option<Child>,
    watchdogs: Vec<(Child, ChildStdin)>,
    port: u16,
    pki: Pki,
    log: PathBuf,
    runtime: tokio::runtime::Runtime,
    /// A client of its API (`/validate/<policy>`), trusting its CA.
    client: kube::Client,
    dir: tempfile::TempDir,
}

impl Drop for PolicyServer {
    fn drop(&mut self) {
        self.stop();
        for (mut watchdog, stdin) in self.watchdogs.drain(..) {
            drop(stdin);
            let _ = watchdog.wait();
        }
    }
}

/// The readiness probe's answer: whether `GET /readiness` on `port`
/// answered 200 (plain HTTP, as the kubelet probes it).
fn ready(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let asked = stream
        .write_all(b"GET /readiness HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    let mut answer = String::new();
    asked.is_ok()
        && stream.read_to_string(&mut answer).is_ok()
        && answer.starts_with("HTTP/1.1 200")
}

fn start_error(reason: impl Into<String>, log: &Path) -> ClusterError {
    ClusterError::Start {
        what: "policy-server",
        reason: reason.into(),
        log: log_tail(log),
    }
}

impl PolicyServer {
    /// Finds or builds policy-server ([`crate::policy_server`]) and starts
    /// it with `policies` (a `policies.yml` map, [`super::policies_yml`])
    /// and `kubeconfig` (its identity in the cluster), once it is ready.
    pub fn start(policies: &Value, kubeconfig: &Path) -> Result<PolicyServer, ClusterError> {
        let binary = crate::policy_server()?;
        let dir = tempfile::Builder::new()
            .prefix("olm-guard-policy-server")
            .tempdir()?;
        let path = |name: &str| dir.path().join(name);
        let pki = Pki::new("olm-guard policy-server CA").map_err(pki_error)?;
        let (cert, key) = pki.serving().map_err(pki_error)?;
        std::fs::write(path("policy-server.crt"), cert)?;
        std::fs::write(path("policy-server.key"), key)?;
        let policies_file = path("policies.yml");
        std::fs::write(
            &policies_file,
            serde_json::to_string_pretty(policies).map_err(std::io::Error::other)?,
        )?;
        std::fs::create_dir_all(path("policy-store"))?;
        let display = |p: PathBuf| p.display().to_string();
        let env: Vec<(String, String)> = [
            ("KUBEWARDEN_CERT_FILE", display(path("policy-server.crt"))),
            ("KUBEWARDEN_KEY_FILE", display(path("policy-server.key"))),
            (
                "KUBEWARDEN_POLICIES_DOWNLOAD_DIR",
                display(path("policy-store")),
            ),
            ("KUBEWARDEN_POLICIES", display(policies_file)),
            (
                "KUBEWARDEN_SIGSTORE_CACHE_DIR",
                display(path("sigstore-data")),
            ),
            (
                "KUBEWARDEN_ALWAYS_ACCEPT_ADMISSION_REVIEWS_ON_NAMESPACE",
                super::NAMESPACE.to_string(),
            ),
            ("KUBEWARDEN_BIND_ADDRESS", "127.0.0.1".to_string()),
            (
                "KUBEWARDEN_SIGSTORE_TRUST_CONFIG_PATH",
                display(path("no-sigstore-trust-config.json")),
            ),
            ("KUBEWARDEN_LOG_LEVEL", "info".to_string()),
            ("KUBECONFIG", kubeconfig.display().to_string()),
            ("HOME", dir.path().display().to_string()),
            ("PATH", std::env::var("PATH").unwrap_or_default()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let log = path("policy-server.log");
        let mut last = None;
        for _ in 0..PORT_TRIES {
            let (port, readiness) = (free_port()?, free_port()?);
            let mut env = env.clone();
            env.push(("KUBEWARDEN_PORT".into(), port.to_string()));
            env.push((
                "KUBEWARDEN_READINESS_PROBE_PORT".into(),
                readiness.to_string(),
            ));
            match spawn(&binary, &env, dir.path(), &log) {
                Ok(child) => {
                    let runtime = tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(2)
                        .enable_all()
                        .build()?;
                    let client = {
                        let _entered = runtime.enter();
                        client_for(&format!("https://127.0.0.1:{port}"), &pki)?
                    };
                    let mut server = PolicyServer {
                        binary,
                        env,
                        child: None,
                        watchdogs: Vec::new(),
                        port,
                        pki,
                        log,
                        runtime,
                        client,
                        dir,
                    };
                    server.watch(child)?;
                    return Ok(server);
                }
                Err(e) => {
                    let taken = log_tail(&log).contains("Address already in use");
                    last = Some(e);
                    if !taken {
                        break;
                    }
                }
            }
        }
        Err(last.unwrap_or_else(|| start_error("never started", &log)))
    }

    /// Keeps `child` as the running process, with a watchdog that stops it
    /// should the test process die.
    fn watch(&mut self, mut child: Child) -> Result<(), ClusterError> {
        match watchdog(&[child.id()]) {
            Ok(watchdog) => self.watchdogs.push(watchdog),
            Err(e) => {
                stop(&mut child);
                return Err(e.into());
            }
        }
        self.child = Some(child);
        Ok(())
    }

    /// `https://127.0.0.1:<port>`, where it serves `/validate/<policy>`.
    pub fn base_url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// The CA its serving certificate is signed by, PEM: a webhook's
    /// `caBundle`.
    pub fn ca_pem(&self) -> &str {
        &self.pki.ca_pem
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Its log (stdout and stderr), the last lines.
    pub fn log_tail(&self) -> String {
        log_tail(&self.log)
    }

    /// How many lines of its whole log contain `text`.
    pub fn log_matches(&self, text: &str) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|line| line.contains(text))
            .count()
    }

    /// Stops it (SIGKILL): a policy-server that stopped answering.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            stop(&mut child);
        }
    }

    /// Starts it again as it was started (the same ports and policies),
    /// once it is ready.
    pub fn restart(&mut self) -> Result<(), ClusterError> {
        self.stop();
        let child = spawn(&self.binary, &self.env, self.dir.path(), &self.log)?;
        self.watch(child)
    }

    /// `POST /validate/<policy>` of `review` (an AdmissionReview), sent
    /// straight to it as kube-apiserver sends it: the AdmissionReview it
    /// answers.
    pub fn validate(&self, policy: &str, review: &Value) -> Result<Value, ClusterError> {
        let url = format!("/validate/{policy}");
        let failed = |e: String| ClusterError::Request {
            what: format!("policy-server POST {url}"),
            reason: e,
        };
        let body = serde_json::to_vec(review).map_err(|e| failed(e.to_string()))?;
        let request = http::Request::post(&url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body)
            .map_err(|e| failed(e.to_string()))?;
        self.runtime
            .block_on(self.client.request::<Value>(request))
            .map_err(|e| failed(e.to_string()))
    }
}

/// A client of `url` (policy-server's API) trusting `pki`'s CA.
fn client_for(url: &str, pki: &Pki) -> Result<kube::Client, ClusterError> {
    // rustls' provider, as the CLI installs it (ring).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let failed = |e: String| ClusterError::Request {
        what: format!("a client of policy-server at {url}"),
        reason: e,
    };
    let uri: http::Uri = url
        .parse()
        .map_err(|e: http::uri::InvalidUri| failed(e.to_string()))?;
    let mut config = kube::Config::new(uri);
    config.root_cert = Some(vec![pki.ca_der.clone()]);
    kube::Client::try_from(config).map_err(|e| failed(e.to_string()))
}

/// Starts `binary` with exactly `env`, in `dir`, its output appended to
/// `log`, and waits until its readiness probe answers (the port of
/// `KUBEWARDEN_READINESS_PROBE_PORT`), or it exits.
fn spawn(
    binary: &Path,
    env: &[(String, String)],
    dir: &Path,
    log: &Path,
) -> Result<Child, ClusterError> {
    let output = || File::options().create(true).append(true).open(log);
    let mut child = Command::new(binary)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(output()?)
        .stderr(output()?)
        .spawn()
        .map_err(|e| start_error(format!("cannot start {}: {e}", binary.display()), log))?;
    let readiness: u16 = env
        .iter()
        .find(|(k, _)| k == "KUBEWARDEN_READINESS_PROBE_PORT")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or_default();
    let started = Instant::now();
    while !ready(readiness) {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(start_error(
                format!("exited before it was ready ({status})"),
                log,
            ));
        }
        if started.elapsed() > READY_WITHIN {
            stop(&mut child);
            return Err(start_error(
                format!("not ready after {READY_WITHIN:?}"),
                log,
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(child)
}
