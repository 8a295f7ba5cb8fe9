#![doc = include_str!("../README.md")]

pub mod budget;
pub mod crd;
pub mod model;
pub mod policies;
pub mod render;

pub use policies::{Check, Enforcement, GenerateError, Native, generate};
