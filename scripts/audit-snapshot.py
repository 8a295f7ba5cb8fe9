#!/usr/bin/env python3
"""Writes a large synthetic cluster snapshot for `olm-guard audit` timing
(docs/performance.md): a JSON List, which `--cluster` reads as YAML.

    scripts/audit-snapshot.py 10000 > target/audit-10k.json

The objects split as 40 % CatalogSources, 10 % Namespaces, 10 %
OperatorGroups (one per namespace, each targeting its own) and 40 %
ClusterObjectSets (groups of 10 revisions). Every 100th CatalogSource sets
both image and address, and every 100th group repeats a revision, so the
audit has failures to report."""

import json
import sys


def main() -> None:
    total = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    catalogs = total * 4 // 10
    namespaces = total // 10
    sets = total - catalogs - 2 * namespaces
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
    json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)


if __name__ == "__main__":
    main()
