#!/usr/bin/env python3
"""Compares two `olm-guard test testdata -o json` runs scenario by scenario.

Used when a change must not alter behaviour (a refactoring): run the suite
before and after, then

    scripts/compare-scenarios.py before.json after.json

prints how many scenarios gave the identical response (allowed, status
message and code, patch, warnings) and patched object, and names every one
that did not. Exit 1 when any scenario present in both differs.
"""
import json
import sys


def results(path):
    with open(path) as f:
        return {r["scenario"]: r for r in json.load(f)["results"]}


def main(before_path, after_path):
    before, after = results(before_path), results(after_path)
    same, different = 0, []
    for name in sorted(set(before) & set(after)):
        b, a = before[name], after[name]
        keys = ("verdict", "message", "response", "patchedObject")
        if all(b.get(k) == a.get(k) for k in keys):
            same += 1
        else:
            different.append(name)
    print(f"{same} identical, {len(different)} different, "
          f"{len(set(after) - set(before))} new, {len(set(before) - set(after))} gone")
    for name in different:
        print(f"  differs: {name}")
    return 1 if different else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
