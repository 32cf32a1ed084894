"""The spread layout's claims (core/decide/claims.py: the order of pages filed at once), a part of
its transaction (spread.SpreadTxn): a claim and its second look's reads, the confirmation, the
claims read with the records they belong to, and the pages this process saw confirmed."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import xxhash

from ..base import Claim, from_u64
from .spread_keys import CLAIM, claim_field

if TYPE_CHECKING:
    from .handle import StoreHandle

CLAIMS_KEPT_S = 60.0  # beside three times DEDUP_REDIS_RETRY: a claim is kept this long, past any race
# (claims.windows: a filed page has settled after at most three times the retry deadline and 40 s)
SEEN_MAX = 100_000  # pages remembered confirmed (then forgotten: a drop against one looks again)


def claims_kept_s(retry_s: float) -> float:
    """How long the claims of a spread index are kept (DEDUP_REDIS_RETRY: `retry_s`)."""
    return 3 * retry_s + CLAIMS_KEPT_S


WROTE_MAX = 1024  # entries a filing notes it wrote with its claims (a larger batch notes none)
LOOKS_MAX = 4096  # entries a filing's claim sends as what it read or wrote (a larger one looks again)


def entry_hash(pair: tuple[str, bytes]) -> int:
    """An entry's 64-bit name in what a filing notes it wrote (a collision only costs a look)."""
    return xxhash.xxh64_intdigest(pair[0].encode() + b"\x00" + pair[1])


def packed_hashes(pairs) -> bytes:
    """Entries' names (entry_hash) as the claim script reads them: 8 bytes each, big-endian."""
    return b"".join(entry_hash(pair).to_bytes(8, "big") for pair in pairs)


class Filing:
    """One filing transaction's pages, until they claim: what it read and wrote (each value as it
    left it; `looks`: those entries hashed, packed), the entries it wrote (hashed, packed: noted
    with its pages' claims), so a later claim's script can tell whether a page claimed in between
    wrote anything it looked at, and the order its next page's claim gets if no other page
    claims first."""

    __slots__ = ("looked", "expect", "wrote", "looks")

    def __init__(self, looked: dict, expect: int | None, wrote: bytes = b"", looks: bytes = b""):
        self.looked, self.expect, self.wrote, self.looks = looked, expect, wrote, looks


class Filings:
    """The filings of this process's pages not claimed yet, by doc id (a page re-decided between
    two claims of a batch files apart: its claims are not the batch's)."""

    KEPT = 4096  # (a record written and never claimed, an update's: forgotten past this many)

    def __init__(self):
        self.by_doc: dict[int, Filing] = {}
        self.ahead: dict[int, tuple] = {}  # a page claimed with its batch: its claim's reply (claim_ahead)
        self.lock = threading.Lock()

    def filed(self, txn) -> None:
        """A filing transaction committing: what it read and wrote, each value as it leaves it. A
        batch's pages (marked, `mark_page`) file apart: each what it read and wrote itself, and
        what none of them wrote (a run's lease) counted as each one's writes."""
        # (new records only: a record read and written again, a page passed on again or updated in
        # place, was filed by an earlier transaction and keeps its look; a batch of drops files none)
        new = [(table, k) for (table, k), v in txn.single.items()
               if table == "docs" and v is not None and txn.got.get((table, k)) is None]
        if not new:
            return
        written = {*txn.single, *txn.added, *txn.removed, *txn.cleared, *txn.applied}
        pages = txn.pages if txn.pages is not None and len(txn.pages) > 1 else None
        if pages is None:
            self._file(txn, new, [*txn.got, *txn.single, *txn.added, *txn.removed], written)
            return
        unowned = written.difference(*(writes for _, writes in pages))
        for reads, writes in pages:
            mine = [pair for pair in new if pair in writes]
            if mine:
                self._file(txn, mine, reads | writes | unowned, writes | unowned)

    def _file(self, txn, docs: list, looked_pairs, written) -> None:
        looked = {pair: txn._seen(pair) for pair in looked_pairs}
        wrote = packed_hashes(written) if len(written) <= WROTE_MAX else b""
        looks = packed_hashes(looked) if len(looked) <= LOOKS_MAX else b""
        filing = Filing(looked, None if txn.count_before is None else txn.count_before + 1, wrote, looks)
        with self.lock:
            for _, k in docs:
                self.by_doc[from_u64(k)] = filing
            while len(self.by_doc) > self.KEPT:
                del self.by_doc[next(iter(self.by_doc))]

    def claiming(self, doc_id: int) -> Filing | None:
        with self.lock:
            return self.by_doc.pop(doc_id, None)


class SpreadClaims:
    """The claims' part of a spread transaction (its reads are the transaction's `_fetch`)."""

    s: "StoreHandle"
    got: dict[tuple[str, bytes], Any]
    claimed: bool
    quiet: bool
    _shard_levels: list[int] | None
    pages: list[tuple[set, set]] | None = None  # a batch's pages: what each read and wrote (mark_page)
    _reads: set | None = None
    _writes: set | None = None

    def mark_page(self) -> None:
        """A batch's next page begins: what is read and written from here is its own, so its claim
        compares what the pages claimed meanwhile wrote with its own reads, not the whole batch's
        (Filings.filed)."""
        self._reads, self._writes = set(), set()
        self.pages = [*(self.pages or ()), (self._reads, self._writes)]

    def _read(self, pairs) -> None:
        if self._reads is not None:
            self._reads.update(pairs)

    def put(self, table, key, value):
        super().put(table, key, value)  # type: ignore[misc]
        if self._writes is not None:
            self._writes.add((table, bytes(key)))

    def delete(self, table, key):
        super().delete(table, key)  # type: ignore[misc]
        if self._writes is not None:
            self._writes.add((table, bytes(key)))

    def add(self, table, key, value):
        super().add(table, key, value)  # type: ignore[misc]
        if self._writes is not None:
            self._writes.add((table, bytes(key)))

    def remove(self, table, key, value):
        super().remove(table, key, value)  # type: ignore[misc]
        if self._writes is not None:
            self._writes.add((table, bytes(key)))

    def _fetch(self, pairs: list[tuple[str, bytes]]) -> None:
        raise NotImplementedError

    def _seen(self, pair: tuple[str, bytes]) -> Any:
        raise NotImplementedError

    def claim(self, doc_id: int, quiet: bool = False) -> int:
        """The page's order (the one it has when claimed already); the shard map comes with it, so
        the second look that follows reads every level a page filed before it may be in. `quiet`:
        the caller skips the second look if no other page claimed since this thread's last claim
        before the page's filing began (then the claim confirms the page at once, `self.quiet`: its
        second look would see what its first saw, claims.py `confirm`), or if the pages claimed
        meanwhile noted writing nothing its filing read or wrote (the claim script compares:
        confirmed at once too), or if nothing of that changed since (read again: confirmed then).
        A page claimed ahead with its batch (`claim_ahead`) takes the reply it got then."""
        s = self.s
        filing = s.filings.claiming(doc_id)
        expect = filing.expect if filing is not None else None
        got = s.filings.ahead.pop(doc_id, None)
        if got is None:
            got = self._claim_script([(doc_id, quiet)], [filing])[0]
        s.map.learn(got[0])
        order, confirmed, apart = got[1:]
        # (the count now, at least: every page claimed so far was written whole before this reply,
        # so before the reads of this thread's next filing; a page claiming in between takes the
        # order its filing's next page expects)
        s.last_count[threading.get_ident()] = order
        self._shard_levels = None
        self.claimed = True
        self.quiet = bool(quiet and expect and confirmed)
        looked = filing.looked if filing is not None else None  # (what its filing read, and those pages'
        settled = expect is not None and order == expect  # (every page claimed before: seen by the filing)
        if self.quiet and apart and filing is not None and filing.looks:
            # the pages claimed since this crawler's last claim wrote nothing its filing read or
            # wrote (each noted what it wrote with its claim; the script compared): a second look
            # would read it all as it was, so would decide the same: confirmed by the claim
            s.apart += 1
            settled = True
        elif looked and not self.quiet:  # claims: one round trip after the claim, not one a step; what is new since is read as asked)
            self._fetch([*looked, *self.claim_places([from_u64(k) for t, k in looked if t == "docs"])])
            # nothing the filing read or wrote changed since (a page claimed before this one, filed
            # after those reads, wrote some of it: its claim came after its writes, so this read sees
            # them): the second look would decide the same, confirmed now
            if quiet and all(self._same(pair, before) for pair, before in looked.items()):
                self.confirm(doc_id)
                self.quiet = True
                s.unchanged += 1
                settled = True
        elif self.quiet:
            s.quiet += 1
        if self.quiet:
            s.confirmed.add(doc_id)
        if filing is not None:
            # the filing's next page (a batch's) may claim quietly after this one: every page
            # claimed before this claim was seen by the filing's first look, or wrote nothing it
            # looked at (confirmed without a look: the script compared, or the read found all as
            # it was); after a look that decided again, the filing's reads are out of date
            filing.expect = order + 1 if settled else None
        return order

    def claim_ahead(self, pages: list[tuple[int, bool]]) -> None:
        """A committed batch's filed pages (doc id, may claim quietly) claimed now, in order, in one
        round trip: consecutive orders, no other page's between them (as if each claimed the moment
        the one before had); each page's `claim` then takes its reply."""
        s = self.s
        if len(pages) < 2:
            return
        with s.filings.lock:
            filings = [s.filings.by_doc.get(doc_id) for doc_id, _ in pages]
        for (doc_id, _), got in zip(pages, self._claim_script(pages, filings)):
            s.filings.ahead[doc_id] = got
        while len(s.filings.ahead) > Filings.KEPT:  # (a page whose second look never began)
            del s.filings.ahead[next(iter(s.filings.ahead))]

    def _claim_script(self, pages: list[tuple[int, bool]], filings: list[Filing | None]) -> list[tuple]:
        """The claim script's reply for these pages, each of its filing: (shard map, order,
        confirmed, apart) each. Pages sharing a filing after its first are expected nothing (they
        look: a batch's pages file apart, so only a filing of several new records shares one)."""
        s = self.s
        args: list = [int(claims_kept_s(s.retry_seconds))]
        seen: set[int] = set()
        for (doc_id, quiet), filing in zip(pages, filings):
            expect = None if filing is None or id(filing) in seen else filing.expect
            if filing is not None:
                seen.add(id(filing))
            args += [claim_field(doc_id), doc_id, "1" if quiet else "", "" if expect is None else expect,
                     filing.wrote if filing is not None else b"",
                     filing.looks if filing is not None and filing.looked else b""]
        got = s.nodes.run([(s.meta_key, s.nodes.script("claim", [s.meta_key], args))])[0]
        shards = got[:4]
        return [(shards, int(got[at]), got[at + 1] == 1, got[at + 2] == 1) for at in range(4, len(got), 3)]

    def _same(self, pair: tuple[str, bytes], before: Any) -> bool:
        """An entry read again as the filing left it (a claim's confirmation since changes nothing)."""
        now = self.got.get(pair)
        if now == before:
            return True
        return (pair[0] == "meta" and pair[1].startswith(CLAIM) and before is not None and now is not None
                and bytes(now) == bytes(before).rstrip(b"k") + b"k")

    def confirm(self, doc_id: int) -> None:
        s = self.s
        s.nodes.run([(s.meta_key, s.nodes.script("confirm", [s.meta_key], [claim_field(doc_id)]))])

    def claim_places(self, doc_ids: list[int]) -> list[tuple[str, bytes]]:
        """The claims' entries, for a prefetch (read with the records they belong to)."""
        return [("meta", claim_field(d)) for d in doc_ids]

    def claims(self, doc_ids: list[int]) -> list[Claim | None]:
        if not doc_ids:
            return []
        s = self.s
        fields = [claim_field(d) for d in doc_ids]
        self._read(("meta", f) for f in fields)
        read = {f: self.got[("meta", f)] for f in fields if ("meta", f) in self.got}  # (read ahead with the records)
        rest = [f for f in fields if f not in read]
        if rest:
            read.update(zip(rest, s.nodes.run([(s.meta_key, ("HMGET", s.meta_key, *rest))])[0]))
        return [None if v is None else Claim(int(bytes(v).rstrip(b"k")), bytes(v).endswith(b"k"))
                for v in (read[f] for f in fields)]

    def unclaim(self, doc_id: int) -> None:
        self.s.nodes.run([(self.s.meta_key, ("HDEL", self.s.meta_key, claim_field(doc_id)))])

    def remember_confirmed(self) -> None:
        """The pages whose claims this transaction read confirmed: they stay (a confirmed page
        never withdraws), so a drop against one needs no look to settle (claims.settle)."""
        seen = self.s.confirmed
        for (table, field), value in self.got.items():
            if table == "meta" and field.startswith(CLAIM) and value is not None and bytes(value).endswith(b"k"):
                if len(seen) >= SEEN_MAX:
                    seen.clear()
                seen.add(int(field[len(CLAIM):]))
