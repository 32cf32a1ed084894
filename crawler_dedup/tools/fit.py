"""Fitting the score (core/decide/model.py) on labelled pairs of measurements.

Two fits, both cross-validated with the pairs grouped by host (each fold's figures are for sites
it never saw) and the threshold chosen on the out-of-fold scores for a precision target:

- `fit_forest`: the shipped model, gradient-boosted trees with each containment measurement
  monotone (scikit-learn, a dev extra: `pip install "crawler-dedup[fit]"`), exported as arrays;
  benchmarks/fit_score.py runs it on the dev split's pairs and the pairs the repo builds.
- `fit_correction`: a user's own pairs (`crawler-dedup eval --fit`), too few for trees: a
  logistic correction on top of the forest's log-odds, pulled toward changing nothing, in numpy.
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from ..core.decide.measures import NAMES
from ..core.decide.model import FORMAT, Forest, Model, Term

# the measurements more of which never makes a copy less likely, other things equal: the shares
# one text holds of the other, alike titles, and length (a longer text shared is more evidence)
MONOTONE = ("exact", "resemblance", "contained", "containing", "own_resemblance", "own_contained",
            "shown_in_kept", "shows_kept", "title", "title_words", "words_page", "words_kept")
# the correction reads a missing value as this (the value that says least); its absence is a term
FILL = {"cover_page": 0.5, "cover_kept": 0.5, "template": 0.5, "alike": 0.5}
MISSING = ("shown_in_kept", "shows_kept", "cover_page", "cover_kept", "template", "title")
# the forest: small trees, many of them, shrunk (scikit-learn's HistGradientBoostingClassifier)
FOREST = {"max_depth": 4, "max_iter": 500, "learning_rate": 0.08, "min_samples_leaf": 10, "l2_regularization": 1.0}


def values(rows: Sequence[dict]) -> np.ndarray:
    """The measurements of each pair as a matrix (NaN where missing), in measures.NAMES order."""
    return np.array([[np.nan if (v := m.get(n)) is None else float(v) for n in NAMES] for m in rows],
                    dtype=np.float64).reshape(len(rows), len(NAMES))


def folds_by_host(hosts: Sequence[str], k: int = 5) -> np.ndarray:
    """A fold for each pair from its host (a stable hash): a site's pairs are all in one fold."""
    if len(set(hosts)) < k:
        return np.arange(len(hosts)) % k
    return np.array([zlib.crc32(h.encode("utf-8", "surrogatepass")) % k for h in hosts])


def out_of_fold(hosts: Sequence[str], k: int, fit_predict) -> tuple[np.ndarray, np.ndarray]:
    """(each pair's fold, its score from a fit on the other folds): `fit_predict(train, test)`
    fits on the pairs `train` marks and scores those `test` marks; folds grouped by host."""
    fold = folds_by_host(hosts, k)
    oof = np.zeros(len(fold))
    for f in range(k):
        test = fold == f
        if test.any() and not test.all():
            oof[test] = fit_predict(~test, test)
    return fold, oof


def choose_threshold(scores: np.ndarray, y: np.ndarray, precision: float) -> float:
    """The lowest score at which the pairs scored at or over it reach `precision` (0.5 at least,
    0.999 when no score does)."""
    order = np.argsort(-scores, kind="stable")
    s, yy = scores[order], y[order]
    prec = np.cumsum(yy) / np.arange(1, len(yy) + 1)
    last = np.r_[s[1:] < s[:-1], True]  # the end of each run of equal scores
    ok = np.flatnonzero(last & (prec >= precision))
    best = float(s[ok[-1]]) if ok.size else 0.999
    return float(min(max(best, 0.5), 0.999))


def fold_figures(p: np.ndarray, y: np.ndarray, threshold: float) -> dict:
    said = p >= threshold
    tp, fp = int(np.sum(said & (y == 1))), int(np.sum(said & (y == 0)))
    pos = int(np.sum(y == 1))
    return {"pairs": int(len(y)), "copies": pos, "true": tp, "false": fp,
            "precision": round(tp / (tp + fp), 4) if tp + fp else None,
            "recall": round(tp / pos, 4) if pos else None}


@dataclass
class Fitted:
    model: Model
    oof: np.ndarray  # each pair's out-of-fold probability
    folds: np.ndarray  # each pair's fold


def _about(about: dict | None, y: np.ndarray, oof: np.ndarray, fold: np.ndarray, k: int, threshold: float,
           precision: float) -> dict:
    info = dict(about or {})
    info.update(pairs=int(len(y)), copies=int(y.sum()), precision_target=precision,
                folds=[{"fold": f, **fold_figures(oof[fold == f], y[fold == f], threshold)} for f in range(k)],
                out_of_fold=fold_figures(oof, y, threshold))
    return info


# -- the forest (dev extra) -----------------------------------------------------------------

def _classifier(params: dict | None):
    try:
        from sklearn.ensemble import HistGradientBoostingClassifier
    except ImportError:
        raise ImportError('fitting the trees needs scikit-learn: pip install "crawler-dedup[fit]"') from None
    mono = [1 if name in MONOTONE else 0 for name in NAMES]
    return HistGradientBoostingClassifier(monotonic_cst=mono, random_state=0, **{**FOREST, **(params or {})})


def fit_forest(rows: Sequence[dict], labels: Sequence[bool], hosts: Sequence[str], precision: float = 0.997,
               k: int = 5, params: dict | None = None, weights: np.ndarray | None = None,
               about: dict | None = None, threshold_on: np.ndarray | None = None,
               text_on: np.ndarray | None = None) -> Fitted:
    """Boosted trees on the pairs, out of fold by host, the threshold for `precision` out of fold
    (on the pairs `threshold_on` marks: those drawn as a crawl meets pages, not the constructed
    hard cases taught at a density no crawl has); `text_on`: the pairs measured without the
    pages' views (as a pipeline's items come), whose out-of-fold figures at that threshold are
    reported apart."""
    x, y = values(rows), np.asarray(labels, dtype=np.float64)
    def forest_oof(train, test):
        clf = _classifier(params)
        clf.fit(x[train], y[train], sample_weight=None if weights is None else weights[train])
        return clf.predict_proba(x[test])[:, 1]

    fold, oof = out_of_fold(hosts, k, forest_oof)
    on = np.ones(len(y), dtype=bool) if threshold_on is None else np.asarray(threshold_on, dtype=bool)
    threshold = choose_threshold(oof[on], y[on], precision)
    clf = _classifier(params)
    clf.fit(x, y, sample_weight=weights)
    forest, base = export(clf)
    info = _about(about, y[on], oof[on], fold[on], k, threshold, precision)
    info["trees"] = {**FOREST, **(params or {})}
    info["all_pairs_out_of_fold"] = fold_figures(oof, y, threshold)
    if text_on is not None and np.any(text_on):
        text = np.asarray(text_on, dtype=bool)
        info["without_views"] = fold_figures(oof[text], y[text], threshold)
    return Fitted(Model(forest, base, threshold, about=info), oof, fold)


def export(clf) -> tuple[Forest, float]:
    """A fitted HistGradientBoostingClassifier's trees as arrays: (forest, baseline log-odds). A
    split's value is recomputed as the count-weighted mean of the leaves under it (the path's
    value before the split), so the contributions along a path sum to its leaf."""
    trees = [predictors[0].nodes for predictors in clf._predictors]
    width = max(len(t) for t in trees)
    shape = (len(trees), width)
    feature, left, right = np.full(shape, -1), np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=np.int64)
    threshold, value, missing = np.zeros(shape), np.zeros(shape), np.zeros(shape, dtype=bool)
    for i, nodes in enumerate(trees):
        for j in range(len(nodes)):
            if not nodes["is_leaf"][j]:
                feature[i, j] = int(nodes["feature_idx"][j])
                threshold[i, j] = float(nodes["num_threshold"][j])
                left[i, j], right[i, j] = int(nodes["left"][j]), int(nodes["right"][j])
                missing[i, j] = bool(nodes["missing_go_to_left"][j])
        counts = nodes["count"].astype(np.float64)

        def mean(j: int) -> float:
            if nodes["is_leaf"][j]:
                value[i, j] = float(nodes["value"][j])
            else:
                a, b = int(nodes["left"][j]), int(nodes["right"][j])
                va, vb = mean(a), mean(b)
                total = counts[a] + counts[b]
                value[i, j] = (va * counts[a] + vb * counts[b]) / total if total else (va + vb) / 2
            return value[i, j]
        mean(0)
    base = float(np.ravel(clf._baseline_prediction)[0])
    return Forest(feature, threshold, left, right, missing, value), base


# -- the correction (numpy only) --------------------------------------------------------------

def correction_terms() -> list[Term]:
    terms = [Term(name, "value", name, FILL.get(name, 0.0)) for name in NAMES]
    return terms + [Term(f"{name} unknown", "missing", name) for name in MISSING]


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -60, 60)))


def logistic(x: np.ndarray, y: np.ndarray, l2: np.ndarray, lower: np.ndarray, prior: np.ndarray,
             iterations: int = 100) -> np.ndarray:
    """Coefficients (the last column of `x` a constant) minimizing the log-loss plus
    sum(l2/2 * (w - prior)^2), each at or over `lower`: projected Newton steps with a line search."""
    w = np.maximum(prior.astype(np.float64), lower)

    def loss(v: np.ndarray) -> float:
        z = x @ v
        return float(np.sum(np.logaddexp(0, z) - y * z) + 0.5 * np.sum(l2 * (v - prior) ** 2))

    current = loss(w)
    for _ in range(iterations):
        p = _sigmoid(x @ w)
        g = x.T @ (p - y) + l2 * (w - prior)
        h = (x * (p * (1 - p))[:, None]).T @ x + np.diag(l2 + 1e-9)
        free = ~((w <= lower) & (g > 0))  # at its bound and pushed further out: held there
        step = np.zeros_like(w)
        step[free] = np.linalg.solve(h[np.ix_(free, free)], -g[free])
        t, trial, got = 1.0, w, current
        while t > 1e-6:
            trial = np.maximum(w + t * step, lower)
            got = loss(trial)
            if got <= current:
                break
            t /= 2
        done = current - got < 1e-10 * max(1.0, abs(current))
        w, current = trial, min(got, current)
        if done:
            break
    return w


def fit_correction(model: Model, rows: Sequence[dict], labels: Sequence[bool], hosts: Sequence[str],
                   precision: float = 0.997, k: int = 5, strength: float = 10.0, about: dict | None = None) -> Fitted:
    """`model` taught a user's pairs: its forest's log-odds weighed with a linear term a
    measurement, every weight pulled toward changing nothing (`strength`: how hard); the
    containment terms and the forest's weight stay at zero or above. The threshold is chosen on
    the pairs out of fold (by host), as the shipped model's was."""
    plain = replace(model, terms=(), coefficients=(), intercept=0.0, forest_weight=1.0)
    y = np.asarray(labels, dtype=np.float64)
    forest = np.array([plain.score(m).logit for m in rows])
    terms = correction_terms()
    raw = np.array([[t.value(m) for t in terms] for m in rows], dtype=np.float64).reshape(len(rows), len(terms))
    mean, scale = raw.mean(axis=0), raw.std(axis=0)
    scale[scale < 1e-6] = 1.0
    x = np.hstack([forest[:, None], (raw - mean) / scale, np.ones((len(y), 1))])
    lower = np.array([0.0] + [0.0 if t.op == "value" and t.of in MONOTONE else -np.inf for t in terms] + [-np.inf])
    prior = np.zeros(x.shape[1])
    prior[0] = 1.0
    l2 = np.full(x.shape[1], strength)
    fold, oof = out_of_fold(hosts, k, lambda train, test: _sigmoid(x[test] @ logistic(x[train], y[train], l2, lower,
                                                                                       prior)))
    threshold = choose_threshold(oof, y, precision) if 0 < y.sum() < len(y) else model.threshold
    w = logistic(x, y, l2, lower, prior)
    fitted = tuple(Term(t.name, t.op, t.of, t.fill, float(m), float(s)) for t, m, s in zip(terms, mean, scale))
    info = _about(about, y, oof, fold, k, threshold, precision)
    info["refitted_from"] = model.about.get("command") or model.path
    out = replace(model, terms=fitted, coefficients=tuple(float(c) for c in w[1:-1]), intercept=float(w[-1]),
                  forest_weight=float(w[0]), threshold=threshold, about={**model.about, "correction": info})
    return Fitted(out, oof, fold)


def as_dict(model: Model) -> dict:
    """The model as its file holds it (model.Model.from_dict reads it back)."""
    forest, terms = model.forest, model.terms
    trees = None if forest is None else {k: getattr(forest, k).tolist() for k in ("feature", "threshold", "left",
                                                                                  "right", "missing_left", "value")}
    return {"format": FORMAT, "features": list(NAMES), "base": model.base, "threshold": model.threshold,
            "trees": trees,
            "correction": {"terms": [{"name": t.name, "op": t.op, "of": t.of, "fill": t.fill, "mean": t.mean,
                                      "scale": t.scale} for t in terms],
                           "coefficients": list(model.coefficients), "intercept": model.intercept,
                           "forest_weight": model.forest_weight} if terms else None,
            "about": model.about}


def write(model: Model, path: str) -> None:
    """Write the model file at `path` (DEDUP_MODEL reads it), whole or not at all."""
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(as_dict(model), fh, separators=(",", ":"))
        fh.write("\n")
    os.replace(tmp, path)
