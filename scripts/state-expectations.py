#!/usr/bin/env python3
"""Makes every scenario's expect.json say what it expects of warnings and patches.

An expectation that leaves out `warnings_contain`/`no_warnings` expects no warning, and one
that leaves out `mutated` expects no patch (`mutated: true` when it gives
`patched_object_contains`): HACKING.md, "Scenario format". `testdata/` states both explicitly,
and host/tests/scenarios.rs holds it to that. This script writes those defaults into the expect
files that leave them out, so it changes what each file says, never what it means:

- a file with `allowed` and neither `warnings_contain` nor `no_warnings` gets
  `"no_warnings": true`;
- a file with `allowed` and no `mutated` gets `"mutated": false`, or `"mutated": true` when it
  has `patched_object_contains`;
- files with `settings_error_contains` (no request is evaluated) and files without `allowed`
  (refused by `olm-guard test` until they state a verdict) are left alone.

Keys are appended after the existing ones; the file is written back as it is laid out
(`json.dumps` with two-space indent and a final newline). Only `expect.json` files are edited:
an `expect.yaml` that leaves a default out is listed, to be edited by hand.

    scripts/state-expectations.py            # every expect file under testdata/
    scripts/state-expectations.py DIR...     # those under DIR...

Prints each file it changed and a count. Exits 1 when an expect file cannot be read.
"""
import json
import os
import sys


def expect_files(roots):
    for root in roots:
        for directory, subdirs, files in os.walk(root):
            subdirs.sort()
            for name in sorted(files):
                if name in ("expect.json", "expect.yaml", "expect.yml"):
                    yield os.path.join(directory, name)


def missing_defaults(expect):
    """The defaults `expect` leaves out, as (key, value) in the order they are added."""
    if "allowed" not in expect or "settings_error_contains" in expect:
        return []
    added = []
    if "warnings_contain" not in expect and "no_warnings" not in expect:
        added.append(("no_warnings", True))
    if "mutated" not in expect:
        added.append(("mutated", "patched_object_contains" in expect))
    return added


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    roots = argv[1:] or [os.path.join(root, "testdata")]
    changed = 0
    by_hand = []
    for path in expect_files(roots):
        if not path.endswith(".json"):
            try:
                import yaml
            except ImportError:
                by_hand.append(f"{path}: not checked (PyYAML is not installed)")
                continue
            with open(path) as f:
                expect = yaml.safe_load(f)
            if isinstance(expect, dict) and missing_defaults(expect):
                keys = ", ".join(key for key, _ in missing_defaults(expect))
                by_hand.append(f"{path}: add {keys}")
            continue
        try:
            with open(path) as f:
                expect = json.load(f)
        except (OSError, ValueError) as e:
            print(f"{path}: cannot read: {e}", file=sys.stderr)
            return 1
        if not isinstance(expect, dict):
            print(f"{path}: not a JSON object", file=sys.stderr)
            return 1
        added = missing_defaults(expect)
        if not added:
            continue
        for key, value in added:
            expect[key] = value
        with open(path, "w") as f:
            json.dump(expect, f, indent=2)
            f.write("\n")
        print(f"{os.path.relpath(path)}: added " + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in added))
        changed += 1
    for line in by_hand:
        print(line, file=sys.stderr)
    print(f"state-expectations: {changed} file(s) changed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
