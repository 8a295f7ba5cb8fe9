//! The CRD half of the native policies, over HTTP: the CRD patches of
//! `deploy/native*/` applied to a running API server as CRD updates (as
//! `kubectl patch --type json` applies them), then every catalog-union and
//! group-authorization scenario with the settings of that directory sent to
//! it as the write it describes (a create, or an update of the stored
//! object).
//!
//! The server is kube-apiserver on etcd (`olm_guard_kube_harness::cluster`),
//! with none of the policies: what is compared here is the CRD's own
//! validation (the policies are `host/tests/control_plane.rs`'s). Its own decision (stored, or refused
//! with its status and message) must equal the decision of Kubernetes'
//! admission code in the harness (`olm_guard_kube_harness::KubeHarness::admit`,
//! which transcribes the custom resource handler's validation) on the same
//! request and the same patched CRD, word for word; and a create the server
//! refuses must be one the module denies. Each directory's test prints
//! `live CRD <dir> <rule>: N/N writes agree`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use olm_guard_conformance::scenario;
use olm_guard_evaluator::scenario::{PolicyStore, discover};
use olm_guard_kube_harness::cluster::{Changes, Refusal, TestCluster};
use olm_guard_kube_harness::{Admit, KubeHarness};
use olm_guard_runtime::{Limits, Runtime};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One write's outcome: stored, or refused with the API server's status.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Decision {
    Stored,
    Refused { code: u16, message: String },
}

impl From<Result<Value, Refusal>> for Decision {
    fn from(result: Result<Value, Refusal>) -> Self {
        match result {
            Ok(_) => Decision::Stored,
            Err(refusal) => Decision::Refused {
                code: refusal.code,
                message: refusal.message,
            },
        }
    }
}

/// A deploy directory's CRD patches for one rule, with the settings they
/// were generated for.
struct Deployed {
    dir: &'static str,
    rule: &'static str,
    settings: Value,
    /// The CRD the patches are written against.
    base: Value,
    /// The patches, in the order their file names give.
    patches: Vec<(String, Value)>,
}

fn read_yaml(path: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_yaml_ng::from_str(&text).with_context(|| format!("{}", path.display()))
}

fn deployed(
    dir: &'static str,
    rule: &'static str,
    settings: Option<&str>,
) -> anyhow::Result<Deployed> {
    let root = workspace().join("deploy").join(dir);
    let settings = match settings {
        Some(file) => read_yaml(&root.join(file))?,
        None => json!({}),
    };
    let union = settings.get("migrateLegacy") == Some(&Value::Bool(true));
    let base = match rule {
        "catalog-union" => {
            let catalog = olm_guard_native::crd::find("catalogsources.operators.coreos.com", None)
                .map_err(anyhow::Error::msg)?;
            if union {
                olm_guard_native::crd::with_union_members(&catalog)
                    .map_err(anyhow::Error::msg)?
                    .document
            } else {
                catalog.document
            }
        }
        _ => {
            olm_guard_native::crd::find("clusterobjectsets.olm.operatorframework.io", None)
                .map_err(anyhow::Error::msg)?
                .document
        }
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&root)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    files.retain(|path| {
        path.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(&format!("{rule}.crd-patch")) && n.ends_with(".json"))
    });
    files.sort();
    let patches = files
        .iter()
        .map(|path| Ok((path.display().to_string(), read_yaml(path)?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if patches.is_empty() {
        bail!("deploy/{dir} holds no CRD patch of {rule}");
    }
    Ok(Deployed {
        dir,
        rule,
        settings,
        base,
        patches,
    })
}

/// A scenario's write, placed so that it meets no other scenario's objects:
/// a namespaced object in a namespace of its own, a cluster-scoped one
/// under a name of its own.
struct Write {
    name: String,
    request: Value,
    settings: Value,
    snapshot: Arc<olm_guard_snapshot::Snapshot>,
}

fn place(mut request: Value, index: usize, namespaced: bool) -> Value {
    let rename = |object: &mut Value| {
        if !object.is_object() {
            return;
        }
        if namespaced {
            object["metadata"]["namespace"] = json!(format!("s{index}"));
        } else if let Some(name) = object["metadata"]["name"].as_str() {
            object["metadata"]["name"] = json!(format!("{name}-s{index}"));
        }
    };
    rename(&mut request["object"]);
    rename(&mut request["oldObject"]);
    if namespaced {
        request["namespace"] = json!(format!("s{index}"));
    } else if let Some(name) = request["object"]["metadata"]["name"].as_str() {
        request["name"] = json!(name);
    }
    request
}

/// The scenarios of `deployed.rule` whose settings are the directory's,
/// that create or update an object of its kind.
fn writes(deployed: &Deployed) -> anyhow::Result<Vec<Write>> {
    let root = workspace();
    let kind = if deployed.rule == "catalog-union" {
        "CatalogSource"
    } else {
        "ClusterObjectSet"
    };
    let mut writes = Vec::new();
    for dir in discover(&[root.join("testdata").join(deployed.rule)])? {
        let settings = scenario::settings(&dir)?;
        if settings != deployed.settings {
            continue;
        }
        let request = scenario::request(&dir)?;
        let operation = request["operation"].as_str().unwrap_or_default();
        if request["kind"]["kind"] != kind
            || !matches!(operation, "CREATE" | "UPDATE")
            || request.get("subResource").is_some_and(|s| !s.is_null())
            || !request["object"].is_object()
            || (operation == "UPDATE" && !request["oldObject"].is_object())
        {
            continue;
        }
        let index = writes.len();
        writes.push(Write {
            name: dir
                .strip_prefix(&root)
                .unwrap_or(&dir)
                .display()
                .to_string(),
            request: place(request, index, kind == "CatalogSource"),
            settings,
            snapshot: Arc::new(scenario::snapshot(&dir)?),
        });
    }
    Ok(writes)
}

fn one_directory(deployed: Deployed) -> anyhow::Result<()> {
    let root = workspace();
    let writes = writes(&deployed)?;
    let cluster = TestCluster::start()?;
    cluster.install_crds(std::slice::from_ref(&deployed.base))?;
    // The Namespaces the writes are placed in, and the probe's.
    let mut objects: Vec<Value> = writes.iter().map(|w| w.request["object"].clone()).collect();
    objects.push(json!({"metadata": {"namespace": "olm-guard-probe"}}));
    cluster.add_namespaces_of(&objects, &mut Changes::default())?;
    // What was stored before the patches: the old objects of the updates,
    // as a cluster holds objects written before its CRD was patched.
    let mut stored_before = vec![false; writes.len()];
    for (index, write) in writes.iter().enumerate() {
        if write.request["operation"] == "UPDATE" {
            stored_before[index] = cluster.create(&write.request["oldObject"])?.is_ok();
        }
    }
    // The patches, each an update the server must accept.
    let mut patched = deployed.base.clone();
    for (file, patch) in &deployed.patches {
        if let Err(refusal) = cluster.patch_json(&deployed.base, patch)? {
            bail!(
                "the API server refuses {file} as an update of its CRD: {}",
                refusal.message
            );
        }
        let operations: json_patch::Patch = serde_json::from_value(patch.clone())?;
        json_patch::patch(&mut patched, &operations).map_err(|e| anyhow::anyhow!("{file}: {e}"))?;
    }

    let mut kube = KubeHarness::start()?;
    let harness =
        |kube: &mut KubeHarness, request: &Value, crd: &Value| -> anyhow::Result<Decision> {
            let admitted = kube.admit(&Admit {
                request: request.clone(),
                crds: vec![crd.clone()],
                ..Admit::default()
            })?;
            Ok(match (admitted.refused, admitted.schema_error) {
                (Some(reason), _) => Decision::Refused {
                    code: 400,
                    message: reason,
                },
                (None, Some(status)) => Decision::Refused {
                    code: status.code as u16,
                    message: status.message,
                },
                (None, None) => Decision::Stored,
            })
        };
    // The server serves the patched schema once its handler has seen the
    // update: a create the patches refuse (and the CRD before them did not)
    // is sent until it is refused.
    let probe = writes
        .iter()
        .map(|w| &w.request)
        .filter(|r| r["operation"] == "CREATE")
        .find_map(|r| {
            let before = harness(&mut kube, r, &deployed.base).ok()?;
            let after = harness(&mut kube, r, &patched).ok()?;
            (before == Decision::Stored && after != Decision::Stored).then(|| r["object"].clone())
        });
    if let Some(object) = probe {
        let started = Instant::now();
        for attempt in 0.. {
            let mut object = object.clone();
            object["metadata"]["namespace"] = json!("olm-guard-probe");
            object["metadata"]["name"] = json!(format!("probe-{attempt}"));
            if cluster.create(&object)?.is_err() {
                break;
            }
            if started.elapsed() > Duration::from_secs(30) {
                bail!("the API server still serves the CRD as it was before the patches");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    let runtime = Runtime::new(Limits::default())?;
    let mut store = PolicyStore::new(&runtime, root.join("dist"));
    let policy = store.get(deployed.rule)?;
    let mut disagreements = Vec::new();
    let mut agree = 0;
    let mut refused = 0;
    for (index, write) in writes.iter().enumerate() {
        let request = &write.request;
        let update = request["operation"] == "UPDATE";
        if update && !stored_before[index] {
            // The old object is one the CRD refuses, so no cluster holds it.
            continue;
        }
        // The harness is given the write the server was given: for an
        // update, the object as stored (pruned by the CRD it was written
        // under, marked as being deleted by the server) and the new one
        // with its server-set metadata.
        let mut sent = request.clone();
        let server: Decision = if update {
            let stored = cluster.get(&request["object"])?;
            sent["object"] = TestCluster::update_of(&request["object"], &stored);
            sent["oldObject"] = stored;
            cluster.replace(&request["object"])?.into()
        } else {
            cluster.create(&request["object"])?.into()
        };
        let kubernetes = harness(&mut kube, &sent, &patched)?;
        let mut problems = Vec::new();
        if server != kubernetes {
            problems.push(format!(
                "  the API server:      {server:?}\n  the harness's code:  {kubernetes:?}"
            ));
        }
        if let Decision::Refused { message, .. } = &server
            && harness(&mut kube, request, &deployed.base)? == Decision::Stored
        {
            // Refused because of the patches (not by the CRD as upstream
            // ships it, before any admission).
            refused += 1;
            let response = policy
                .validate(request, &write.settings, write.snapshot.clone())?
                .response;
            // A create the CRD refuses is one the module denies (an update
            // may meet a schema stricter than the module: it has no
            // exception for what was stored before it).
            if !update && response.allowed && response.patch.is_none() {
                problems.push(format!(
                    "  the API server refuses ({message}) a create the module allows"
                ));
            }
        }
        if problems.is_empty() {
            agree += 1;
        } else {
            disagreements.push(format!("{}:\n{}", write.name, problems.join("\n")));
        }
    }
    let total = agree + disagreements.len();
    eprintln!(
        "live CRD {} {}: {agree}/{total} writes agree ({refused} refused because of the patches, {} patches applied)",
        deployed.dir,
        deployed.rule,
        deployed.patches.len()
    );
    assert!(
        disagreements.is_empty(),
        "{} of {total} writes: the API server and Kubernetes' admission code in the harness \
         disagree:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
    assert!(
        total > 0 && refused > 0,
        "nothing was compared in deploy/{}",
        deployed.dir
    );
    Ok(())
}

#[test]
fn catalog_union_crd_patch_of_deploy_native() -> anyhow::Result<()> {
    one_directory(deployed("native", "catalog-union", None)?)
}

#[test]
fn catalog_union_crd_patch_of_deploy_native_mutating() -> anyhow::Result<()> {
    one_directory(deployed(
        "native-mutating",
        "catalog-union",
        Some("catalog-union.settings.yaml"),
    )?)
}

#[test]
fn group_authorization_crd_patches_of_deploy_native_spec_group() -> anyhow::Result<()> {
    one_directory(deployed(
        "native-spec-group",
        "group-authorization",
        Some("settings.yaml"),
    )?)
}

#[test]
fn group_authorization_crd_patches_of_deploy_native_mutating() -> anyhow::Result<()> {
    one_directory(deployed(
        "native-mutating",
        "group-authorization",
        Some("group-authorization.settings.yaml"),
    )?)
}
