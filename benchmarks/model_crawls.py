"""Sequences of crawls, model-checked, longer than the tests run them (tests/test_crawl_model.py).

    python benchmarks/model_crawls.py [--examples 300] [--steps 14] [--cluster] [--same]

Hypothesis generates sequences of site changes, setting changes and crawls; after every crawl the
oracle (tests/crawl_oracle.py) checks what storage must hold: nothing lost, each drop against the
same page and in storage, one URL a page, the newest version, the preferred URL once settings are
stable, near copies apart under a higher threshold, a dry run that changes nothing, no download
again of an unchanged site. New sequences each run (the nightly size; `--same`: the ones CI runs).
Prints the sequences, crawls, pages fetched, superseded URLs, 304s and drop-log lines, the time,
and the first failure if one is found (hypothesis shrinks it to the shortest sequence).
`--cluster` runs it on a 3-node Redis Cluster's spread layout started here (redis-server must be
installed).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=300, help="sequences to run")
    parser.add_argument("--steps", type=int, default=14, help="steps a sequence at most")
    parser.add_argument("--cluster", action="store_true", help="on a Redis Cluster's spread layout")
    parser.add_argument("--same", action="store_true", help="the same sequences each run, as CI (else new ones)")
    args = parser.parse_args()

    from hypothesis import HealthCheck, settings
    from hypothesis.stateful import run_state_machine_as_test

    from tests import crawl_model
    from tests.test_crawl_model import Crawls
    from tests.test_crawl_model_cluster import ClusterCrawls

    counts = {"crawls": 0, "fetched": 0, "sequences": 0, "superseded": 0, "304s": 0}
    crawl = crawl_model.Model.crawl

    def counted(self, *a, **kw):
        done = crawl(self, *a, **kw)
        counts["crawls"] += 1
        counts["fetched"] += len(done.statuses)
        counts["superseded"] += len(done.removed)
        counts["304s"] += sum(1 for status in done.statuses.values() if status == 304)
        return done

    crawl_model.Model.crawl = counted  # type: ignore[method-assign]
    init = Crawls.__init__

    def started(self):
        counts["sequences"] += 1
        init(self)

    Crawls.__init__ = started  # type: ignore[method-assign]
    procs = []
    if args.cluster:
        from tests.conftest import start_cluster

        procs, _, url = start_cluster(Path(tempfile.mkdtemp(prefix="model-cluster-")))
        machine = ClusterCrawls  # (its racing crawlers also race on a rewritten page)
        machine.store = {"DEDUP_BACKEND": "redis", "DEDUP_REDIS_URL": url}
    else:
        machine = Crawls
        Crawls.store = {}
    began = time.monotonic()
    failure = None
    try:
        run_state_machine_as_test(machine, settings=settings(
            max_examples=args.examples, stateful_step_count=args.steps, deadline=None,
            suppress_health_check=list(HealthCheck), database=None, derandomize=args.same))
    except AssertionError as exc:  # the shrunk sequence is in the exception's notes
        import traceback

        print("".join(traceback.format_exception(exc)), file=sys.stderr)
        failure = str(exc).splitlines()[0][:300]
    finally:
        for proc in procs:
            proc.terminate()
    took = time.monotonic() - began
    where = "Redis Cluster (spread layout, 3 nodes)" if args.cluster else "LMDB"
    print(f"\nmodel-checked crawl sequences on {where}")
    print(f"{'sequences':<12}{'crawls':>10}{'pages':>10}{'superseded':>12}{'304s':>8}{'seconds':>10}{'crawls/s':>10}"
          "  failures")
    print(f"{counts['sequences']:<12}{counts['crawls']:>10}{counts['fetched']:>10}{counts['superseded']:>12}"
          f"{counts['304s']:>8}{took:>10.1f}{counts['crawls'] / max(took, 1e-9):>10.2f}  {failure or 'none'}")
    return 1 if failure else 0


if __name__ == "__main__":
    sys.exit(main())
