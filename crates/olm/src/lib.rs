//! OLM resources as the policies read them, and OLM's own algorithms
//! (provided-API sets, namespace-set algebra) written once.

pub mod catalog_source;
pub mod cluster_object_set;
pub mod operator_group;
pub mod scope;
