"""DEDUP_STORE_TEXT: kept pages' text in the index, dropped pages' text in the drop log."""

import json

import pytest

from crawler_dedup import Deduplicator
from crawler_dedup.config import DedupConfig
from crawler_dedup.droplog import DropLog, make_record
from crawler_dedup.exceptions import ConfigError


def _doc(d, doc_id):
    return d.index.read(lambda txn: d.index.doc(txn, doc_id))


def test_kept_text_is_stored_compressed_and_the_drop_carries_its_text(tmp_path, articles):
    gold = articles[0][1]
    edited = gold.replace(" the ", " a ", 3)
    with Deduplicator(dir=str(tmp_path / "idx")) as d:
        kept = d.check("https://s/a", text=gold)
        dropped = d.check("https://s/b", text=edited)
        assert kept.action == "keep" and dropped.action == "drop"
        doc = _doc(d, kept.doc_id)
        assert doc.text == gold
        assert len(doc.extras["tx"]) < len(gold.encode())  # zlib, not the raw text
        assert dropped.text == edited
    with DropLog(str(tmp_path / "drops.jsonl")) as log:
        log.write(make_record(dropped, "response", "s"))
    line = json.loads((tmp_path / "drops.jsonl").read_text())
    assert line["text"] == edited and line["duplicate_of"] == "https://s/a"
    with Deduplicator(dir=str(tmp_path / "idx")) as d:  # still there after a reopen (LMDB)
        assert _doc(d, kept.doc_id).text == gold


def test_store_text_off_keeps_no_text(tmp_path, articles):
    gold = articles[1][1]
    with Deduplicator(dir=str(tmp_path / "idx"), store_text=False) as d:
        kept = d.check("https://s/a", text=gold)
        dropped = d.check("https://s/b", text=gold)
        assert dropped.action == "drop" and dropped.text is None
        doc = _doc(d, kept.doc_id)
        assert doc.text is None and "tx" not in doc.extras
    assert "text" not in make_record(dropped, "response", "s")


def test_new_settings_are_validated():
    assert DedupConfig.from_settings({"DEDUP_STORE_TEXT": "0"}).store_text is False
    assert DedupConfig.from_settings({"DEDUP_LOGSTATS_INTERVAL": "0.5"}).logstats_interval == 0.5
    with pytest.raises(ConfigError, match="DEDUP_STORE_TEXT"):
        DedupConfig.from_settings({"DEDUP_STORE_TEXT": "maybe"})
    with pytest.raises(ConfigError, match="DEDUP_LOGSTATS_INTERVAL"):
        DedupConfig.from_settings({"DEDUP_LOGSTATS_INTERVAL": "-1"})


def test_index_stats_reports_the_stored_text_cost(demo_out):
    from .conftest import cli

    proc = cli("index", "stats", demo_out / "index", "--json")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    text = info["stored_text"]
    assert text["pages"] == text["with_text"] == info["pages"] > 0
    assert 0 < text["bytes_per_page"] < text["raw_bytes_per_page"]
    proc = cli("index", "stats", demo_out / "index")
    assert f"stored text (DEDUP_STORE_TEXT): {info['pages']} of {info['pages']} pages, {text['bytes_per_page']} B" in proc.stdout


def test_index_stats_counts_the_index_files_not_a_drop_log_beside_them(tmp_path, articles):
    """`disk` says "in data.mdb and lock.mdb": a drop log in the same folder (the default place)
    used to be counted too, so a dry run, which only writes its lines, looked like index growth."""
    from .conftest import cli

    where = tmp_path / "idx"
    with Deduplicator(dir=str(where)) as d:
        d.check("https://s/a", text=articles[0][1])
    (where / "droplog.jsonl").write_bytes(b"x" * 100_000)
    proc = cli("index", "stats", where, "--json")
    assert proc.returncode == 0, proc.stderr
    files = sum((where / n).stat().st_size for n in ("data.mdb", "lock.mdb") if (where / n).exists())
    assert json.loads(proc.stdout)["disk_bytes"] == files
