"""The demo site's decisions, twice over one LMDB index, are the ones recorded in
benchmarks/decisions.json.gz: a change around the detection core changes no decision. (The
labelled-stream part needs ../shared/data: `python benchmarks/decisions.py --check ...`.)"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import decisions  # noqa: E402


def test_demo_decisions_are_the_recorded_ones():
    expected = {k: v for k, v in decisions.load(os.path.join(ROOT, "benchmarks", "decisions.json.gz")).items()
                if k.startswith("demo/")}
    got = decisions.demo_decisions()
    assert set(got) == set(expected) == {"demo/pass1", "demo/pass2"}
    assert decisions.compare(expected, got) == []
    # the check can fail: one decision changed is reported
    changed = {k: [list(r) for r in v] for k, v in got.items()}
    changed["demo/pass1"][-1][1] = "keep" if changed["demo/pass1"][-1][1] != "keep" else "drop"
    assert len(decisions.compare(expected, changed)) == 1
