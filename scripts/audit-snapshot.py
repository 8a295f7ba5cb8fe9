#!/usr/bin/env python3
"""Writes a large synthetic cluster snapshot for `olm-guard audit` timing
(docs/performance.md): a JSON List, which `--cluster` reads as YAML.

    scripts/audit-snapshot.py 10000 > target/audit-10k.json

The objects split as 35 % CatalogSources, 10 % Namespaces, 10 %
OperatorGroups (one per namespace, each targeting its own), 35 %
ClusterObjectSets (groups of 10 revisions) and 10 % RBAC (ClusterRoles,
some aggregating and some feeding `admin`, ClusterRoleBindings, Roles and
RoleBindings). Every 100th CatalogSource sets both image and address, and
every 100th group repeats a revision, so the audit has failures to report.
The mix is the same at every size, so audits of 10,000, 30,000 and 100,000
objects show how the time grows (`make bench`)."""

import json
import sys


def main() -> None:
    total = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    catalogs = total * 35 // 100
    namespaces = total // 10
    rbac = total // 10
    sets = total - catalogs - 2 * namespaces - rbac
    items = []
    for i in range(namespaces):
        items.append({"apiVersion": "v1", "kind": "Namespace",
                      "metadata": {"name": f"ns-{i}"}})
        items.append({
            "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
            "metadata": {"name": f"og-{i}", "namespace": f"ns-{i}",
                         "annotations": {"olm.providedAPIs": f"Thing{i}.v1.example.com"}},
            "spec": {"targetNamespaces": [f"ns-{i}"]},
            "status": {"namespaces": [f"ns-{i}"]},
        })
    for i in range(catalogs):
        spec = {"catalogImageSource": {"catalogImage": f"quay.io/example/catalog-{i}:v1"}}
        if i % 100 == 0:
            spec = {"sourceType": "grpc", "image": f"quay.io/example/catalog-{i}:v1",
                    "address": f"catalog-{i}.svc:50051"}
        items.append({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
                      "metadata": {"name": f"catalog-{i}", "namespace": f"ns-{i % namespaces}"},
                      "spec": spec})
    for i in range(sets):
        group, revision = f"ext-{i // 10}", i % 10 + 1
        if (i // 10) % 100 == 0 and revision == 10:
            revision = 9
        items.append({
            "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet",
            "metadata": {"name": f"{group}-{i % 10 + 1}",
                         "labels": {"olm.operatorframework.io/owner-name": group}},
            "spec": {"group": group, "revision": revision, "lifecycleState": "Active"},
        })
    items.extend(rbac_objects(rbac, namespaces))
    json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)


def rbac_objects(count: int, namespaces: int) -> list:
    """`count` RBAC objects: 40 % ClusterRoles (every 10th aggregating the
    roles labelled for its team, every 10th feeding `admin`), 20 %
    ClusterRoleBindings, 20 % Roles and 20 % RoleBindings."""
    rbac = "rbac.authorization.k8s.io/v1"
    rules = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]
    objects = []
    for i in range(count):
        share, n = i % 5, i // 5
        if share < 2:
            role = {"apiVersion": rbac, "kind": "ClusterRole",
                    "metadata": {"name": f"role-{i}", "labels": {"team": f"team-{n % 50}"}},
                    "rules": rules}
            if i % 10 == 0:
                role = {"apiVersion": rbac, "kind": "ClusterRole",
                        "metadata": {"name": f"aggregate-{i}"},
                        "aggregationRule": {"clusterRoleSelectors": [
                            {"matchLabels": {"team": f"team-{n % 50}"}}]}}
            elif i % 10 == 1:
                role["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"] = "true"
            objects.append(role)
        elif share == 2:
            objects.append({"apiVersion": rbac, "kind": "ClusterRoleBinding",
                            "metadata": {"name": f"binding-{i}"},
                            "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                        "kind": "ClusterRole", "name": f"role-{i - 2}"},
                            "subjects": [{"kind": "User", "name": f"user-{n}"}]})
        elif share == 3:
            objects.append({"apiVersion": rbac, "kind": "Role",
                            "metadata": {"name": f"role-{i}", "namespace": f"ns-{n % namespaces}"},
                            "rules": rules})
        else:
            objects.append({"apiVersion": rbac, "kind": "RoleBinding",
                            "metadata": {"name": f"binding-{i}", "namespace": f"ns-{n % namespaces}"},
                            "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                        "kind": "Role", "name": f"role-{i - 1}"},
                            "subjects": [{"kind": "User", "name": f"user-{n}"}]})
    return objects


if __name__ == "__main__":
    main()
