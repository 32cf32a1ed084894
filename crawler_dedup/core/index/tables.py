"""The Manku et al. (2007) plan of permuted tables, as pure functions and data.

Split the f=64 fingerprint bits into r blocks. Two fingerprints within k bits agree on at least
r-k whole blocks, so one table per choice of r-k blocks (C(r, k) tables), keyed by those blocks'
bits (the permuted prefix), finds every such pair with one probe per table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from itertools import combinations
from math import comb

import numpy as np

F = 64
# Cost weights, measured by benchmarks/speed.py on LMDB at 10^5..10^7 pages: one table probe
# (a getmulti) ~2 us, one more candidate in the bucket read and Hamming-compared ~0.01 us.
_PROBE_COST, _CANDIDATE_COST = 1.0, 0.005
# table disk per entry: 8 value bytes plus a key node shared by the bucket's entries, over the
# B-tree's fill factor (fitted to measured table bytes: ~35 B an entry at 0.3 per bucket, ~12 at 150)
_VALUE_BYTES, _KEY_BYTES, _FILL = 8.0, 19.0, 0.7
# what one table byte per page is worth in probes: 20 B a page ~ one probe (a 10-table plan at
# 10^7 pages costs 350 B a page for ~6 us less per lookup than a 4-table one; not worth it)
_DISK_COST = 0.05
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

    @cached_property
    def _spec(self) -> tuple:
        """Per table: (key bytes, ((shift, mask, left shift), ...)) with adjacent blocks merged,
        so a key is two or three integer operations (keys() is on every lookup's path)."""
        spec = []
        for t, chosen in enumerate(self.tables):
            parts: list[list[int]] = []
            left = self.prefix_bits(t)
            last = None
            for b in chosen:
                shift, width = self.blocks[b]
                left -= width
                if last is not None and b == last + 1:  # the block right below the previous one
                    parts[-1][0] = shift
                    parts[-1][1] = (parts[-1][1] << width) | ((1 << width) - 1)
                    parts[-1][2] = left
                else:
                    parts.append([shift, (1 << width) - 1, left])
                last = b
            spec.append((self.key_bytes(t), tuple(tuple(p) for p in parts)))
        return tuple(spec)

    def keys(self, fp: int) -> list[bytes]:
        out = []
        for size, parts in self._spec:
            value = 0
            for shift, mask, left in parts:
                value |= ((fp >> shift) & mask) << left
            out.append(value.to_bytes(size, "big"))
        return out

    def prefixes(self, fps: np.ndarray) -> np.ndarray:
        """(tables, n) array of every table's prefix for each of `fps` (uint64), for batch lookups."""
        fps = np.asarray(fps, dtype=np.uint64)
        out = np.zeros((len(self.tables), fps.size), dtype=np.uint64)
        for t, (_, parts) in enumerate(self._spec):
            for shift, mask, left in parts:
                out[t] |= ((fps >> np.uint64(shift)) & np.uint64(mask)) << np.uint64(left)
        return out

    def expected_entries(self, n: int) -> float:
        """Expected stored fingerprints read per query over all tables, for n random fingerprints."""
        return sum(n / 2 ** self.prefix_bits(t) for t in range(len(self.tables)))

    def table_bytes(self, n: int) -> float:
        """Estimated table disk per page at n pages (see _KEY_BYTES)."""
        total = 0.0
        for t in range(len(self.tables)):
            load = n / 2 ** self.prefix_bits(t)
            per_key = load / -np.expm1(-load) if load > 1e-9 else 1.0  # entries of a non-empty bucket
            total += (_VALUE_BYTES + _KEY_BYTES / per_key) / _FILL
        return total

    def cost(self, n: int) -> float:
        return (len(self.tables) * _PROBE_COST + self.expected_entries(n) * _CANDIDATE_COST
                + self.table_bytes(n) * _DISK_COST)

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
    """The plan with the least probe + candidate + disk cost for `expected_pages` fingerprints."""
    plans = []
    for r in range(k + 1, f + 1):
        if comb(r, k) > _MAX_TABLES:
            break
        plans.append(plan_for(k, r, f))
    return min(plans, key=lambda p: p.cost(expected_pages))


def two_level_best(k: int, n: int, f: int = F) -> tuple[int, float]:
    """(tables, cost) of the cheapest two-level design (Manku section 3.1.1: r1 blocks, then the
    other bits in r2 blocks; C(r1,k)*C(r2,k) tables), by the same cost model; computed only, to
    show where it would beat a single level. Under the measured weights that happens once for
    k <= 8 and 10^5..10^9 pages (k=4 at 10^9: 25 tables, 1% cheaper than 15), so plans stay single-level."""
    best = None
    for r1 in range(k + 1, f + 1):
        if comb(r1, k) > _MAX_TABLES:
            break
        first = (r1 - k) * f / r1
        for r2 in range(k + 1, f + 1):
            tables = comb(r1, k) * comb(r2, k)
            if tables > _MAX_TABLES:
                break
            bits = first + (r2 - k) * (f - first) / r2
            load = n / 2**bits
            per_key = load / -np.expm1(-load) if load > 1e-9 else 1.0
            cost = (tables * _PROBE_COST + tables * load * _CANDIDATE_COST
                    + tables * (_VALUE_BYTES + _KEY_BYTES / per_key) / _FILL * _DISK_COST)
            if best is None or cost < best[1]:
                best = (tables, float(cost))
    return best if best is not None else (0, float("inf"))


def plan_rows(k: int, sizes=(10**5, 10**6, 10**7, 10**8, 10**9)) -> list[dict]:
    """The plan choose_plan makes for each size, with its expected cost (computed, not measured)."""
    rows = []
    for n in sizes:
        plan = choose_plan(k, n)
        bits = [plan.prefix_bits(t) for t in range(len(plan.tables))]
        rows.append({"pages": n, "r": plan.r, "tables": len(plan.tables), "prefix_bits": (min(bits), max(bits)),
                     "entries_per_query": plan.expected_entries(n), "table_bytes_per_page": plan.table_bytes(n),
                     "cost": plan.cost(n), "two_level": two_level_best(k, n)})
    return rows
