#![doc = include_str!("../README.md")]

pub mod admission;
pub mod authorizer;
pub mod cost;
pub mod crd;
pub mod interpreter;
pub mod model;
pub mod policies;
pub mod render;
pub mod strings;
pub mod values;
pub mod warnings;

pub use admission::{Options, Policies, Report};
pub use cost::KubernetesVersion;
pub use policies::{Check, Enforcement, GenerateError, Native, generate};
