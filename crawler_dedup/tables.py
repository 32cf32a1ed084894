"""The Manku et al. (2007) plan of permuted tables, as pure functions and data.

Split the f=64 fingerprint bits into r blocks. Two fingerprints within k bits agree on at least
r-k whole blocks, so one table per choice of r-k blocks (C(r, k) tables), keyed by those blocks'
bits (the permuted prefix), finds every such pair with one probe per table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import combinations
from math import comb

F = 64
# relative cost of one table probe (and one insert) vs one candidate read and compared;
# measured: an LMDB probe ~2-5 us, a candidate in a vectorized Hamming pass ~0.1 us
_PROBE_COST, _CANDIDATE_COST = 1.0, 0.05
_MAX_TABLES = 1000


@dataclass(frozen=True)
class Plan:
    k: int
    blocks: tuple[tuple[int, int], ...]  # (shift, width), most significant block first
    tables: tuple[tuple[int, ...], ...]  # block indexes forming each table's key
    f: int = F

    @property
    def r(self) -> int:
        return len(self.blocks)

    def prefix_bits(self, table: int) -> int:
        return sum(self.blocks[b][1] for b in self.tables[table])

    def key_bytes(self, table: int) -> int:
        return (self.prefix_bits(table) + 7) // 8

    def prefix(self, table: int, fp: int) -> int:
        out = 0
        for b in self.tables[table]:
            shift, width = self.blocks[b]
            out = (out << width) | ((fp >> shift) & ((1 << width) - 1))
        return out

    def key(self, table: int, fp: int) -> bytes:
        return self.prefix(table, fp).to_bytes(self.key_bytes(table), "big")

    def keys(self, fp: int) -> list[bytes]:
        return [self.key(t, fp) for t in range(len(self.tables))]

    def expected_entries(self, n: int) -> float:
        """Expected stored fingerprints read per query over all tables, for n random fingerprints."""
        return sum(n / 2 ** self.prefix_bits(t) for t in range(len(self.tables)))

    def to_json(self) -> str:
        return json.dumps({"f": self.f, "k": self.k, "blocks": self.blocks, "tables": self.tables}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> "Plan":
        d = json.loads(text)
        return cls(k=d["k"], f=d["f"], blocks=tuple(map(tuple, d["blocks"])), tables=tuple(map(tuple, d["tables"])))


def split_blocks(r: int, f: int = F) -> tuple[tuple[int, int], ...]:
    """r near-equal blocks covering f bits, most significant first."""
    widths = [f // r + (1 if i < f % r else 0) for i in range(r)]
    blocks, top = [], f
    for w in widths:
        top -= w
        blocks.append((top, w))
    return tuple(blocks)


def plan_for(k: int, r: int, f: int = F) -> Plan:
    if not 0 <= k < r <= f and not (k == 0 and r >= 1):
        raise ValueError(f"need 0 <= k < r <= {f}, got k={k}, r={r}")
    return Plan(k=k, f=f, blocks=split_blocks(r, f), tables=tuple(combinations(range(r), r - k)))


def choose_plan(k: int, expected_pages: int, f: int = F) -> Plan:
    """The single-level plan with the least probe+candidate cost for `expected_pages` fingerprints."""
    best, best_cost = None, None
    for r in range(k + 1, f + 1):
        if comb(r, k) > _MAX_TABLES:
            break
        plan = plan_for(k, r, f)
        cost = len(plan.tables) * _PROBE_COST + plan.expected_entries(expected_pages) * _CANDIDATE_COST
        if best_cost is None or cost < best_cost:
            best, best_cost = plan, cost
    assert best is not None
    return best


def plan_rows(k: int, sizes=(10**5, 10**6, 10**7, 10**8, 10**9)) -> list[dict]:
    """The plan choose_plan makes for each size, with its expected cost (computed, not measured)."""
    rows = []
    for n in sizes:
        plan = choose_plan(k, n)
        bits = [plan.prefix_bits(t) for t in range(len(plan.tables))]
        rows.append({"pages": n, "r": plan.r, "tables": len(plan.tables), "prefix_bits": (min(bits), max(bits)),
                     "entries_per_query": plan.expected_entries(n)})
    return rows
