"""What the scripts' tests share: paths, running a script as a user would, fixture edits."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import tempfile

TESTS = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.dirname(TESTS)
FIXTURES = os.path.join(TESTS, "fixtures")
sys.path.insert(0, SCRIPTS)


def fixture(name: str) -> str:
    return os.path.join(FIXTURES, name)


def script(name: str, *args, env=None, timeout=120):
    """Runs scripts/<name> (its own #! interpreter) -> CompletedProcess with text output."""
    e = dict(os.environ)
    if env:
        e.update(env)
    return subprocess.run([os.path.join(SCRIPTS, name), *args], capture_output=True, text=True, env=e,
                          timeout=timeout)


def load_json(name):
    with open(fixture(name), encoding="utf-8") as f:
        return json.load(f)


def write_results(dirname, name, doc):
    path = os.path.join(dirname, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return path


def scaled(doc, case, key, factor):
    """A copy of a results document with one case's counter (or real_time) multiplied in every row."""
    d = copy.deepcopy(doc)
    for r in d["benchmarks"]:
        if r.get("lb_case") == case and isinstance(r.get(key), (int, float)):
            r[key] = r[key] * factor
    return d


class TempDir:
    def __enter__(self):
        self._d = tempfile.TemporaryDirectory(prefix="lb-scripts-test-")
        return self._d.name

    def __exit__(self, *exc):
        self._d.cleanup()
