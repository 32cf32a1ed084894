"""How benchmarks/fit_score.py weighs the pairs it is given, and what score_pairs.py --no-kept-text
measures: the pairs as an index without the kept texts (DEDUP_STORE_TEXT=False) measures them,
taught beside the others at KEPT_TEXTLESS of a page's weight, never setting the threshold."""

import os
import sys

import numpy as np
import pytest

from .conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import fit_score  # noqa: E402


def _row(page: str, doc: str, label: bool, kept_text: bool = True, source: str = "dev") -> dict:
    row = {"source": source, "mode": "broad", "page": page, "doc": doc, "label": label,
           "measures": {"resemblance": 0.9 if label else 0.2, "chrome_page": 0.3, "title": 1.0}}
    if not kept_text:
        row["kept_text"] = False
    return row


def test_a_pages_pairs_without_the_kept_text_share_a_smaller_weight_of_their_own():
    rows = [_row("a", "x", True), _row("a", "y", False),  # a page with two candidates
            _row("a", "x", True, kept_text=False), _row("a", "y", False, kept_text=False),
            _row("b", "x", False)]
    w = fit_score.page_weights(rows)
    assert w.tolist() == pytest.approx([0.5, 0.5, fit_score.KEPT_TEXTLESS / 2, fit_score.KEPT_TEXTLESS / 2, 1.0])
    assert 0 < fit_score.KEPT_TEXTLESS < 1


def test_pairs_without_the_kept_text_are_taught_as_they_come_and_never_set_the_threshold():
    rows = [_row("a", "x", True), _row("a", "x", True, kept_text=False)]
    again = fit_score.augmented(rows)
    assert again and all(r.get("kept_text", True) for r in again)  # (no view-less copies of them)
    assert [fit_score._taught_again(r) for r in rows] == [False, True]
    assert all(fit_score._taught_again(r) for r in again)


def test_no_kept_text_pairs_are_measured_from_the_sketches(tmp_path):
    import score_pairs
    from pages import _demo_manifest

    texts = [(a["title"], a["body"]) for a in _demo_manifest()[1]["articles"][:3]]
    rows = {}
    for kept_text in (True, False):
        group = {f"http://s{i}.example/{n}": f"g{i}" for i in range(3) for n in ("a", "b")}
        rec = score_pairs.Recorder("t", "broad", group, lambda a, b: False,
                                   None if kept_text else {"DEDUP_STORE_TEXT": False})
        for i, (title, text) in enumerate(texts):
            for n in ("a", "b"):  # a page, then its copy with a word changed on another site's URL
                body = text if n == "a" else text.replace(" the ", " a ", 1)
                url = f"http://s{i}.example/{n}"
                verdict = rec.d.check(url, text=body, title=title)
                if verdict.action == "keep" and verdict.doc_id is not None:
                    rec.kept_groups.setdefault(group[url], url)
        rows[kept_text] = [r for r in rec.rows if r["label"]]
    assert rows[True] and rows[False]
    # where the shared words sit is known only with the kept text
    assert all(r["measures"]["lead_kept"] is not None for r in rows[True])
    assert all(r["measures"]["lead_kept"] is None for r in rows[False])
    assert np.mean([r["measures"]["resemblance"] for r in rows[False]]) > 0.5
