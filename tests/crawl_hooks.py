"""The cluster's faults and races a model crawl (tests/crawl_model.py) can be run inside, by
patching the package where a real process would be cut or delayed: a crawler killed inside a
commit (`CutInside`), and two crawlers' pages claiming in a given order (`ClaimsInOrder`)."""

from __future__ import annotations

import threading

class Killed(BaseException):
    """The process gone inside a commit (Model.crawl's `kill` with "inside")."""


class CutInside:
    """While a crawl runs: once `armed` (its last URL's response is being decided), the first
    round trip that writes (a commit: the spread layout's write script) sends half its commands
    (the nodes apply theirs each on its own; `last`: the second half), then the process is gone."""

    def __init__(self, last: bool = False):
        self.armed, self.last = False, last

    def __enter__(self):
        from crawler_dedup.stores.redis import nodes

        self.saved = run = nodes.Nodes.run
        cut = self

        def trip(self, batch, *args, **kwargs):
            write = self.sha.get("write")
            if cut.armed and write and any(c[:2] == ("EVALSHA", write) for _, c in batch):
                run(self, batch[len(batch) // 2:] if cut.last else batch[:len(batch) // 2], *args, **kwargs)
                raise Killed()
            return run(self, batch, *args, **kwargs)

        nodes.Nodes.run = trip
        return self

    def __exit__(self, *exc):
        from crawler_dedup.stores.redis import nodes

        nodes.Nodes.run = self.saved
        return False


class ClaimsInOrder:
    """While two crawlers race on two URLs (the spread layout): both first looks are done before
    either page is filed, `second`'s page is filed first, then it claims and looks again only once
    `first`'s has (as tests/test_cluster_decisions.py's Race does): whichever the draw names claims
    first, every time, and was filed last (it held the entries of one value the two share).
    Each wait gives up after a few seconds (a page that never files: a 304, another batch).
    `killed`: `second`'s crawler is killed at its second look, once `first`'s is done (its page
    claimed first when `claimed`), the look never made: its page filed, its item lost."""

    def __init__(self, first: str, second: str, killed: bool = False, claimed: bool = False):
        self.first, self.second = first, second
        self.killed, self.claimed = killed, claimed
        self.filing = threading.Barrier(2, timeout=5)
        self.filed = threading.Event()  # (`second`'s page filed)
        self.looked = threading.Event()
        self.met: set[str] = set()
        self.local = threading.local()

    def __enter__(self):
        from crawler_dedup.core import dedup
        from crawler_dedup.core.decide import claims
        from crawler_dedup.stores.redis import spread

        self.saved = decide_many, commit, confirm = (dedup.Deduplicator._decide_many, spread.SpreadTxn.commit,
                                                     claims.confirm)
        order = self

        def deciding(d, pages, *args, **kwargs):
            mine = {p.verdict.url for p in pages} & {order.first, order.second} - order.met
            order.met |= mine
            order.local.filing = next(iter(mine), None)
            try:
                return decide_many(d, pages, *args, **kwargs)
            finally:
                order.local.filing = None

        def committing(txn, *args, **kwargs):
            url = getattr(order.local, "filing", None)
            if url is None:
                return commit(txn, *args, **kwargs)
            order.local.filing = None
            try:
                order.filing.wait()
            except threading.BrokenBarrierError:
                pass
            if url == order.first:
                order.filed.wait(timeout=5)
            try:
                return commit(txn, *args, **kwargs)
            finally:
                if url == order.second:
                    order.filed.set()

        def confirming(index, judging, page, verdict, doc_id, *args, **kwargs):
            if page.verdict.url == order.second:
                order.looked.wait(timeout=5)
                if order.killed:
                    if order.claimed:
                        index.write(lambda txn: txn.claim(doc_id))
                    raise Killed()
            args = (verdict, doc_id, *args)
            try:
                return confirm(index, judging, page, *args, **kwargs)
            finally:
                if page.verdict.url == order.first:
                    order.looked.set()

        dedup.Deduplicator._decide_many, spread.SpreadTxn.commit, claims.confirm = deciding, committing, confirming
        return self

    def __exit__(self, *exc):
        from crawler_dedup.core import dedup
        from crawler_dedup.core.decide import claims
        from crawler_dedup.stores.redis import spread

        dedup.Deduplicator._decide_many, spread.SpreadTxn.commit, claims.confirm = self.saved
        return False
