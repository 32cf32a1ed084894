"""Many crawlers decide as one through faults (benchmarks/cluster_faults.py, run small): three
`scrapy crawl` processes share one index on a real 3-node Redis Cluster with persistence while
crawlers are SIGKILLed (and run again on what they had not decided), a node is killed and
restarted on its append-only file, and 100 slots move between nodes. What must hold: no URL
lost, no page dropped as a copy of its own URL, no drop naming a page the index does not keep,
`index verify` clean, no traceback, and the recall of one process crawling the same stream."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from .conftest import ROOT


@pytest.mark.parametrize("seed", [1, 2])
def test_crawlers_killed_a_node_restarted_and_slots_moved_lose_nothing(tmp_path, seed):
    if shutil.which("redis-server") is None or shutil.which("redis-cli") is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server; .ci/run does)")
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import cluster_faults

    said: list[str] = []
    report = cluster_faults.faults_run(None, False, 0, groups=30, procs=3, kills=2, restarts=1, reshard=100,
                                       seed=seed, settings=["DEDUP_STORE_TEXT=False"], scorer=None, work=tmp_path,
                                       say=said.append, delay=0.2)  # (slow enough that every fault comes mid-crawl)
    assert report["kills"] == 2 and sorted(report["faults"]) == ["kill", "kill", "reshard", "restart"], (report, said)
    assert report["urls lost"] == 0, report["examples"]
    assert report["self-drops"] == 0, (report["examples"], said)
    assert report["dangling drops"] == 0, report["examples"]
    assert report["verify"] == "clean", (report["verify"], said)
    assert report["tracebacks"] == 0
    assert report["precision"] == 1.0
    assert report["recall"] >= report["one process"]["recall"] - 0.01, (
        f"recall {report['recall']} against one process's {report['one process']['recall']}; the groups missed, "
        f"each URL's end: {report['examples']['missed groups']}; timeline: {said}")
