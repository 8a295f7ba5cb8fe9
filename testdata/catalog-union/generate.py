#!/usr/bin/env python3
"""Regenerates the catalog-union scenarios beside this file.

What it writes: one directory per scenario (request.json, optional
settings.json, expect.json), for every scenario defined below, including the
`realworld-*` ones, which it builds from the CatalogSources kept verbatim in
`realworld/` (see realworld/README.md for where each comes from). The names of
the directories it wrote are kept in `generated.txt`; on the next run it
removes exactly those before writing again, so scenario directories written by
hand beside them are never touched.

When to run it: after changing a message, a setting or a scenario of
catalog-union, or after adding a file to `realworld/`:

    python3 testdata/catalog-union/generate.py

then check the diff and run `olm-guard test testdata/catalog-union --dist dist`.
The JSON files, not this script, are what the host reads and what review
looks at; this script only keeps them consistent. Needs PyYAML.
"""
import json, os, shutil, copy, hashlib, uuid

import yaml

ROOT = os.path.dirname(os.path.abspath(__file__))
MANIFEST = os.path.join(ROOT, "generated.txt")
PREVIOUS = []
if os.path.isfile(MANIFEST):
    PREVIOUS = [line.strip() for line in open(MANIFEST)
                if line.strip() and not line.startswith("#") and "/" not in line and line.strip() not in (".", "..")]
for entry in PREVIOUS:
    path = os.path.join(ROOT, entry)
    if os.path.isdir(path):
        shutil.rmtree(path)
GENERATED = []

# operatorhubio-catalog exactly as OLM's quickstart ships it
# (operator-framework/operator-lifecycle-manager deploy/upstream/quickstart/olm.yaml, also in
# realworld/olm-quickstart-operatorhubio-catalog.yaml beside this script).
OPERATORHUBIO = {
    "apiVersion": "operators.coreos.com/v1alpha1",
    "kind": "CatalogSource",
    "metadata": {"name": "operatorhubio-catalog", "namespace": "olm"},
    "spec": {
        "sourceType": "grpc",
        "image": "quay.io/operatorhubio/catalog:latest",
        "displayName": "Community Operators",
        "publisher": "OperatorHub.io",
        "updateStrategy": {"registryPoll": {"interval": "60m"}},
    },
}
DISPLAY = {k: OPERATORHUBIO["spec"][k] for k in ("displayName", "publisher", "updateStrategy")}

def catalog(spec, name="operatorhubio-catalog", namespace="olm", drop_spec=False):
    obj = {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
           "metadata": {"name": name, "namespace": namespace}}
    if not drop_spec:
        obj["spec"] = spec
    return obj

def legacy(**fields):
    spec = dict(fields)
    spec.update(DISPLAY)
    return catalog(spec)

def member(**fields):
    spec = dict(DISPLAY)
    spec.update(fields)
    return catalog(spec)

def review(obj, operation="CREATE", old=None, kind=None, resource="catalogsources", sub=None):
    kind = kind or {"group": "operators.coreos.com", "version": "v1alpha1", "kind": "CatalogSource"}
    res = {"group": kind["group"], "version": kind["version"], "resource": resource}
    meta = (obj or old or {}).get("metadata", {})
    req = {
        "uid": str(uuid.UUID(hashlib.sha256(json.dumps([obj, old, operation, sub], sort_keys=True).encode()).hexdigest()[:32])),
        "kind": kind, "resource": res, "requestKind": kind, "requestResource": res,
        "name": meta.get("name", ""), "namespace": meta.get("namespace", ""),
        "operation": operation,
        "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]},
        "dryRun": False,
    }
    if sub:
        req["subResource"] = sub
        req["requestSubResource"] = sub
    if obj is not None:
        req["object"] = obj
    if old is not None:
        req["oldObject"] = old
    req["options"] = {"apiVersion": "meta.k8s.io/v1",
                      "kind": {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}.get(operation, "CreateOptions")}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}

def scenario(name, request, description, settings=None, **expect):
    d = os.path.join(ROOT, name)
    if os.path.exists(d):
        raise SystemExit(f"{name} exists and is not listed in generated.txt: rename the scenario or move that directory")
    os.makedirs(d)
    GENERATED.append(name)
    with open(os.path.join(d, "request.json"), "w") as f:
        json.dump(request, f, indent=2); f.write("\n")
    if settings is not None:
        with open(os.path.join(d, "settings.json"), "w") as f:
            json.dump(settings, f, indent=2); f.write("\n")
    e = {"policy": "catalog-union", "description": description}
    e.update(expect)
    # Every verdict says what it expects of warnings and patches, as
    # scripts/state-expectations.py writes it (HACKING.md, "Scenario format").
    if "allowed" in e and "settings_error_contains" not in e:
        if "warnings_contain" not in e:
            e.setdefault("no_warnings", True)
        e.setdefault("mutated", "patched_object_contains" in e)
    with open(os.path.join(d, "expect.json"), "w") as f:
        json.dump(e, f, indent=2); f.write("\n")

DENY = dict(allowed=False, mutated=False)
CLEAN = dict(allowed=True, no_warnings=True, mutated=False)
MIGRATE = {"migrateLegacy": True}
MIGRATE_ONLY = {"allowLegacy": False, "migrateLegacy": True}
NO_LEGACY = {"allowLegacy": False}
WARN = {"warnLegacy": True}
# Union terms are for clusters whose CRD has the union members; the default
# speaks the fields of the CRD clusters run today.
LEGACY_HOW = ("set spec.sourceType: grpc with spec.image (an operator-registry image) or spec.address "
              "(host:port of a running registry), or spec.sourceType: configmap with spec.configMap "
              "(the name of a ConfigMap)")

# ---- rules 1 and 2: the alternatives ----
IMAGE_MEMBER = {"catalogImage": "quay.io/operatorhubio/catalog:latest", "podSpecOverrides": {"nodeSelector": {"label": "value"}}}
scenario("r2-image-source-accepted", review(member(catalogImageSource=IMAGE_MEMBER)),
         "rule 2: the enhancement's own catalogImageSource example alone is one alternative", **CLEAN)
scenario("r2-service-source-accepted", review(member(catalogServiceSource={"address": "operatorhubio-catalog.olm.svc:50051"})),
         "rule 2: catalogServiceSource alone with host:port", **CLEAN)
scenario("r2-configmap-source-accepted", review(member(configMapSource={"configMap": "somemap"})),
         "rule 2: the enhancement's configMapSource example alone", **CLEAN)
scenario("r2-two-members-denied", review(member(catalogImageSource=IMAGE_MEMBER, catalogServiceSource={"address": "operatorhubio-catalog.olm.svc:50051"})),
         "rule 2: two union members are two alternatives; the message names both",
         message_contains="(oneOf) but configures 2: spec.catalogImageSource and spec.catalogServiceSource; keep one of them", **DENY)
scenario("r2-three-members-denied", review(member(catalogImageSource=IMAGE_MEMBER, catalogServiceSource={"address": "h.ns.svc:50051"}, configMapSource={"configMap": "somemap"})),
         "rule 2: all three members",
         message_contains="configures 3: spec.catalogImageSource, spec.catalogServiceSource and spec.configMapSource", **DENY)
scenario("r2-member-and-legacy-denied", review(member(catalogImageSource={"catalogImage": "quay.io/operatorhubio/catalog:latest"}, sourceType="grpc", image="quay.io/operatorhubio/catalog:latest")),
         "rules 1+2: with allowLegacy (default) sourceType+image is an alternative too, so a member beside it makes two",
         message_contains="oneOf) but configures 2: spec.catalogImageSource and the legacy spec.sourceType and spec.image; keep one of them; to keep a union member, remove the deprecated spec.sourceType and spec.image", **DENY)
scenario("r2-no-source-denied", review(catalog(dict(DISPLAY))),
         "rule 2: display fields only configure no catalog; by default the advice names only the fields of today's CRD",
         message_contains="exactly one catalog source but configures none; " + LEGACY_HOW, **DENY)
scenario("r2-no-source-warnlegacy-denied", review(catalog(dict(DISPLAY))),
         "rule 2 with warnLegacy (a CRD with the union members): the advice names the union members", settings=WARN,
         message_contains="oneOf) but configures none; set exactly one of spec.catalogImageSource.catalogImage", **DENY)
scenario("r2-missing-spec-denied", review(catalog(None, drop_spec=True)),
         "rule 1: a missing spec is {} and configures nothing", message_contains="exactly one catalog source but configures none", **DENY)
scenario("r2-null-spec-denied", review(catalog(None)),
         "rule 1: spec: null is {}", message_contains="exactly one catalog source but configures none", **DENY)
scenario("r2-empty-member-counts-denied", review(member(catalogImageSource={}, configMapSource={"configMap": "somemap"})),
         "rule 1: an empty object is a present key (the oneOf tests presence), so this is two alternatives",
         message_contains="configures 2: spec.catalogImageSource and spec.configMapSource", **DENY)
scenario("r1-null-valued-keys-accepted", review(member(catalogImageSource=None, catalogServiceSource=None, sourceType=None, image=None, address=None, configMap=None, grpcPodConfig=None, configMapSource={"configMap": "somemap"})),
         "rule 1: keys with null values are absent: only configMapSource counts, nothing is stray", **CLEAN)
scenario("r1-null-valued-keys-only-denied", review(member(catalogImageSource=None, sourceType=None, image=None)),
         "rule 1: nulls configure nothing", message_contains="exactly one catalog source but configures none", **DENY)
scenario("r1-null-address-beside-legacy-image-accepted", review(legacy(sourceType="grpc", image="quay.io/operatorhubio/catalog:latest", address=None)),
         "rule 1: address: null is absent, so image is not combined with an address", **CLEAN)
scenario("r2-image-without-sourcetype-denied", review(member(image="quay.io/operatorhubio/catalog:latest")),
         "rules 1+2: image without sourceType is no legacy alternative; the message says why and what to add, in today's fields",
         message_contains="(spec.image has no spec.sourceType, so no catalog is configured; add spec.sourceType: grpc for spec.image); " + LEGACY_HOW, **DENY)
scenario("r2-image-without-sourcetype-warnlegacy-denied", review(member(image="quay.io/operatorhubio/catalog:latest")),
         "rules 1+2 with warnLegacy: the advice names the union member instead", settings=WARN,
         message_contains="the deprecated spec.image has no spec.sourceType, so no legacy source is configured; rather than adding one, write spec.catalogImageSource.catalogImage instead", **DENY)
scenario("r2-sourcetype-alone-denied", review(member(sourceType="grpc")),
         "rules 1+2: sourceType alone names no catalog",
         message_contains="spec.sourceType \"grpc\" alone names no catalog", **DENY)
scenario("r2-grpcpodconfig-alone-denied", review(member(grpcPodConfig={"nodeSelector": {"kubernetes.io/os": "linux"}})),
         "rules 1+2: grpcPodConfig alone configures no catalog",
         message_contains="exactly one catalog source but configures none (spec.grpcPodConfig only tunes the registry pod of spec.sourceType: grpc with spec.image and names no catalog); " + LEGACY_HOW, **DENY)

# ---- rule 3: values OLM would ignore ----
for key, value, replacement, base, base_name in [
    ("sourceType", "grpc", None, {"catalogServiceSource": {"address": "operatorhubio-catalog.olm.svc:50051"}}, "catalogServiceSource"),
    ("image", "quay.io/operatorhubio/catalog:latest", "spec.catalogImageSource.catalogImage", {"configMapSource": {"configMap": "somemap"}}, "configMapSource"),
    ("address", "operatorhubio-catalog.olm.svc:50051", "spec.catalogServiceSource.address", {"catalogImageSource": {"catalogImage": "quay.io/operatorhubio/catalog:latest"}}, "catalogImageSource"),
    ("configMap", "somemap", "spec.configMapSource.configMap", {"catalogServiceSource": {"address": "operatorhubio-catalog.olm.svc:50051"}}, "catalogServiceSource"),
    ("grpcPodConfig", {"priorityClassName": "system-cluster-critical"}, "spec.catalogImageSource.podSpecOverrides", {"catalogImageSource": {"catalogImage": "quay.io/operatorhubio/catalog:latest"}}, "catalogImageSource"),
]:
    spec = dict(base); spec[key] = value
    msg = f"spec.{key} is deprecated and OLM ignores it beside spec.{base_name}: remove it"
    if replacement:
        msg += f" (its replacement is {replacement})"
    scenario(f"r3-stray-{key.lower()}-beside-member-denied", review(member(**spec)),
             f"rule 3: deprecated {key} beside a union member is named", message_contains=msg, **DENY)
scenario("r3-legacy-grpc-image-address-denied", review(legacy(sourceType="grpc", image="quay.io/operatorhubio/catalog:latest", address="operatorhubio-catalog.olm.svc:50051")),
         "rule 3: legacy grpc + image + address: OLM runs the image and ignores address",
         message_contains="spec.address is ignored because spec.image is set (OLM runs the image)", **DENY)
scenario("r3-legacy-grpc-image-address-migrate-denied", review(legacy(sourceType="grpc", image="quay.io/operatorhubio/catalog:latest", address="operatorhubio-catalog.olm.svc:50051")),
         "rules 3+6: an invalid legacy spec is not migrated", settings=MIGRATE,
         message_contains="spec.address is ignored because spec.image is set", **DENY)
scenario("r3-legacy-grpc-configmap-denied", review(legacy(sourceType="grpc", image="quay.io/operatorhubio/catalog:latest", configMap="somemap")),
         "rule 3: configMap with sourceType grpc", message_contains="spec.configMap is ignored with spec.sourceType \"grpc\"", **DENY)
scenario("r3-legacy-configmap-image-denied", review(legacy(sourceType="configmap", configMap="somemap", image="quay.io/operatorhubio/catalog:latest")),
         "rule 3: image with sourceType configmap", message_contains="spec.image is ignored with spec.sourceType \"configmap\"", **DENY)
scenario("r3-legacy-internal-address-denied", review(legacy(sourceType="internal", configMap="somemap", address="operatorhubio-catalog.olm.svc:50051")),
         "rule 3: address with sourceType internal", message_contains="spec.address is ignored with spec.sourceType \"internal\"", **DENY)
scenario("r3-legacy-grpc-address-grpcpodconfig-denied", review(legacy(sourceType="grpc", address="operatorhubio-catalog.olm.svc:50051", grpcPodConfig={"nodeSelector": {"kubernetes.io/os": "linux"}})),
         "rule 3: grpcPodConfig without image (address-only sources have no pod)",
         message_contains="spec.grpcPodConfig is only used with spec.sourceType \"grpc\" and spec.image", **DENY)
scenario("r3-legacy-configmap-grpcpodconfig-denied", review(legacy(sourceType="configmap", configMap="somemap", grpcPodConfig={"priorityClassName": "system-cluster-critical"})),
         "rule 3: grpcPodConfig without image (configmap source)",
         message_contains="spec.grpcPodConfig is only used with", **DENY)
scenario("r3-unknown-sourcetype-denied", review(legacy(sourceType="oci", image="quay.io/operatorhubio/catalog:latest")),
         "rule 3: a sourceType OLM does not know",
         message_contains="spec.sourceType \"oci\" is not a source type OLM knows: OLM accepts only \"grpc\", \"configmap\", \"internal\"", **DENY)
scenario("r3-sourcetype-wrong-case-denied", review(legacy(sourceType="gRPC", image="quay.io/operatorhubio/catalog:latest")),
         "rule 3: OLM matches sourceType exactly; the message suggests the spelling",
         message_contains="did you mean \"grpc\"?", **DENY)
scenario("r3-unknown-sourcetype-migrate-denied", review(legacy(sourceType="ConfigMap", configMap="somemap")),
         "rules 3+6: an unknown sourceType is not migrated", settings=MIGRATE,
         message_contains="spec.sourceType \"ConfigMap\" is not a source type OLM knows (did you mean \"configmap\"?)", **DENY)

# ---- rule 4: a member must configure something ----
scenario("r4-empty-catalogimage-denied", review(member(catalogImageSource={"catalogImage": "", "podSpecOverrides": {"priorityClassName": "high"}})),
         "rule 4: catalogImage must be non-empty", message_contains="spec.catalogImageSource.catalogImage is empty", **DENY)
scenario("r4-missing-catalogimage-denied", review(member(catalogImageSource={"podSpecOverrides": {"nodeSelector": {"label": "value"}}})),
         "rule 4: catalogImage must be set", message_contains="spec.catalogImageSource.catalogImage is missing", **DENY)
scenario("r4-address-without-port-denied", review(member(catalogServiceSource={"address": "some.namespace.svc"})),
         "rule 4: the enhancement's own example address has no port; OLM could not dial it",
         message_contains="spec.catalogServiceSource.address \"some.namespace.svc\" is not host:port (the port is missing)", **DENY)
scenario("r4-address-port-out-of-range-denied", review(member(catalogServiceSource={"address": "operatorhubio-catalog.olm.svc:70000"})),
         "rule 4: port above 65535", message_contains="the port 70000 is outside 1-65535", **DENY)
scenario("r4-address-port-zero-denied", review(member(catalogServiceSource={"address": "operatorhubio-catalog.olm.svc:0"})),
         "rule 4: port 0", message_contains="the port 0 is outside 1-65535", **DENY)
scenario("r4-address-ipv6-accepted", review(member(catalogServiceSource={"address": "[fd00:10:96::a]:50051"})),
         "rule 4: a bracketed IPv6 host with a port is host:port", **CLEAN)
scenario("r4-empty-address-denied", review(member(catalogServiceSource={"address": ""})),
         "rule 4: address must be non-empty", message_contains="spec.catalogServiceSource.address is empty: write the host:port", **DENY)
scenario("r4-empty-configmap-denied", review(member(configMapSource={"configMap": ""})),
         "rule 4: configMap must be non-empty", message_contains="spec.configMapSource.configMap is empty", **DENY)
scenario("r4-legacy-empty-image-denied", review(legacy(sourceType="grpc", image="")),
         "rule 4 for the legacy form: image must name an image", message_contains="spec.image is empty", **DENY)
scenario("r4-legacy-address-without-port-denied", review(legacy(sourceType="grpc", address="operatorhubio-catalog.olm.svc")),
         "rule 4 for the legacy form: address must be host:port",
         message_contains="spec.address \"operatorhubio-catalog.olm.svc\" is not host:port", **DENY)

# ---- bad input ----
scenario("input-spec-not-object-denied", review(catalog("grpc")),
         "a spec that is not an object is a clear rejection",
         message_contains="spec must be an object holding sourceType and one of image, address or configMap, but it is a string", **DENY)
scenario("input-wrong-field-type-denied", review(member(catalogImageSource={"catalogImage": "quay.io/operatorhubio/catalog:latest", "podSpecOverrides": {"tolerations": [{"key": "infra", "tolerationSeconds": "300"}]}})),
         "a field of the wrong type is named by its path",
         message_contains="spec.catalogImageSource.podSpecOverrides.tolerations[0].tolerationSeconds has the wrong type (invalid type: string \"300\", expected an integer)", **DENY)
scenario("input-list-instead-of-object-denied", review(member(catalogImageSource=["quay.io/operatorhubio/catalog:latest"])),
         "a member given as a list is not read as an object",
         message_contains="spec.catalogImageSource has the wrong type (invalid type: sequence, expected an object)", **DENY)

# ---- rule 5: legacy accepted; warned about only with warnLegacy ----
POD_CONFIG = {
    "nodeSelector": {"node-role.kubernetes.io/infra": ""},
    "tolerations": [{"key": "node-role.kubernetes.io/infra", "operator": "Exists", "effect": "NoSchedule"}],
    "priorityClassName": "system-cluster-critical",
}
LEGACY_SPECS = [
    ("grpc-image", copy.deepcopy(OPERATORHUBIO), "OLM's quickstart operatorhubio-catalog (sourceType grpc + image)",
     ["the deprecated spec.sourceType and spec.image configure this catalog; write spec.catalogImageSource: {\"catalogImage\":\"quay.io/operatorhubio/catalog:latest\"} instead"]),
    ("grpc-image-podconfig", legacy(sourceType="grpc", image="quay.io/operatorhubio/catalog:latest", grpcPodConfig=POD_CONFIG),
     "grpc + image + grpcPodConfig; the warning names catalogImageSource with podSpecOverrides",
     ["the deprecated spec.sourceType, spec.image and spec.grpcPodConfig configure this catalog", "\"podSpecOverrides\":{\"nodeSelector\""]),
    ("grpc-address", legacy(sourceType="grpc", address="operatorhubio-catalog.olm.svc:50051"), "grpc + address",
     ["write spec.catalogServiceSource: {\"address\":\"operatorhubio-catalog.olm.svc:50051\"} instead"]),
    ("configmap", legacy(sourceType="configmap", configMap="somemap"), "configmap + configMap",
     ["write spec.configMapSource: {\"configMap\":\"somemap\"} instead"]),
    ("internal", legacy(sourceType="internal", configMap="somemap"), "internal (alias of configmap) + configMap",
     ["write spec.configMapSource: {\"configMap\":\"somemap\"} instead"]),
]
for name, obj, what, warnings in LEGACY_SPECS:
    scenario(f"r5-legacy-{name}-accepted", review(copy.deepcopy(obj)),
             f"rule 5: {what} is the normal form on today's CRD: accepted with default settings and no warning", **CLEAN)
    scenario(f"r5-warnlegacy-{name}-accepted", review(copy.deepcopy(obj)),
             f"rule 5 with warnLegacy: {what} is accepted with a warning naming its union member",
             settings=WARN, allowed=True, mutated=False, warnings_contain=warnings)
UNPORTABLE_WARN = legacy(sourceType="grpc", image="quay.io/operatorhubio/catalog:latest",
                         grpcPodConfig={"securityContextConfig": "restricted", "memoryTarget": "30Mi", "nodeSelector": {"kubernetes.io/os": "linux"}})
scenario("r5-warnlegacy-unportable-podconfig-accepted", review(UNPORTABLE_WARN),
         "rule 5 with warnLegacy: the advice never drops a setting silently; it names the grpcPodConfig fields podSpecOverrides cannot hold",
         settings=WARN, allowed=True, mutated=False,
         warnings_contain=["write spec.catalogImageSource.catalogImage: \"quay.io/operatorhubio/catalog:latest\" instead; but spec.grpcPodConfig.securityContextConfig and spec.grpcPodConfig.memoryTarget has no place in spec.catalogImageSource.podSpecOverrides, which holds only nodeSelector, tolerations and priorityClassName, so that form would drop spec.grpcPodConfig.securityContextConfig and spec.grpcPodConfig.memoryTarget"])
scenario("r5-unportable-podconfig-accepted", review(UNPORTABLE_WARN),
         "rule 5: the same spec with default settings: accepted, no warning", **CLEAN)

# ---- allowLegacy: false ----
scenario("setting-allowlegacy-false-legacy-denied", review(copy.deepcopy(OPERATORHUBIO)),
         "allowLegacy false: the quickstart catalog is no alternative; the message names the replacement", settings=NO_LEGACY,
         message_contains="(oneOf) but configures none (the deprecated spec.sourceType and spec.image are not accepted here because allowLegacy is false; replace spec.image with spec.catalogImageSource.catalogImage)", **DENY)
scenario("setting-allowlegacy-false-configmap-denied", review(legacy(sourceType="configmap", configMap="somemap")),
         "allowLegacy false: legacy configmap", settings=NO_LEGACY,
         message_contains="replace spec.configMap with spec.configMapSource.configMap", **DENY)
scenario("setting-allowlegacy-false-member-accepted", review(member(catalogImageSource=IMAGE_MEMBER)),
         "allowLegacy false: union members are unaffected", settings=NO_LEGACY, **CLEAN)
scenario("setting-allowlegacy-false-stray-denied", review(member(catalogImageSource={"catalogImage": "quay.io/operatorhubio/catalog:latest"}, sourceType="grpc", image="quay.io/operatorhubio/catalog:latest")),
         "allowLegacy false: legacy keys beside a member are no alternative but stray fields (rule 3)", settings=NO_LEGACY,
         message_contains="spec.sourceType is deprecated and OLM ignores it beside spec.catalogImageSource: remove it; spec.image is deprecated", **DENY)

# ---- rule 6: migrateLegacy ----
MIGRATIONS = [
    ("grpc-image", copy.deepcopy(OPERATORHUBIO),
     {"catalogImageSource": {"catalogImage": "quay.io/operatorhubio/catalog:latest"}}),
    ("grpc-image-podconfig", legacy(sourceType="grpc", image="quay.io/operatorhubio/catalog:latest", grpcPodConfig=dict(POD_CONFIG, affinity=None), address=None),
     {"catalogImageSource": {"catalogImage": "quay.io/operatorhubio/catalog:latest", "podSpecOverrides": POD_CONFIG}}),
    ("grpc-address", legacy(sourceType="grpc", address="operatorhubio-catalog.olm.svc:50051"),
     {"catalogServiceSource": {"address": "operatorhubio-catalog.olm.svc:50051"}}),
    ("configmap", legacy(sourceType="configmap", configMap="somemap"),
     {"configMapSource": {"configMap": "somemap"}}),
    ("internal", legacy(sourceType="internal", configMap="somemap"),
     {"configMapSource": {"configMap": "somemap"}}),
]
for name, obj, new_member in MIGRATIONS:
    expected_spec = dict(new_member); expected_spec.update(DISPLAY)
    scenario(f"r6-migrate-{name}", review(obj),
             f"rule 6: migrateLegacy rewrites legacy {name} to {list(new_member)[0]} and keeps the display fields",
             settings=MIGRATE, allowed=True, mutated=True,
             patched_object_contains={"metadata": obj["metadata"], "spec": expected_spec},
             warnings_contain=[f"were rewritten to spec.{list(new_member)[0]} (migrateLegacy)"])
    migrated = catalog(expected_spec)
    for label, settings in [("", MIGRATE), ("-allowlegacy-false", NO_LEGACY)]:
        scenario(f"r6-migrated-{name}{label}-accepted", review(migrated),
                 f"rule 6: the object migrate-{name} produces is accepted with no warning and no further mutation",
                 settings=settings, **CLEAN)
scenario("r6-migrate-only-grpc-image", review(copy.deepcopy(OPERATORHUBIO)),
         "rule 6 with allowLegacy false: a valid legacy spec is still migrated (it is not what gets stored)",
         settings=MIGRATE_ONLY, allowed=True, mutated=True,
         warnings_contain=["were rewritten to spec.catalogImageSource (migrateLegacy)"],
         patched_object_contains={"spec": dict(DISPLAY, catalogImageSource={"catalogImage": "quay.io/operatorhubio/catalog:latest"})})
UNPORTABLE = legacy(sourceType="grpc", image="quay.io/operatorhubio/catalog:latest", grpcPodConfig={"securityContextConfig": "restricted", "nodeSelector": {"kubernetes.io/os": "linux"}})
scenario("r6-migrate-unportable-podconfig-accepted", review(UNPORTABLE),
         "rule 6: grpcPodConfig.securityContextConfig has no place in podSpecOverrides: not migrated, accepted as legacy with the reason",
         settings=MIGRATE, allowed=True, mutated=False,
         warnings_contain=["this spec was not migrated: spec.grpcPodConfig.securityContextConfig has no place in spec.catalogImageSource.podSpecOverrides", "write spec.catalogImageSource.catalogImage: \"quay.io/operatorhubio/catalog:latest\" instead"])
scenario("r6-migrate-only-unportable-podconfig-denied", review(UNPORTABLE),
         "rule 6 with allowLegacy false: a legacy spec that cannot be migrated is denied with the reason",
         settings=MIGRATE_ONLY,
         message_contains="are not accepted here because allowLegacy is false, and this spec cannot be migrated: spec.grpcPodConfig.securityContextConfig has no place", **DENY)
scenario("r6-migrate-member-untouched", review(member(catalogImageSource=IMAGE_MEMBER)),
         "rule 6: a spec already in the new form is not touched", settings=MIGRATE, **CLEAN)

# ---- operations and other requests ----
stored = copy.deepcopy(OPERATORHUBIO)
stored["metadata"].update({"uid": "b5b7e1f2-7c1d-4a53-a0a5-9d5c0f2f8e11", "resourceVersion": "1234", "generation": 1, "creationTimestamp": "2024-05-01T10:00:00Z"})
bad_update = copy.deepcopy(stored); bad_update["spec"]["address"] = "operatorhubio-catalog.olm.svc:50051"; bad_update["metadata"]["generation"] = 2
scenario("op-update-denied", review(bad_update, "UPDATE", old=stored),
         "UPDATE is checked: adding address to an image source", message_contains="spec.address is ignored", **DENY)
good_update = copy.deepcopy(stored); good_update["spec"]["updateStrategy"]["registryPoll"]["interval"] = "30m"
scenario("op-update-legacy-accepted", review(good_update, "UPDATE", old=stored),
         "UPDATE of a valid legacy object is accepted, with no warning by default", **CLEAN)
scenario("op-update-legacy-warnlegacy-accepted", review(good_update, "UPDATE", old=stored),
         "UPDATE of a valid legacy object with warnLegacy is accepted with the warning", settings=WARN,
         allowed=True, mutated=False, warnings_contain=["spec.catalogImageSource"])
scenario("op-update-migrated", review(good_update, "UPDATE", old=stored),
         "UPDATE with migrateLegacy rewrites the object", settings=MIGRATE, allowed=True, mutated=True,
         warnings_contain=["were rewritten to spec.catalogImageSource (migrateLegacy)"],
         patched_object_contains={"metadata": {"uid": "b5b7e1f2-7c1d-4a53-a0a5-9d5c0f2f8e11"}, "spec": {"catalogImageSource": {"catalogImage": "quay.io/operatorhubio/catalog:latest"}, "updateStrategy": {"registryPoll": {"interval": "30m"}}}})
broken = catalog({"catalogImageSource": {}, "sourceType": "oci", "image": 5})
scenario("op-delete-accepted", review(None, "DELETE", old=broken),
         "DELETE is not checked, even with settings that deny legacy", settings=MIGRATE_ONLY, **CLEAN)
scenario("op-status-subresource-accepted", review(broken, "UPDATE", old=broken, sub="status"),
         "status updates (OLM's catalog operator) are not checked", **CLEAN)
scenario("op-other-kind-accepted", review(
    {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription", "metadata": {"name": "my-operator", "namespace": "operators"},
     "spec": {"channel": "stable", "name": "my-operator", "source": "operatorhubio-catalog", "sourceNamespace": "olm", "image": "x"}},
    kind={"group": "operators.coreos.com", "version": "v1alpha1", "kind": "Subscription"}, resource="subscriptions"),
    "other kinds are not checked", **CLEAN)

# ---- settings ----
scenario("settings-unknown-key-refused", review(copy.deepcopy(OPERATORHUBIO)), "settings: a misspelt key is refused",
         settings={"allowlegacy": False}, settings_error_contains="unknown field `allowlegacy`")
scenario("settings-wrong-type-refused", review(copy.deepcopy(OPERATORHUBIO)), "settings: migrateLegacy must be a boolean",
         settings={"migrateLegacy": "true"}, settings_error_contains="expected a boolean")
scenario("settings-defaults-explicit", review(copy.deepcopy(OPERATORHUBIO)), "settings: explicit defaults behave like none",
         settings={"allowLegacy": True, "warnLegacy": False, "migrateLegacy": False}, **CLEAN)
scenario("settings-warnlegacy-wrong-type-refused", review(copy.deepcopy(OPERATORHUBIO)), "settings: warnLegacy must be a boolean",
         settings={"warnLegacy": "yes"}, settings_error_contains="expected a boolean")

# ---- rule 7: an UPDATE is judged on what it changes ----
def stored_object(spec, **metadata):
    obj = catalog(spec, name="my-catalog", namespace="olm")
    obj["metadata"].update({"uid": "0c1f5a4e-6f55-4c7a-9a57-3f1f1d2b7c01", "resourceVersion": "4711", "generation": 1,
                            "creationTimestamp": "2024-05-01T10:00:00Z"})
    obj["metadata"].update(metadata)
    return obj

def changed(obj, **metadata):
    new = copy.deepcopy(obj)
    new["metadata"].update(metadata)
    return new

STORED_INVALID = [
    ("grpc-alone", {"sourceType": "grpc", "displayName": "My Catalog"}, "spec.sourceType \"grpc\" alone names no catalog"),
    ("image-address", {"sourceType": "grpc", "image": "quay.io/example/catalog:v1", "address": "my-catalog.olm.svc:50051"},
     "spec.address is ignored because spec.image is set"),
    ("configmap-grpc", {"sourceType": "grpc", "image": "quay.io/example/catalog:v1", "configMap": "my-catalog"},
     "spec.configMap is ignored with spec.sourceType \"grpc\""),
]
LAST_APPLIED = {"kubectl.kubernetes.io/last-applied-configuration": "{\"apiVersion\":\"operators.coreos.com/v1alpha1\",\"kind\":\"CatalogSource\"}"}
OWNER = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "catalog-owner", "uid": "5d0b2f5e-1a7b-4a7e-8d0c-4b3c2a1f0e9d"}]
STALE_WARNING = "this CatalogSource already breaks catalog-union and this update leaves its catalog configuration as it was, so the update is allowed; fix it: "
for name, spec, problem in STORED_INVALID:
    old = stored_object(spec)
    for change, new, what in [
        ("label", changed(old, labels={"team": "payments"}), "adds a label"),
        ("last-applied", changed(old, annotations=LAST_APPLIED), "adds kubectl apply's last-applied configuration"),
        ("ownerreference", changed(old, ownerReferences=OWNER), "adds an owner reference"),
    ]:
        scenario(f"r7-stored-{name}-{change}-accepted", review(new, "UPDATE", old=old),
                 f"rule 7: a CatalogSource stored before the policy ({problem}) is not frozen: an UPDATE that only {what} is accepted with a warning naming the problem",
                 allowed=True, mutated=False, warnings_contain=[STALE_WARNING, problem])
    terminating = stored_object(spec, finalizers=["example.com/cleanup"], deletionTimestamp="2024-06-01T10:00:00Z")
    released = changed(terminating); del released["metadata"]["finalizers"]
    scenario(f"r7-stored-{name}-finalizer-removed-accepted", review(released, "UPDATE", old=terminating),
             f"rule 7: removing the last finalizer of a stored invalid CatalogSource ({problem}) is accepted, so it can be deleted",
             allowed=True, mutated=False, warnings_contain=[STALE_WARNING, problem])
    scenario(f"r7-stored-{name}-label-allowlegacy-false-accepted", review(changed(old, labels={"team": "payments"}), "UPDATE", old=old),
             "rule 7 under allowLegacy: false (the stored legacy spec is now a violation too): metadata updates still pass",
             settings=NO_LEGACY, allowed=True, mutated=False, warnings_contain=[STALE_WARNING])
    scenario(f"r7-stored-{name}-create-denied", review(copy.deepcopy(old)),
             f"rule 7's counterpart: the same object as a CREATE is denied ({problem})",
             message_contains=problem, **DENY)
old = stored_object({"sourceType": "grpc", "image": "quay.io/example/catalog:v1", "address": "my-catalog.olm.svc:50051", "configMap": "my-catalog"})
part = copy.deepcopy(old); del part["spec"]["configMap"]
scenario("r7-stored-update-fixes-part-accepted", review(part, "UPDATE", old=old),
         "rule 7: an UPDATE that removes one of two stored problems is accepted with a warning naming the one left",
         allowed=True, mutated=False,
         warnings_contain=["this update fixes part of what this CatalogSource breaks in catalog-union, so it is allowed; still to fix: spec.address is ignored because spec.image is set"])
fixed = copy.deepcopy(part); del fixed["spec"]["address"]
scenario("r7-stored-update-fixes-all-accepted", review(fixed, "UPDATE", old=old),
         "rule 7: an UPDATE that repairs a stored invalid object is accepted with no warning", **CLEAN)
old = stored_object({"sourceType": "grpc", "image": "quay.io/example/catalog:v1", "address": "my-catalog.olm.svc:50051"})
worse = copy.deepcopy(old); worse["spec"]["configMap"] = "my-catalog"
scenario("r7-stored-update-adds-violation-denied", review(worse, "UPDATE", old=old),
         "rule 7: an UPDATE that writes a new violation beside a stored one is denied, naming both",
         message_contains="spec.configMap is ignored with spec.sourceType \"grpc\": remove it, or set spec.sourceType \"configmap\" if the catalog is in that ConfigMap; spec.address is ignored because spec.image is set", **DENY)
old = stored_object({"sourceType": "grpc", "displayName": "My Catalog"})
other = copy.deepcopy(old); other["spec"]["address"] = "my-catalog.olm.svc"
scenario("r7-stored-update-different-violation-denied", review(other, "UPDATE", old=old),
         "rule 7: an UPDATE that replaces a stored violation by a different one is denied",
         message_contains="spec.address \"my-catalog.olm.svc\" is not host:port (the port is missing)", **DENY)
old = stored_object({"catalogImageSource": {}, "configMapSource": {"configMap": "my-catalog"}})
scenario("r7-stored-two-members-label-accepted", review(changed(old, labels={"team": "payments"}), "UPDATE", old=old),
         "rule 7: a stored object with two union members takes a metadata-only UPDATE, with the oneOf problem in the warning",
         allowed=True, mutated=False, warnings_contain=[STALE_WARNING, "(oneOf) but configures 2"])
scenario("r7-no-old-object-denied", review(changed(stored_object({"sourceType": "grpc"}), labels={"a": "b"}), "UPDATE"),
         "rule 7: an UPDATE without oldObject is judged like a CREATE", message_contains="alone names no catalog", **DENY)

# ---- real CatalogSources, verbatim from upstream (realworld/) ----
REALWORLD = os.path.join(ROOT, "realworld")
for file in sorted(os.listdir(REALWORLD)):
    if not file.endswith(".yaml"):
        continue
    text = open(os.path.join(REALWORLD, file)).read()
    origin = " ".join(line[len("# source: "):] for line in text.splitlines() if line.startswith("# source: "))
    commit = " ".join(line[len("# commit: "):] for line in text.splitlines() if line.startswith("# commit: "))
    (obj,) = [d for d in yaml.safe_load_all(text) if d]
    stem = file[: -len(".yaml")]
    where = f"{origin}, commit {commit}; copied verbatim to testdata/catalog-union/realworld/{file}"
    scenario(f"realworld-{stem}-create-accepted", review(obj),
             f"a real CatalogSource passes with default settings and no warning, as a CREATE: {where}", **CLEAN)
    scenario(f"realworld-{stem}-update-accepted", review(copy.deepcopy(obj), "UPDATE", old=copy.deepcopy(obj)),
             f"a real CatalogSource passes with default settings and no warning, as an UPDATE to itself: {where}", **CLEAN)
    # migrateLegacy on the same object: rewritten into its union member,
    # unless its grpcPodConfig holds what podSpecOverrides cannot.
    spec = obj["spec"]
    pod = spec.get("grpcPodConfig") or {}
    unportable = [k for k in ("affinity", "securityContextConfig", "extractContent", "memoryTarget") if k in pod]
    if unportable:
        scenario(f"realworld-{stem}-migrate-unportable-accepted", review(copy.deepcopy(obj)),
                 f"migrateLegacy leaves a real CatalogSource whose grpcPodConfig sets {', '.join(unportable)} as it is, "
                 f"and says why: {where}", settings=MIGRATE, allowed=True, mutated=False,
                 warnings_contain=["configure this catalog", "this spec was not migrated"])
    else:
        if "image" in spec:
            member = {"catalogImageSource": {"catalogImage": spec["image"]}}
            overrides = {k: pod[k] for k in ("nodeSelector", "tolerations", "priorityClassName") if pod.get(k)}
            if overrides:
                member["catalogImageSource"]["podSpecOverrides"] = overrides
        elif "address" in spec:
            member = {"catalogServiceSource": {"address": spec["address"]}}
        else:
            member = {"configMapSource": {"configMap": spec["configMap"]}}
        scenario(f"realworld-{stem}-migrate-mutated", review(copy.deepcopy(obj)),
                 f"migrateLegacy rewrites a real CatalogSource into its union member: {where}",
                 settings=MIGRATE, allowed=True, patched_object_contains={"spec": member},
                 warnings_contain=["(migrateLegacy)"])

with open(MANIFEST, "w") as f:
    f.write("# Scenario directories written by generate.py; it removes exactly these before writing them again.\n")
    f.write("\n".join(sorted(GENERATED)) + "\n")
print(len(GENERATED), "scenarios generated")
