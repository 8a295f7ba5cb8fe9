//! olm-guard's evaluator: load a policy module, grant it what its metadata
//! declares, evaluate a request, and build the AdmissionResponse
//! policy-server would send. Host calls are answered from any
//! [`ClusterContext`] (a snapshot today; a recorded session or a live
//! cluster need only implement [`olm_guard_core::Cluster`]).
//!
//! The split follows Kubewarden's: `kubewarden/policy-evaluator` owns
//! runtimes and host callbacks, and the server and CLI are thin.
//!
//! ```no_run
//! use std::path::Path;
//! use std::sync::Arc;
//! use olm_guard_evaluator::{Policy, input};
//! use olm_guard_runtime::{Limits, Runtime};
//! use olm_guard_snapshot::Snapshot;
//!
//! let runtime = Runtime::new(Limits::default())?;
//! let policy = Policy::load(&runtime, Path::new("dist/catalog-union.wasm"), None)?;
//! let request = input::admission_request(input::read_document(Path::new("request.json"))?)?;
//! let settings = serde_json::json!({});
//! policy.validate_settings(&settings)?;
//! let evaluation = policy.validate(&request, &settings, Arc::new(Snapshot::new()))?;
//! println!("allowed: {}", evaluation.response.allowed);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod host;
pub mod input;
pub mod manifest;
pub mod policy;
pub mod preflight;
pub mod scenario;
pub mod session;
pub mod suite;

pub use host::{CallRecord, ClusterContext, ContextHost, Grants};
pub use olm_guard_core::response::{AdmissionResponse, ValidationResponse};
pub use policy::{Evaluation, Policy, PolicyError};
pub use session::{Session, SessionError, SessionRecorder, SessionReplay};
