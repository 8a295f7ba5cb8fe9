//! The lists the modules ask for are a fixed set, whatever the request.
//!
//! Kubewarden's policy-server answers each distinct list request (kind,
//! namespace, label and field selectors, masks) from a watch-backed
//! reflector it opens on the first such request and keeps for as long as it
//! runs; every reflector holds a watch, a stream on policy-server's one
//! HTTP/2 connection to kube-apiserver, which allows 100 by default. A list
//! that names a namespace or a selector taken from the request would open
//! one more for every namespace or group the cluster's writes name, until
//! policy-server stops answering (docs/performance.md, "The webhook path at
//! scale"). Every scenario of every rule is evaluated natively, its lists
//! recorded: none is by namespace, and all of them together are at most
//! [`MOST`], the same whatever the scenario.
//!
//! The one setting that asks per group, revision-uniqueness's
//! `listByOwnerLabel` (off by default, documented as opening a watch per
//! group), is left out.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use olm_guard_core::protocol::{
    CanIRequest, GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
    SubjectAccessReviewStatus,
};
use olm_guard_core::{Cluster, ContextError};
use olm_guard_rules::registry::RULES;
use olm_guard_snapshot::{LoadOptions, Snapshot};
use serde_json::Value;

/// The distinct lists the six modules may ask for: ClusterObjectSets;
/// ClusterRoles whole and masked to `aggregationRule`; ClusterRoleBindings;
/// OperatorGroups; Namespaces; ScopeTemplates of both groups; Roles;
/// RoleBindings.
const MOST: usize = 10;

/// A cluster that records every list asked of it.
struct Recording<'c> {
    inner: &'c dyn Cluster,
    lists: RefCell<Vec<String>>,
    by_namespace: RefCell<Vec<String>>,
}

impl Cluster for Recording<'_> {
    fn list_all(&self, r: &ListAllResourcesRequest) -> Result<Vec<u8>, ContextError> {
        self.lists
            .borrow_mut()
            .push(serde_json::to_string(r).unwrap());
        self.inner.list_all(r)
    }
    fn list_by_namespace(
        &self,
        r: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, ContextError> {
        self.by_namespace
            .borrow_mut()
            .push(serde_json::to_string(r).unwrap());
        self.inner.list_by_namespace(r)
    }
    fn get(&self, r: &GetResourceRequest) -> Result<Vec<u8>, ContextError> {
        self.inner.get(r)
    }
    fn can_i(&self, r: &CanIRequest) -> Result<SubjectAccessReviewStatus, ContextError> {
        self.inner.can_i(r)
    }
}

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

fn read(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

#[test]
fn every_list_a_module_asks_is_one_of_a_fixed_few() {
    let mut lists: BTreeSet<String> = BTreeSet::new();
    let mut evaluated = 0;
    for rule in RULES {
        let tree = testdata().join(rule.name);
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&tree)
            .unwrap_or_else(|e| panic!("{}: {e}", tree.display()))
            .map(|entry| entry.unwrap().path())
            .filter(|dir| dir.join("request.json").is_file())
            .collect();
        dirs.sort();
        for dir in dirs {
            let review = read(&dir.join("request.json")).unwrap();
            let request = review.get("request").cloned().unwrap_or(review);
            let settings = read(&dir.join("settings.json")).unwrap_or(Value::Null);
            if settings["listByOwnerLabel"] == Value::Bool(true) {
                continue;
            }
            let mut snapshot = Snapshot::new();
            if let Ok(text) = std::fs::read_to_string(dir.join("cluster.yaml")) {
                snapshot
                    .add_source("cluster.yaml", &text, LoadOptions::STRICT)
                    .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            }
            let recording = Recording {
                inner: &snapshot,
                lists: RefCell::default(),
                by_namespace: RefCell::default(),
            };
            let settings = if settings.is_null() {
                serde_json::json!({})
            } else {
                settings
            };
            rule.evaluate(request, &settings, &recording);
            evaluated += 1;
            assert!(
                recording.by_namespace.borrow().is_empty(),
                "{}: a list by namespace opens a reflector per namespace: {:?}",
                dir.display(),
                recording.by_namespace.borrow()
            );
            lists.extend(recording.lists.into_inner());
        }
    }
    eprintln!(
        "bounded lists: {} distinct lists over {evaluated} scenarios:",
        lists.len()
    );
    for list in &lists {
        eprintln!("  {list}");
    }
    assert!(evaluated > 400, "only {evaluated} scenarios evaluated");
    assert!(
        lists.len() <= MOST,
        "{} distinct lists, more than the {MOST} a module may ask: {lists:#?}",
        lists.len()
    );
}
