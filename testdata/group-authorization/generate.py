#!/usr/bin/env python3
"""Regenerates the `realworld-*` group-authorization scenarios beside this file.

What it writes: one directory per scenario (request.json, cluster.yaml, optional
settings.json, expect.json), built from the ClusterObjectSets kept verbatim in
`realworld/` (operator-controller's documentation and its e2e feature; see
realworld/README.md for where each comes from) and the identities of
`realworld/rbac.yaml`. Each ClusterObjectSet is judged:

- as operator-controller creates it for a ClusterExtension (`<extension>-<N>`,
  the owner labels and the controller ownerReference `buildClusterObjectSet` and
  `Boxcutter.Apply` set), from its own ServiceAccount (bound to cluster-admin by
  its Helm chart): allowed, without a warning;
- the same object from dana, who may manage the group other-extension only:
  denied, naming the group and the RBAC rule that would grant it;
- as the upstream page writes it (no label: a revision in no group), from dana:
  allowed.

The first ClusterObjectSet of each file is also archived, has its finalizer
removed and is deleted by operator-controller, deleted by the garbage collector
after its ClusterExtension is gone, and archived, deleted and relabelled by
dana; with `requireSpecGroup` (a CRD with spec.group) it is refused, or
backfilled with `backfillGroupFromLabel`.

The names of the directories it wrote are kept in `generated.txt`; on the next
run it removes exactly those before writing again, so scenario directories
written by hand beside them are never touched.

When to run it: after changing a group-authorization message or setting, or a
file in `realworld/`:

    python3 testdata/group-authorization/generate.py

then check the diff and run `olm-guard test testdata/group-authorization`. The
JSON files, not this script, are what the host reads and what review looks at.
Needs PyYAML.
"""
import copy, hashlib, json, os, shutil, uuid

import yaml

ROOT = os.path.dirname(os.path.abspath(__file__))
REALWORLD = os.path.join(ROOT, "realworld")
MANIFEST = os.path.join(ROOT, "generated.txt")
if os.path.isfile(MANIFEST):
    for entry in open(MANIFEST):
        entry = entry.strip()
        if entry and not entry.startswith("#") and "/" not in entry and entry not in (".", ".."):
            path = os.path.join(ROOT, entry)
            if os.path.isdir(path):
                shutil.rmtree(path)
GENERATED = []

LABEL = "olm.operatorframework.io/owner-name"
NOT_AUTHORIZED = "user is not authorized to manage revisions in this group"
CONTROLLER = {
    "username": "system:serviceaccount:olmv1-system:operator-controller-controller-manager",
    "groups": ["system:serviceaccounts", "system:serviceaccounts:olmv1-system", "system:authenticated"],
}
GARBAGE_COLLECTOR = {
    "username": "system:serviceaccount:kube-system:generic-garbage-collector",
    "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"],
}
DANA = {"username": "dana", "groups": ["system:authenticated"]}
RBAC = open(os.path.join(REALWORLD, "rbac.yaml")).read()
# operator-controller's e2e feature fills these per test run.
PLACEHOLDERS = {"${COS_NAME}": "e2e-revision", "${TEST_NAMESPACE}": "e2e-test"}
# The extension each file's ClusterObjectSets belong to, as operator-controller
# would name it.
EXTENSIONS = {
    "docs-concepts-clusterobjectsets.yaml": "my-app",
    "docs-concepts-large-bundle-support.yaml": "my-extension",
    "e2e-features-revision.yaml": "e2e-extension",
}
# The CRD's schema refuses these before any admission policy runs
# (progressDeadlineMinutes has minimum 10 in the CRD operator-controller ships).
def refused_by_schema(obj):
    deadline = obj.get("spec", {}).get("progressDeadlineMinutes")
    return deadline is not None and deadline < 10


def cluster_object_sets(file):
    text = open(os.path.join(REALWORLD, file)).read()
    for key, value in PLACEHOLDERS.items():
        text = text.replace(key, value)
    for index, doc in enumerate(yaml.safe_load_all(text), start=1):
        if doc and doc.get("kind") == "ClusterObjectSet":
            yield index, doc


def as_controller_creates(obj, extension):
    """The object as operator-controller's boxcutter applier writes it."""
    obj = copy.deepcopy(obj)
    revision = obj["spec"]["revision"]
    meta = obj["metadata"]
    meta["name"] = f"{extension}-{revision}"
    meta.setdefault("labels", {}).update({
        "olm.operatorframework.io/owner-kind": "ClusterExtension",
        LABEL: extension,
    })
    uid = str(uuid.UUID(hashlib.sha256(extension.encode()).hexdigest()[:32]))
    meta["ownerReferences"] = [{
        "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension",
        "name": extension, "uid": uid, "controller": True, "blockOwnerDeletion": True,
    }]
    return obj


def stored(obj, **metadata):
    """`obj` as the API server stores it, with the reconciler's finalizer."""
    obj = copy.deepcopy(obj)
    obj["metadata"].setdefault("finalizers", ["olm.operatorframework.io/teardown"])
    obj["metadata"]["uid"] = str(uuid.UUID(hashlib.sha256(obj["metadata"]["name"].encode()).hexdigest()[:32]))
    obj["metadata"].update(metadata)
    return obj


def review(user, operation, obj=None, old=None):
    kind = {"group": "olm.operatorframework.io", "version": "v1", "kind": "ClusterObjectSet"}
    res = {"group": "olm.operatorframework.io", "version": "v1", "resource": "clusterobjectsets"}
    name = (obj or old)["metadata"]["name"]
    req = {
        "uid": str(uuid.UUID(hashlib.sha256(json.dumps([obj, old, operation, user], sort_keys=True).encode()).hexdigest()[:32])),
        "kind": kind, "resource": res, "requestKind": kind, "requestResource": res,
        "name": name, "operation": operation, "userInfo": user, "dryRun": False,
    }
    if obj is not None:
        req["object"] = obj
    if old is not None:
        req["oldObject"] = old
    req["options"] = {"apiVersion": "meta.k8s.io/v1",
                      "kind": {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}[operation]}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}


def scenario(name, request, description, settings=None, **expect):
    d = os.path.join(ROOT, name)
    if os.path.exists(d):
        raise SystemExit(f"{name} exists and is not listed in generated.txt: rename the scenario or move that directory")
    os.makedirs(d)
    GENERATED.append(name)
    with open(os.path.join(d, "request.json"), "w") as f:
        json.dump(request, f, indent=2); f.write("\n")
    with open(os.path.join(d, "cluster.yaml"), "w") as f:
        f.write(RBAC)
    if settings is not None:
        with open(os.path.join(d, "settings.json"), "w") as f:
            json.dump(settings, f, indent=2); f.write("\n")
    e = {"policy": "group-authorization", "description": description}
    e.update(expect)
    with open(os.path.join(d, "expect.json"), "w") as f:
        json.dump(e, f, indent=2); f.write("\n")


ALLOWED = dict(allowed=True, no_warnings=True, mutated=False)
DENIED = dict(allowed=False, no_warnings=True, mutated=False)


def denied_for(group, stored_label=False):
    whose = "the label it is stored with" if stored_label else "its label"
    return dict(DENIED, message_contains=(
        f"{NOT_AUTHORIZED}: user \"dana\" (groups=[system:authenticated]) may not manage group "
        f"\"{group}\" (the group named by {whose} {LABEL}=\"{group}\"); a cluster admin grants it "
        f"with a ClusterRole rule {{apiGroups: [olm.operatorframework.io], resources: "
        f"[clusterobjectsets/groups], resourceNames: [{group}], verbs: [manage]}}"))


for file, extension in EXTENSIONS.items():
    stem = file[:-len(".yaml")]
    first = True
    for index, documented in cluster_object_sets(file):
        if refused_by_schema(documented):
            continue
        prefix = f"realworld-{stem}-{index}"
        where = f"{file} document {index}"
        created = as_controller_creates(documented, extension)
        scenario(f"{prefix}-controller-create-allowed", review(CONTROLLER, "CREATE", created),
                 f"{where} as operator-controller's ServiceAccount (cluster-admin) creates it for "
                 f"ClusterExtension {extension}", **ALLOWED)
        scenario(f"{prefix}-other-group-create-denied", review(DANA, "CREATE", created),
                 f"{where} labelled into {extension}'s group by dana, who may manage other-extension "
                 f"only: the takeover operator-framework/operator-controller#2722 describes",
                 **denied_for(extension))
        scenario(f"{prefix}-as-documented-allowed", review(DANA, "CREATE", documented),
                 f"{where} exactly as the upstream page writes it: no owner label, so in no group, "
                 f"and operator-controller never hands its objects to or from another revision", **ALLOWED)
        if not first:
            continue
        first = False
        old = stored(created)
        archived = copy.deepcopy(old)
        archived["spec"]["lifecycleState"] = "Archived"
        scenario(f"{prefix}-controller-archive-allowed", review(CONTROLLER, "UPDATE", archived, old),
                 f"{where}: operator-controller archives the revision once a newer one rolled out", **ALLOWED)
        deleting = stored(archived, deletionTimestamp="2026-11-25T12:00:00Z")
        released = copy.deepcopy(deleting)
        released["metadata"]["finalizers"] = []
        scenario(f"{prefix}-controller-finalizer-removal-allowed",
                 review(CONTROLLER, "UPDATE", released, deleting),
                 f"{where}: operator-controller removes its teardown finalizer from a revision being "
                 f"deleted", **ALLOWED)
        scenario(f"{prefix}-controller-delete-allowed", review(CONTROLLER, "DELETE", old=stored(archived)),
                 f"{where}: operator-controller deletes an archived revision beyond its retention "
                 f"limit", **ALLOWED)
        scenario(f"{prefix}-garbage-collector-delete-allowed",
                 review(GARBAGE_COLLECTOR, "DELETE", old=old),
                 f"{where}: the garbage collector deletes the revision of a deleted ClusterExtension "
                 f"(setting garbageCollectors, default)", **ALLOWED)
        scenario(f"{prefix}-other-group-archive-denied", review(DANA, "UPDATE", archived, old),
                 f"{where}: dana may not archive a revision of {extension}",
                 **denied_for(extension))
        scenario(f"{prefix}-other-group-delete-denied", review(DANA, "DELETE", old=old),
                 f"{where}: dana may not delete a revision of {extension}",
                 **denied_for(extension, stored_label=True))
        relabelled = copy.deepcopy(old)
        relabelled["metadata"]["labels"][LABEL] = "other-extension"
        scenario(f"{prefix}-other-group-relabel-denied", review(DANA, "UPDATE", relabelled, old),
                 f"{where}: dana relabels {extension}'s revision into her group other-extension",
                 **dict(DENIED, message_contains=(
                     f"may not manage group \"{extension}\" (the group this ClusterObjectSet is stored "
                     f"in, taken from the label it is stored with {LABEL}=\"{extension}\"; the update "
                     f"would move it to group \"other-extension\", which needs the grant on both groups)")))
        own = copy.deepcopy(created)
        own["metadata"]["labels"][LABEL] = "other-extension"
        own["metadata"]["name"] = f"other-extension-{own['spec']['revision']}"
        scenario(f"{prefix}-own-group-create-allowed", review(DANA, "CREATE", own),
                 f"{where} created by dana in her own group other-extension", **ALLOWED)
        if stem != "docs-concepts-clusterobjectsets":
            continue
        scenario(f"{prefix}-garbage-collector-unlisted-delete-denied",
                 review(GARBAGE_COLLECTOR, "DELETE", old=old),
                 f"{where}: with garbageCollectors [] the garbage collector's own grants decide, and "
                 f"its bootstrap ClusterRole has no manage",
                 settings={"garbageCollectors": []},
                 **dict(DENIED, message_contains=(
                     f"user \"system:serviceaccount:kube-system:generic-garbage-collector\"")))
        scenario(f"{prefix}-require-spec-group-controller-create-denied",
                 review(CONTROLLER, "CREATE", created),
                 f"{where}: with requireSpecGroup (a CRD with spec.group) operator-controller's "
                 f"label-only revision is refused: it does not set spec.group",
                 settings={"requireSpecGroup": True},
                 **dict(DENIED, message_contains=(
                     f"spec.group is required: this ClusterObjectSet has label {LABEL}=\"{extension}\": "
                     f"set spec.group: {extension}")))
        scenario(f"{prefix}-require-spec-group-backfill-mutated",
                 review(CONTROLLER, "CREATE", created),
                 f"{where}: with requireSpecGroup and backfillGroupFromLabel the module writes the "
                 f"label into spec.group",
                 settings={"requireSpecGroup": True, "backfillGroupFromLabel": True},
                 allowed=True, mutated=True,
                 patched_object_contains={"spec": {"group": extension}},
                 warnings_contain=[f"spec.group was set to \"{extension}\" from label {LABEL}"])

with open(MANIFEST, "w") as f:
    f.write("# written by generate.py: the scenario directories it owns\n")
    for name in GENERATED:
        f.write(name + "\n")
print(f"wrote {len(GENERATED)} scenarios")
