//! olm-guard's host: runs Kubewarden waPC policy modules locally, answering
//! their host capabilities from cluster snapshots.

pub mod admission;
pub mod capabilities;
pub mod metadata;
pub mod policy;
pub mod runtime;
pub mod scenario;
