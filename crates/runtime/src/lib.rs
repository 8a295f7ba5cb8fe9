//! olm-guard's waPC runtime: what Kubewarden's policy-evaluator does with a
//! module's bytes, on wasmtime, and nothing about admission.
//!
//! - [`Runtime`] owns the engine and the epoch ticker that enforces
//!   deadlines; [`Runtime::load`] compiles and links a module once into a
//!   [`Module`], and every [`Module::call`] runs one waPC operation in a fresh
//!   instance with a memory cap and a deadline, answering the guest's host
//!   calls through a [`HostCallback`].
//! - [`metadata`] reads, checks and writes Kubewarden's policy metadata (the
//!   `io.kubewarden.metadata` custom section that `kwctl annotate` embeds).
//! - [`artifacthub`] writes a policy's Artifact Hub package files, as
//!   `kwctl scaffold artifacthub` does.
//!
//! ```
//! use std::sync::Arc;
//! use olm_guard_runtime::{HostCallback, Limits, Runtime};
//!
//! /// Refuses every host call.
//! struct NoHost;
//! impl HostCallback for NoHost {
//!     fn call(&self, _: &str, ns: &str, op: &str, _: &[u8]) -> Result<Vec<u8>, String> {
//!         Err(format!("{ns}/{op} is not available"))
//!     }
//! }
//!
//! // A guest that answers every operation with its payload.
//! let wasm = wat::parse_str(r#"(module
//!   (import "wapc" "__guest_request" (func $req (param i32 i32)))
//!   (import "wapc" "__guest_response" (func $resp (param i32 i32)))
//!   (memory (export "memory") 1)
//!   (func (export "__guest_call") (param $op i32) (param $len i32) (result i32)
//!     (call $req (i32.const 0) (i32.const 64))
//!     (call $resp (i32.const 64) (local.get $len))
//!     (i32.const 1)))"#).unwrap();
//! let runtime = Runtime::new(Limits::default()).unwrap();
//! let module = runtime.load(&wasm).unwrap();
//! let answer = module.call("echo", b"hello", Arc::new(NoHost)).unwrap();
//! assert_eq!(answer, b"hello");
//! ```

pub mod artifacthub;
pub mod metadata;
mod rfc3339;
mod wapc;

pub use metadata::{Metadata, MetadataError};
pub use wapc::{CallError, HostCallback, Limits, LoadError, Module, Runtime};

/// Where olm-guard keeps what it can compute again, by the XDG base directory
/// specification: `$XDG_CACHE_HOME/olm-guard`, else `~/.cache/olm-guard`;
/// `None` when neither variable is set. Compiled modules
/// ([`Runtime::with_compile_cache`]) and pulled ones each have a directory
/// below it.
///
/// ```
/// if let Some(dir) = olm_guard_runtime::cache_home() {
///     assert!(dir.ends_with("olm-guard"));
/// }
/// ```
pub fn cache_home() -> Option<std::path::PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|dir| !dir.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| std::path::PathBuf::from(home).join(".cache"))
        })?;
    Some(base.join("olm-guard"))
}
