"""How long a call to Redis waits through the routine faults of a server or a cluster before it
fails (and the page is kept unchecked): DEDUP_REDIS_RETRY.

A resharding answers MOVED and ASK, a slot being migrated TRYAGAIN, a failover CLUSTERDOWN and
lost connections until a replica takes over (the cluster's node timeout, 15 s by default, and an
election), a restarting node LOADING. Each is tried again, with growing pauses, until the
deadline: such a fault costs time, not recall. A call that gives up makes the following calls
fail after one try for three times as long (a node that stays down costs one wait, not one a
page; a node back answers that one try). A node at its `maxclients` refuses a new connection: a
lost connection too, waited for the same way (`recognise_refusals`).
"""

from __future__ import annotations

import time

PAUSE_MAX = 0.5  # seconds between two tries at most


class Patience:
    """One store's waiting policy, shared by its calls."""

    def __init__(self, seconds: float):
        self.seconds = max(0.0, float(seconds))
        self.failing_until = 0.0  # monotonic: until then a call makes one try
        self.gave_up = 0  # calls that waited to their deadline and failed

    def deadline(self) -> float:
        """When a call starting now stops trying (now, during the quick failures after a give-up)."""
        now = time.monotonic()
        return now if now < self.failing_until else now + self.seconds

    def failed(self) -> None:
        """A call gave up: the next ones fail at once for a while (a quick failure changes nothing)."""
        now = time.monotonic()
        if now >= self.failing_until:
            self.gave_up += 1
            self.failing_until = now + 3 * self.seconds

    def ok(self) -> None:
        """A call succeeded (the quick failures still run their time: a call that touches only the
        nodes that are up says nothing of the one that is down)."""

    @staticmethod
    def pause(attempt: int, deadline: float) -> bool:
        """Sleep before try `attempt` + 1; False when the deadline leaves no time for it."""
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(PAUSE_MAX, 0.01 * 2 ** attempt, left))
        return True


# Redis 7's cluster nodes say this where redis-py matches only the older "max number of clients
# reached" (which it raises as ConnectionError): a node full of crawlers' connections would fail
# pages at once, and a crawl's start, instead of waiting for a connection to close.
REFUSED = ("max number of clients + cluster connections reached",)


def recognise_refusals(redis_module) -> None:
    """Make redis-py raise ConnectionError for every wording of a node's refusal at `maxclients`."""
    try:
        from redis._parsers.base import BaseParser
    except ImportError:  # (another redis-py layout: the older wording alone is recognised)
        return
    errors = BaseParser.EXCEPTION_CLASSES.get("ERR")
    if isinstance(errors, dict):
        for message in REFUSED:
            errors.setdefault(message, redis_module.ConnectionError)
