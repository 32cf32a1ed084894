"""The score: how likely a page is a copy of a kept page, from the pair's measurements
(measures.py), read from a small JSON file at start, and why.

The file holds a forest of small regression trees (gradient boosting, fitted with each
containment measurement monotone: more of it never lowers the score), an optional linear
correction fitted on a user's own pairs (`crawler-dedup eval --fit`), the threshold and how it
was fitted (tools/fit.py fits and writes it). Scoring walks the trees in numpy: no fitting library at
crawl time. Each measurement's contribution is what the splits on it added along the pair's path
through each tree (the path's value before and after the split), so the base and the
contributions sum to the score (log-odds).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ...exceptions import ModelError
from .measures import NAMES, Measures

FORMAT = "crawler-dedup-score/1"
SHIPPED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "score.json")
OPS = ("value", "missing")


@dataclass(frozen=True)
class Term:
    """One input of the linear correction: a measurement's value (`fill` when missing) or whether
    it is missing, centred and scaled as in the pairs it was fitted on."""

    name: str
    op: str
    of: str
    fill: float = 0.0
    mean: float = 0.0
    scale: float = 1.0

    def value(self, m: Measures) -> float:
        v = m.get(self.of)
        if self.op == "missing":
            return 1.0 if v is None else 0.0
        return self.fill if v is None else float(v)


@dataclass(frozen=True)
class Forest:
    """Trees as flat arrays, one row a tree: the measurement a node splits on (-1 at a leaf), its
    threshold (at or under: left), its children, whether a missing value goes left, and its
    value (a leaf's, or the mean of the leaves under a split)."""

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    missing_left: np.ndarray
    value: np.ndarray

    @property
    def depth(self) -> int:
        return int(self.feature.shape[1]).bit_length()

    def walk(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """(the trees' summed roots, each measurement's contribution) for one pair's values `x`."""
        trees = np.arange(self.feature.shape[0])
        node = np.zeros(trees.size, dtype=np.int64)
        contrib = np.zeros(len(NAMES))
        for _ in range(self.feature.shape[1]):
            f = self.feature[trees, node]
            split = f >= 0
            if not split.any():
                break
            fs = np.where(split, f, 0)
            v = x[fs]
            go_left = np.where(np.isnan(v), self.missing_left[trees, node], v <= self.threshold[trees, node])
            child = np.where(go_left, self.left[trees, node], self.right[trees, node])
            child = np.where(split, child, node)
            np.add.at(contrib, fs[split], (self.value[trees, child] - self.value[trees, node])[split])
            node = child
        return float(self.value[:, 0].sum()), contrib

    @classmethod
    def from_dict(cls, raw: dict) -> "Forest":
        arrays = {k: np.asarray(raw[k]) for k in ("feature", "threshold", "left", "right", "missing_left", "value")}
        shape = arrays["feature"].shape
        if len(shape) != 2 or any(a.shape != shape for a in arrays.values()):
            raise ModelError("its trees' arrays are not of one shape")
        out = cls(arrays["feature"].astype(np.int64), arrays["threshold"].astype(np.float64),
                  arrays["left"].astype(np.int64), arrays["right"].astype(np.int64),
                  arrays["missing_left"].astype(bool), arrays["value"].astype(np.float64))
        n = shape[1]
        if out.feature.max(initial=-1) >= len(NAMES) or out.left.max(initial=0) >= n or out.right.max(initial=0) >= n:
            raise ModelError("its trees name measurements or nodes that are not there")
        return out


@dataclass(frozen=True)
class Scored:
    """A pair's score: the probability it is a copy, its log-odds, and each measurement's part in it."""

    probability: float
    logit: float
    contributions: tuple[tuple[str, float], ...]  # (measurement, log-odds it adds), largest first
    over: bool  # at or over the model's threshold


@dataclass(frozen=True)
class Model:
    forest: Forest | None
    base: float  # the log-odds before any tree (the fit's baseline)
    threshold: float  # a probability: a pair scored at or over it is a copy
    terms: tuple[Term, ...] = ()  # the linear correction (eval --fit), on top of the forest's log-odds
    coefficients: tuple[float, ...] = ()
    intercept: float = 0.0
    forest_weight: float = 1.0  # the forest's log-odds times this, in a corrected model
    about: dict = field(default_factory=dict, compare=False)  # how it was fitted (tools/fit.py)
    path: str = ""

    @property
    def origin(self) -> float:
        """The log-odds of a pair at the training means: the base every explanation starts from."""
        roots = float(self.forest.value[:, 0].sum()) if self.forest is not None else 0.0
        linear = self.intercept  # (the correction's terms are centred: 0 at the means)
        return self.forest_weight * (self.base + roots) + linear

    def score(self, m: Measures) -> Scored:
        parts = dict.fromkeys(NAMES, 0.0)
        if self.forest is not None:
            x = np.array([np.nan if (v := m.get(n)) is None else float(v) for n in NAMES])
            _, contrib = self.forest.walk(x)
            for name, value in zip(NAMES, contrib):
                parts[name] += self.forest_weight * float(value)
        for coef, term in zip(self.coefficients, self.terms):
            parts[term.of] += coef * (term.value(m) - term.mean) / term.scale
        logit = self.origin + sum(parts.values())
        probability = 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, logit))))
        shown = sorted(((k, v) for k, v in parts.items() if abs(v) >= 5e-4), key=lambda p: -abs(p[1]))
        return Scored(probability, logit, tuple(shown), probability >= self.threshold)

    @classmethod
    def from_dict(cls, raw: dict, path: str = "") -> "Model":
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise ModelError(f"not a score model of this version (format {FORMAT!r})")
        if list(raw.get("features") or []) != list(NAMES):
            raise ModelError("it was fitted on other measurements than this version makes: refit it with "
                             "`crawler-dedup eval --fit`")
        try:
            forest = Forest.from_dict(raw["trees"]) if raw.get("trees") else None
            fix = raw.get("correction") or {}
            terms = tuple(Term(str(t["name"]), str(t["op"]), str(t["of"]), float(t.get("fill", 0.0)),
                               float(t.get("mean", 0.0)), float(t.get("scale", 1.0))) for t in fix.get("terms", []))
            coefficients = tuple(float(c) for c in fix.get("coefficients", []))
            model = cls(forest, float(raw["base"]), float(raw["threshold"]), terms, coefficients,
                        float(fix.get("intercept", 0.0)), float(fix.get("forest_weight", 1.0)),
                        dict(raw.get("about") or {}), path)
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelError(f"a model file needs base, threshold and trees or a correction ({exc})") from None
        bad = [t.name for t in terms if t.op not in OPS or t.of not in NAMES or t.scale == 0]
        if bad or len(coefficients) != len(terms) or not 0.0 < model.threshold < 1.0:
            raise ModelError("its terms, coefficients or threshold do not fit together"
                             + (f" (terms {', '.join(bad)})" if bad else ""))
        return model


def for_settings(config) -> Model:
    """The model these settings decide with: DEDUP_MODEL's (else the shipped one), at
    DEDUP_SCORE_THRESHOLD when it is not `auto`."""
    from dataclasses import replace

    model = load(config.model)
    if config.score_threshold != "auto":
        model = replace(model, threshold=float(config.score_threshold))
    return model


@lru_cache(maxsize=8)
def load(path: str | None = None) -> Model:
    """The model at `path` (DEDUP_MODEL), or the one shipped with the package."""
    where = path or SHIPPED
    try:
        with open(where, encoding="utf-8") as fh:
            raw = json.load(fh)
    except OSError as exc:
        raise ModelError(f"cannot read {where}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ModelError(f"{where} is not JSON ({exc})") from None
    return Model.from_dict(raw, where)
