//! olm-guard's host: runs Kubewarden waPC policy modules locally, answering
//! their host capabilities from cluster snapshots.

pub mod admission;
pub mod bench;
pub mod capabilities;
pub mod metadata;
pub mod native;
pub mod policy;
pub mod runtime;
pub mod scenario;
pub mod synthetic;
