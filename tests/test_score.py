"""The score (core/decide/model.py): its file's round trip, its explanations adding up, the
directions it must keep, bad files refused, and a fit on a small labelled set (tools/fit.py)."""

import json
import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler_dedup import ConfigError, Deduplicator, ModelError
from crawler_dedup.core.decide.measures import NAMES
from crawler_dedup.core.decide.model import SHIPPED, Model, load
from crawler_dedup.stores import MemoryStore
from crawler_dedup.tools import fit

SHARES = [n for n in NAMES if n not in ("words_page", "words_kept")]  # (the two lengths are log10 of words)


def _measures(draw_value) -> dict:
    m = {}
    for name in NAMES:
        if name in ("words_page", "words_kept"):
            m[name] = draw_value(1.0, 4.0)
        elif name in ("exact", "same_site", "title_numbers"):
            m[name] = float(draw_value(0, 1) >= 0.5)
        else:
            m[name] = draw_value(0.0, 1.0)
    return m


measures = st.fixed_dictionaries({
    n: (st.floats(1.0, 4.0) if n in ("words_page", "words_kept")
        else st.sampled_from([0.0, 1.0]) if n in ("exact", "same_site", "title_numbers")
        else st.one_of(st.none(), st.floats(0.0, 1.0))) for n in NAMES})


def test_the_shipped_model_reads_and_says_how_it_was_fitted():
    model = load()
    assert model.forest is not None and 0.5 <= model.threshold < 1
    about = model.about
    assert about["pairs"] > 1000 and about["copies"] > 100 and about["precision_target"] >= 0.997
    assert len(about["folds"]) == 5 and about["out_of_fold"]["precision"] >= 0.99


def test_the_model_file_round_trips(tmp_path):
    model = load()
    path = tmp_path / "model.json"
    fit.write(model, str(path))
    again = Model.from_dict(json.loads(path.read_text()), str(path))
    assert fit.as_dict(again) == fit.as_dict(model)
    rnd = random.Random(5)
    for _ in range(50):
        m = _measures(lambda lo, hi: rnd.uniform(lo, hi))
        assert again.score(m) == model.score(m)


@settings(max_examples=200, deadline=None)
@given(measures)
def test_contributions_and_the_base_add_up_to_the_score(m):
    scored = load().score(m)
    assert math.isclose(load().origin + sum(v for _, v in scored.contributions), scored.logit, abs_tol=1e-2)
    assert math.isclose(scored.probability, 1 / (1 + math.exp(-scored.logit)), rel_tol=1e-9)


def _lowered(model, m: dict, name: str, more: float) -> bool:
    """Whether raising measurement `name` (by `more` of the way to its top), all else equal, lowers the score."""
    low = dict(m)
    if low[name] is None:
        low[name] = 0.0
    high = dict(low)
    top = 4.0 if name.startswith("words") else 1.0
    high[name] = min(top, low[name] + more * (top - low[name]))
    return model.score(high).logit < model.score(low).logit - 1e-9


@settings(max_examples=300, deadline=None)
@given(measures, st.sampled_from(fit.MONOTONE), st.floats(0.0, 1.0))
def test_more_containment_never_lowers_the_score(m, name, more):
    """Other things equal, more of a text inside the other (or alike titles, or a longer text)
    never makes a pair less likely a copy: the trees were fitted monotone in these."""
    assert not _lowered(load(), m, name, more)


def test_the_property_test_can_fail():
    """A tree that scores more containment lower is caught by the same check (it is not vacuous)."""
    from crawler_dedup.core.decide.model import Forest

    at = NAMES.index("contained")
    tree = Forest(np.array([[at, -1, -1]]), np.array([[0.5, 0.0, 0.0]]), np.array([[1, 0, 0]]),
                  np.array([[2, 0, 0]]), np.array([[True, False, False]]), np.array([[0.0, 1.0, -1.0]]))
    broken = Model(tree, 0.0, 0.9)
    m = {n: 0.2 for n in NAMES}
    assert _lowered(broken, m, "contained", 1.0)
    assert not _lowered(load(), m, "contained", 1.0)


@pytest.mark.parametrize("change, says", [
    (lambda raw: raw.update(format="something else"), "not a score model"),
    (lambda raw: raw.update(features=raw["features"][:-1]), "other measurements"),
    (lambda raw: raw.update(threshold=1.5), "threshold"),
    (lambda raw: raw["trees"].update(feature=[[99]]), "not of one shape"),
])
def test_a_bad_model_file_is_refused_with_a_reason(tmp_path, change, says):
    raw = json.loads(open(SHIPPED, encoding="utf-8").read())
    change(raw)
    with pytest.raises(ModelError, match=says):
        Model.from_dict(raw)


def test_dedup_model_that_cannot_be_used_fails_at_start_naming_the_setting(tmp_path):
    bad = tmp_path / "model.json"
    bad.write_text("{not json", encoding="utf-8")
    for path in (str(bad), str(tmp_path / "missing.json")):
        with pytest.raises(ConfigError, match="DEDUP_MODEL"):
            Deduplicator(model=path, store=MemoryStore())


def _labelled(n: int, seed: int) -> tuple[list[dict], list[bool], list[str]]:
    """Pairs whose label follows resemblance and title: copies resemble and share a headline."""
    rnd = random.Random(seed)
    rows, labels, hosts = [], [], []
    for i in range(n):
        copy = i % 2 == 0
        m = _measures(lambda lo, hi: rnd.uniform(lo, hi))
        m["resemblance"] = rnd.uniform(0.7, 1.0) if copy else rnd.uniform(0.05, 0.6)
        m["contained"] = m["containing"] = m["resemblance"]
        m["title"] = 1.0 if copy else rnd.uniform(0.0, 0.3)
        rows.append(m)
        labels.append(copy)
        hosts.append(f"site{i % 9}.example")
    return rows, labels, hosts


def test_a_correction_fitted_on_a_few_pairs_follows_them_and_keeps_its_directions(tmp_path):
    rows, labels, hosts = _labelled(60, 1)
    base = load()
    got = fit.fit_correction(base, rows, labels, hosts, strength=1.0)
    model = got.model
    assert len(model.terms) == len(model.coefficients) and model.forest_weight >= 0
    for term, coef in zip(model.terms, model.coefficients):
        if term.op == "value" and term.of in fit.MONOTONE:
            assert coef >= 0, term.name
    info = model.about["correction"]
    assert info["pairs"] == 60 and len(info["folds"]) == 5
    before = np.mean([base.score(m).logit for m, y in zip(rows, labels) if y]) - np.mean(
        [base.score(m).logit for m, y in zip(rows, labels) if not y])
    after = np.mean([model.score(m).logit for m, y in zip(rows, labels) if y]) - np.mean(
        [model.score(m).logit for m, y in zip(rows, labels) if not y])
    assert after > before  # taught these pairs, it tells them apart better than before
    path = tmp_path / "corrected.json"
    fit.write(model, str(path))
    again = load(str(path))
    assert again.score(rows[0]) == model.score(rows[0]) and again.terms == model.terms


def test_the_threshold_is_the_lowest_score_that_keeps_the_precision():
    scores = np.array([0.99, 0.98, 0.97, 0.9, 0.8, 0.7])
    y = np.array([1, 1, 1, 0, 1, 0], dtype=float)
    assert fit.choose_threshold(scores, y, 1.0) == 0.97
    assert fit.choose_threshold(scores, y, 0.8) == 0.8
    assert fit.choose_threshold(np.array([0.9]), np.array([0.0]), 0.99) == 0.999


def test_a_forest_fitted_on_a_small_set_is_monotone_and_scores_as_its_trees(tmp_path):
    # what benchmarks/fit_score.py does at size: out of fold by host, trees exported, read back
    rows, labels, hosts = _labelled(240, 3)
    rnd = random.Random(4)
    for i in range(60):  # pairs that contain each other more and are no copies: the trees must not follow them
        m = dict(rows[2 * i], contained=rnd.uniform(0.97, 1.0), containing=rnd.uniform(0.97, 1.0))
        rows.append(m)
        labels.append(False)
        hosts.append(f"site{i % 9}.example")
    got = fit.fit_forest(rows, labels, hosts, precision=0.99, k=3, params={"max_iter": 40, "max_depth": 3})
    model = got.model
    assert len(got.oof) == 300 and set(got.folds.tolist()) == {0, 1, 2}
    assert [f["fold"] for f in model.about["folds"]] == [0, 1, 2]
    y = np.array(labels)
    assert got.oof[y].mean() > got.oof[~y].mean() + 0.2  # out of fold it tells the copies apart
    path = tmp_path / "forest.json"
    fit.write(model, str(path))
    again = load(str(path))
    rnd = random.Random(5)
    for m in rows[:40]:
        assert abs(again.score(m).logit - model.score(m).logit) < 1e-9
        for name in fit.MONOTONE:  # the exported trees keep the fit's directions
            if m.get(name) is not None and name not in ("words_page", "words_kept"):
                more = dict(m, **{name: min(1.0, m[name] + rnd.uniform(0, 1))})
                assert again.score(more).logit >= again.score(m).logit - 1e-9, name
