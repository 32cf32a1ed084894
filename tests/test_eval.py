"""`crawler-dedup eval`: a user's labelled pairs, and the labelled stream of real pages (benchmarks/stream.py)."""

import json
import os
import subprocess
import sys

import pytest

from crawler_dedup.tools.pairs import read_pairs, score_pairs, sweep

from .conftest import ROOT, SHARED_DATA

sys.path.insert(0, os.path.join(ROOT, "benchmarks"))  # the stream is research code, not in the package


def _pairs(tmp_path, articles):
    golds = [a[1] for a in articles]
    rows = []
    for i, gold in enumerate(golds[:6]):
        words = gold.split(" ")
        words[len(words) // 2] = "changed"
        rows.append({"a": gold, "b": " ".join(words), "duplicate": True})
        rows.append({"a": gold, "b": golds[i + 1], "duplicate": False})
    rows.append({"a_html": articles[0][0].decode("utf-8", "replace"), "b": golds[0], "duplicate": True})
    rows.append({"a": "too short", "b": golds[0], "duplicate": False})
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_pairs_are_scored_by_every_verifier_and_swept(tmp_path, articles):
    scored = score_pairs(read_pairs(str(_pairs(tmp_path, articles))))
    assert scored[-1] is None  # too short to fingerprint
    dups = [s for s in scored if s and s.duplicate]
    others = [s for s in scored if s and not s.duplicate]
    assert len(dups) == 7 and len(others) == 6
    assert min(s.resemblance for s in dups[:6]) > 0.9 and max(s.resemblance for s in others) < 0.1
    assert min(s.qgram for s in dups[:6]) > 0.9 and min(s.swlr for s in dups[:6]) > 0.9
    rows = dict((t, (p, r)) for t, p, r, _ in sweep([s for s in scored if s], "resemblance"))
    assert rows[0.5] == (1.0, 1.0)


def test_eval_cli_prints_a_sweep_and_rejects_bad_files(tmp_path, articles):
    path = _pairs(tmp_path, articles)
    proc = subprocess.run([sys.executable, "-m", "crawler_dedup", "eval", "--pairs", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "14 pairs, 7 labelled duplicate; 13 decided, 1 skipped (1 too_short; a skipped pair counts as kept" in proc.stdout
    assert "these settings: P 1.000  R 1.000" in proc.stdout
    assert "the score's threshold swept" in proc.stdout and "<- best F1 at P >= 0.995" in proc.stdout
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": "x"}\n', encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "crawler_dedup", "eval", "--pairs", str(bad)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "bad.jsonl:1" in proc.stderr
    for bad_setting in ("DEDUP_K=99", "DEDUP_BOGUS=1", "threshold=0.5"):
        proc = subprocess.run([sys.executable, "-m", "crawler_dedup", "eval", "--pairs", str(path), "-s", bad_setting],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and bad_setting.split("=")[0] in proc.stderr
    bad.write_text('{"a": "x", "b": "y", "duplicate": "false"}\n', encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "crawler_dedup", "eval", "--pairs", str(bad)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "must be true or false" in proc.stderr


def test_pair_decisions_follow_the_settings(tmp_path, articles):
    from crawler_dedup.tools.pairs import decide_pairs, pair_texts, pr

    pairs = read_pairs(str(_pairs(tmp_path, articles)))
    texts = pair_texts(pairs)
    labels = [p["duplicate"] for p in pairs]
    default = [d for d, _ in decide_pairs(texts, {})]
    assert pr(default, labels)[:2] == (1.0, 1.0)
    # the score's threshold decides: a page whose second half is another article's scores in between
    words, other = texts[0][0][0].split(" "), texts[2][0][0].split(" ")
    half = [((texts[0][0][0], None, None), (" ".join(words[:len(words) * 6 // 10] + other[len(other) * 6 // 10:]),
                                             None, None))]
    assert [d for d, _ in decide_pairs(half, {})] == [False]
    assert [d for d, _ in decide_pairs(half, {"DEDUP_SCORE_THRESHOLD": 0.05})] == [True]
    # another model file decides as it says (DEDUP_MODEL): its threshold over every pair's score
    from dataclasses import replace

    from crawler_dedup.core.decide.model import load
    from crawler_dedup.tools import fit

    strict = tmp_path / "strict.json"
    fit.write(replace(load(), threshold=0.99999), str(strict))
    assert pr([d for d, _ in decide_pairs(texts, {"DEDUP_MODEL": str(strict)})], labels)[1] < 0.5


@pytest.mark.skipif(not os.path.isdir(SHARED_DATA), reason="../shared/data is not beside the checkout")
def test_default_settings_meet_the_quality_targets_on_real_copies():
    # benchmarks/realcopies.py, seed 7: copies made the way real ones are, from real pages only
    import realcopies
    from stream import extract_all, minhash_lsh, ours, score_stream

    stream, _ = realcopies.build(SHARED_DATA, 7)
    texts = extract_all(stream)
    realcopies.mark_template_holders(stream, texts)
    ours_score = score_stream("default", stream, ours("default", texts)[1])
    lsh = score_stream("lsh", stream, minhash_lsh("lsh", texts, 0.5)[1])
    assert ours_score.precision >= 0.997 and ours_score.recall >= 0.96, (ours_score.fp, ours_score.fn)
    assert ours_score.precision > lsh.precision and ours_score.recall > lsh.recall
    assert all(ours_score.by_kind[k] / ours_score.kinds[k] >= 0.9 for k in realcopies.VARIANTS)


def test_eval_pairs_counts_skipped_duplicates_as_missed_and_lists_them(tmp_path, articles):
    gold = articles[0][1]
    rows = [{"a": "too short", "b": "too short too", "duplicate": True},
            {"a": gold, "b": "also short", "duplicate": True},
            {"a": "tiny", "b": "text", "duplicate": False}]
    path = tmp_path / "skipped.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "crawler_dedup", "eval", "--pairs", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "0 decided, 3 skipped" in proc.stdout
    assert "these settings: P n/a  R 0.000" in proc.stdout  # never P 1.000 R 1.000 when nothing was decided
    assert "missed duplicates (labelled duplicate, kept): 2" in proc.stdout
    listed = {line.split()[0]: line for line in proc.stdout.splitlines() if line.startswith(str(path))}
    assert "skipped: too_short" in listed[f"{path}:1"] and "skipped: too_short" in listed[f"{path}:2"]
    data = json.loads(subprocess.run([sys.executable, "-m", "crawler_dedup", "eval", "--pairs", str(path), "--json"],
                                     capture_output=True, text=True, timeout=120, check=True).stdout)
    assert [r["line"] for r in data["wrong"]["missed"]] == [1, 2] and data["settings"]["precision"] is None


def test_eval_pairs_lists_a_missed_pair_with_its_scores(tmp_path, articles):
    golds = [a[1] for a in articles]
    rows = [{"a": golds[0], "b": golds[0], "duplicate": True},
            {"a": golds[1], "b": golds[2], "duplicate": True}]  # labelled duplicate, wrongly: a miss
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "crawler_dedup", "eval", "--pairs", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "these settings: P 1.000  R 0.500  F1 0.667" in proc.stdout
    missed = [line.split() for line in proc.stdout.splitlines() if line.startswith(f"{path}:2 ")]
    assert missed and missed[0][1] == "kept" and float(missed[0][-2]) < 0.1, proc.stdout


def test_a_sweep_where_nothing_is_called_a_duplicate_has_no_precision():
    from crawler_dedup.tools.pairs import PairScores

    scored = [PairScores(duplicate=True, resemblance=0.2, containment=0.2, qgram=0.2, swlr=0.2, distance=20,
                         exact=False),
              PairScores(duplicate=False, resemblance=0.1, containment=0.1, qgram=0.1, swlr=0.1, distance=30,
                         exact=False)]
    rows = {t: (p, r, f) for t, p, r, f in sweep(scored, "resemblance")}
    assert rows[0.9] == (None, 0.0, None)  # nothing dropped: no precision (it used to read 1.00), the copy missed
    assert rows[0.15] == (1.0, 1.0, 1.0)
    only_distinct = [s for s in scored if not s.duplicate]
    assert all(r is None for _, _, r, _ in sweep(only_distinct, "resemblance"))  # no duplicate pair: no recall


def _fit_pairs(tmp_path, articles, n=None):
    """A copy with one word changed (duplicate) and a page whose last 30% is another article (not),
    for each article, each pair on hosts of its own."""
    golds = [a[1] for a in articles]
    rows = []
    for i in range(len(golds) - 1):
        words, other = golds[i].split(" "), golds[i + 1].split(" ")
        changed = list(words)
        changed[len(changed) // 2] = "changed"
        rows.append({"a": golds[i], "b": " ".join(changed), "duplicate": True,
                     "a_url": f"https://s{i}.example/a", "b_url": f"https://t{i}.example/b"})
        rows.append({"a": golds[i], "b": " ".join(words[:len(words) * 7 // 10] + other[len(other) * 7 // 10:]),
                     "duplicate": False, "a_url": f"https://s{i}.example/a", "b_url": f"https://u{i}.example/c"})
    path = tmp_path / "fit.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:n]), encoding="utf-8")
    return path, rows[:n]


def test_eval_fit_writes_a_model_that_dedup_model_decides_with(tmp_path, articles):
    from crawler_dedup.core.decide.model import load

    path, rows = _fit_pairs(tmp_path, articles)
    out = tmp_path / "my-model.json"
    proc = subprocess.run([sys.executable, "-m", "crawler_dedup", "eval", "--fit", str(path), "--out", str(out),
                           "--strength", "1"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"{len(rows)} pairs, {len(rows)} weighed ({len(rows) // 2} labelled duplicate)" in proc.stdout
    assert "taught these pairs, out of fold" in proc.stdout and "  fold 4:" in proc.stdout
    model = load(str(out))
    info = model.about["correction"]
    assert info["pairs"] == len(rows) and info["copies"] == len(rows) // 2 and info["pairs_file"] == str(path)
    assert model.terms and model.forest is not None  # the shipped trees, and a correction on top
    # the model file is what DEDUP_MODEL reads: a crawl's decision (eval --pairs runs the real one)
    proc = subprocess.run([sys.executable, "-m", "crawler_dedup", "eval", "--pairs", str(path), "--json",
                           "-s", f"DEDUP_MODEL={out}"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["settings"]["precision"] == 1.0 and data["settings"]["recall"] == 1.0
    bad = subprocess.run([sys.executable, "-m", "crawler_dedup", "eval", "--pairs", str(path),
                          "-s", f"DEDUP_MODEL={tmp_path / 'missing.json'}"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "DEDUP_MODEL" in bad.stderr and "Traceback" not in bad.stderr


def test_eval_fit_refuses_too_few_pairs_and_says_how_many(tmp_path, articles):
    path, _ = _fit_pairs(tmp_path, articles, n=6)
    proc = subprocess.run([sys.executable, "-m", "crawler_dedup", "eval", "--fit", str(path), "--out",
                           str(tmp_path / "m.json")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "6 of 6 pairs were weighed (3 duplicates)" in proc.stderr
    assert "10 or more" in proc.stderr and not (tmp_path / "m.json").exists()
