//! A live cluster: what olm-guard reads from a running API server.
//!
//! - [`Target`] and [`Live::connect`]: the kubeconfig resolved as kubectl
//!   resolves it (`--kubeconfig`, else `KUBECONFIG`'s files merged, else
//!   `~/.kube/config`; `--context`, else the current context), a kube-rs
//!   client (the client Kubewarden's policy-server itself uses), and one
//!   probe of `/version`, so that a wrong kubeconfig, an untrusted server
//!   certificate, refused credentials, a refused connection or a timeout is
//!   one [`LiveError`] before anything is evaluated.
//! - [`LiveCluster`]: the `kubernetes/*` host capabilities answered by the
//!   API server as policy-server answers them
//!   (kubewarden/kubewarden-controller,
//!   `crates/policy-evaluator/src/callback_handler/kubernetes/client.rs`):
//!   lists held for the life of the command as its reflectors hold them,
//!   gets and SubjectAccessReviews kept five seconds unless the module says
//!   `disable_cache`. What the server does not serve is answered from a
//!   snapshot when one is given, and otherwise fails closed, naming the kind
//!   and what to do.
//! - [`Live::list_pages`]: every object of a kind, page by page, for an
//!   audit or a snapshot.
//! - [`Live::write_reports`]: an audit's report objects written into the
//!   cluster as Kubewarden's audit scanner writes them, the reports of an
//!   earlier run deleted.
//! - [`Live::can_i`]: whether the kubeconfig's user may do something (a
//!   SelfSubjectAccessReview), for a command to check what it needs first.
//!
//! No error, log line or report carries a credential: errors are built
//! from what was asked and the server's status, never from the
//! kubeconfig's contents.
//!
//! ```no_run
//! use olm_guard_core::ClusterExt;
//! use olm_guard_core::protocol::ListAllResourcesRequest;
//! use olm_guard_live::{Live, LiveCluster, Target};
//! use serde_json::Value;
//!
//! let live = Live::connect(&Target::default())?;
//! let cluster = LiveCluster::new(live.into(), None);
//! let groups: Vec<Value> =
//!     cluster.list_all_as(&ListAllResourcesRequest::new("operators.coreos.com/v1", "OperatorGroup"))?;
//! println!("{} OperatorGroups", groups.len());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod access;
mod cluster;
mod connect;
mod discovery;
mod error;
mod once;
mod pages;
mod reports;
mod served;

pub use cluster::{Answered, LiveCluster};
pub use connect::{DEFAULT_TIMEOUT, Live, Target};
pub use discovery::Resource;
pub use error::LiveError;
pub use pages::{DEFAULT_PAGE_SIZE, Listed};
pub use reports::{ReportKinds, ReportsWritten};
