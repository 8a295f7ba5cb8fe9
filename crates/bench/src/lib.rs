//! olm-guard's benchmarks, kept out of the libraries users link: the large
//! built-in [`workloads`], their [`scale`] series, and [`measure()`], which
//! times a module against the same rule compiled natively (through
//! [`olm_guard_rules::registry`]).

pub mod measure;
pub mod scale;
pub mod stored;
pub mod workloads;

pub use measure::{Report, Samples, machine, measure};
pub use workloads::Workload;
