"""Revisits (DEDUP_REVISIT): a page whose URL is in the index is never a copy of itself.
Unchanged, updated, copied from another URL, superseded by its canonical URL; the URL table,
the format-3 migration. Deduplicator level, on both stores; crawls are in test_recrawl.py."""

import random
import tempfile

import lmdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crawler_dedup import Deduplicator
from crawler_dedup.core.index.records import url_key
from crawler_dedup.core.page.site import canonical_url
from crawler_dedup.stores.base import FORMAT_VERSION

from .conftest import write_plain_model

# the texts below are made up (no title, a few words repeated): decided by resemblance, the
# subject being revisits, canonicals and the URL table, not the score
PLAIN = write_plain_model(tempfile.mkdtemp())


def words(tag, n=120):
    return " ".join(f"{tag}{i} plain words of {tag} text" for i in range(n // 6))


A, B, C = words("alpha"), words("beta"), words("gamma")
A_FIXED = A + " A correction: the council voted on Tuesday and the figures were revised by the ministry."
A_NEW_DATE = "Updated 23 November 2026 10:31, 1,204 views.\n" + A
A_OTHER_DATE = "Updated 24 November 2026 9:02, 999 views.\n" + A


@pytest.fixture(params=["memory", "lmdb"])
def dedup(request, tmp_path):
    kw = {"backend": "memory"} if request.param == "memory" else {"dir": str(tmp_path / "idx"), "lmdb_sync": False}
    with Deduplicator(model=PLAIN, **kw) as d:
        yield d


def urls_and_docs(d):
    return d.index.read(lambda t: (t.url_count(), t.doc_count()))


def test_same_text_is_unchanged_not_a_copy_of_itself(dedup):
    first = dedup.check("https://s/a", text=A, now=1000)
    v = dedup.check("https://s/a", text=A, now=2000)
    assert (v.action, v.reason, v.revisit, v.measure, v.duplicate_of) == ("drop", "unchanged", "unchanged", "exact", "https://s/a")
    assert v.kept_at == 1000 and v.similarity == 1.0 and v.distance == 0 and v.doc_id == first.doc_id
    assert urls_and_docs(dedup) == (1, 1)


def test_only_churn_changed_is_unchanged(dedup):
    dedup.check("https://s/a", text=A_NEW_DATE)
    v = dedup.check("https://s/a", text=A_OTHER_DATE)
    assert (v.action, v.reason, v.measure) == ("drop", "unchanged", "churn") and 0.5 < v.similarity <= 1
    assert v.text == A_OTHER_DATE  # the dropped text differs from the kept one: logged for `show`


@pytest.mark.parametrize("store_text", [True, False])
@pytest.mark.parametrize("old, new, unchanged", [
    ("Updated Nov 23, 2026 10:31 AM EST", "Updated Nov 24, 2026 9:02 PM EST", True),
    ("Posted 2026-11-23T10:31:00Z | 1,204 views", "Posted 2026-11-24T09:02:11Z | 1,388 views", True),
    ("By Jane Doe, 5 minutes ago", "By Jane Doe, 2 hours ago", True),
    ("Price: $19.99", "Price: $17.99", False),  # a changed number is an edit, not churn
    ("Final score 3-2", "Final score 1-0", False),
    ("Updated Nov 23, 2026", "Corrected Nov 24, 2026", False),  # a changed word
    ("By Jane Doe | Published 10:31 a.m. ET Nov. 23, 2026", "By Jane Doe | Published 9:02 p.m. ET Nov. 24, 2026", True),
    ("1,204 views · 12 comments", "1,388 views · 15 comments", True),
    # short sentences of the article are content, not metadata lines
    ("Sentencing is scheduled for Feb. 14.", "Sentencing is scheduled for Feb. 21.", False),
    ("Polls close at 8:00 p.m.", "Polls close at 9:00 p.m.", False),
    ("He died 2 days ago", "He died 3 days ago", False),
    ("52 votes", "48 votes", False),
    # capitalized words that begin like a month are no month
    ("Maryland 21, Ohio State 17", "Maryland 24, Ohio State 17", False),
    ("C. Martinez 1 goal", "C. Martinez 2 goal", False),
    ("Decker 12 points", "Decker 14 points", False),
    # title-case headings and labels are content: no byline cue word
    ("Application Deadline: March 14, 2026", "Application Deadline: April 30, 2026", False),
    ("Hearing Postponed To Feb. 14", "Hearing Postponed To Feb. 21", False),
    ("Polls Close At 8:00 PM", "Polls Close At 9:00 PM", False),
    ("Senate Vote 52:48", "Senate Vote 49:51", False),
    ("Release 2.4.10", "Release 2.4.11", False),
    ("Company Buys Back 5M Shares", "Company Buys Back 9M Shares", False),
    ("EVENT STARTS 7:30 PM", "EVENT STARTS 9:30 PM", False),
    ("Monday 23 November 2026", "Tuesday 24 November 2026", True),  # a dateline alone
])
def test_churn_lines_against_edits(old, new, unchanged, store_text):
    body = "\n".join(A[i:i + 200] for i in range(0, len(A), 200))  # lines of a real length
    with Deduplicator(model=PLAIN, backend="memory", store_text=store_text) as d:
        d.check("https://s/a", text=old + "\n" + body)
        v = d.check("https://s/a", text=new + "\n" + body)
        assert (v.reason == "unchanged", v.revisit) == (unchanged, "unchanged" if unchanged else "updated")


def test_a_date_inside_a_sentence_is_content():
    sentence = "The court said on Monday that the hearing will go ahead as planned and that sentencing is "
    with Deduplicator(model=PLAIN, backend="memory") as d:
        d.check("https://s/a", text=A + "\n" + sentence + "scheduled for Feb. 14.")
        assert d.check("https://s/a", text=A + "\n" + sentence + "scheduled for Feb. 21.").revisit == "updated"


def test_a_correction_is_an_update_that_replaces_the_entry(dedup):
    dedup.check("https://s/a", text=A)
    old = dedup.index.read(lambda t: dedup.index.by_url(t, "https://s/a"))
    v = dedup.check("https://s/a", text=A_FIXED)
    assert (v.action, v.revisit, v.reason) == ("keep", "updated", None)
    assert urls_and_docs(dedup) == (1, 1)
    doc = dedup.index.read(lambda t: dedup.index.by_url(t, "https://s/a"))
    assert doc.doc_id == v.doc_id != old.doc_id and doc.fingerprint == v.fingerprint and doc.text == A_FIXED
    assert dedup.index.read(lambda t: (t.doc_get(old.doc_id), t.fp_docs(old.fingerprint))) == (None, [v.doc_id] if old.fingerprint == v.fingerprint else [])
    # copies of the new version elsewhere are caught, as copies of the updated page
    copy = dedup.check("https://mirror/a", text=A_FIXED)
    assert (copy.action, copy.reason, copy.duplicate_of) == ("drop", "exact", "https://s/a")
    # and the URL is unchanged from now on
    assert dedup.check("https://s/a", text=A_FIXED).reason == "unchanged"


def test_the_old_version_no_longer_matches_after_a_rewrite(dedup):
    half = A.split(" ")
    old = " ".join(half[: len(half) // 2]) + " " + B
    new = " ".join(half[: len(half) // 2]) + " " + C
    dedup.check("https://s/a", text=old)
    assert dedup.check("https://s/a", text=new).revisit == "updated"
    assert dedup.check("https://elsewhere/old", text=old).action == "keep"  # its entry is gone


def test_new_text_copied_from_another_url_is_that_pages_copy(dedup):
    dedup.check("https://s/a", text=A)
    dedup.check("https://s/b", text=B)
    v = dedup.check("https://s/b", text=A)
    assert (v.action, v.reason, v.revisit, v.duplicate_of) == ("drop", "exact", "copy", "https://s/a")
    # its own old entry stays (storage still holds it); a copy of it is still caught
    assert dedup.check("https://t/b", text=B).duplicate_of == "https://s/b"


def test_revisit_keep_never_drops_a_revisit(tmp_path):
    with Deduplicator(model=PLAIN, backend="memory", revisit="keep") as d:
        d.check("https://s/a", text=A)
        d.check("https://s/b", text=B)
        assert d.check("https://s/c", text=A).action == "drop"  # not a revisit: a copy as ever
        v = d.check("https://s/a", text=A)
        assert (v.action, v.reason) == ("keep", "unchanged")
        assert d.check("https://s/b", text=A).action == "keep"  # a copy of another URL's page, kept


def test_revisit_drop_is_the_old_behaviour(tmp_path):
    with Deduplicator(model=PLAIN, backend="memory", revisit="drop") as d:
        d.check("https://s/a", text=A)
        v = d.check("https://s/a", text=A)  # (no URL lookup: the same text is a copy of the page kept at its URL)
        assert (v.action, v.duplicate_of, v.revisit) == ("drop", "https://s/a", None)


def test_unchanged_keep_keeps_and_counts(tmp_path):
    with Deduplicator(model=PLAIN, backend="memory", unchanged="keep") as d:
        d.check("https://s/a", text=A)
        v = d.check("https://s/a", text=A)
        assert (v.action, v.reason, v.revisit) == ("keep", "unchanged", "unchanged")


def test_dry_run_flags_an_unchanged_page():
    with Deduplicator(model=PLAIN, backend="memory", dry_run=True) as d:
        d.check("https://s/a", text=A)
        assert d.check("https://s/a", text=A).action == "flag"


def test_urls_are_canonicalized_as_scrapy_does(dedup):
    dedup.check("https://s/a?b=2&a=1#top", text=A)
    v = dedup.check("https://s/a?a=1&b=2", text=A)
    assert v.reason == "unchanged"
    assert canonical_url("https://s/a?b=2&a=1#x") == "https://s/a?a=1&b=2"
    assert url_key("https://s/a?b=2&a=1") == url_key("https://s/a?a=1&b=2") != url_key("https://s/a")


def test_window_expired_entry_is_replaced_not_a_revisit():
    with Deduplicator(model=PLAIN, backend="memory", window=100) as d:
        d.check("https://s/a", text=A, now=1000)
        v = d.check("https://s/a", text=A, now=5000)
        assert (v.action, v.revisit) == ("keep", None)
        assert urls_and_docs(d) == (1, 1)


CANON = ("<html><head><title>{t}</title><link rel='canonical' href='{c}'></head>"
         "<body><article><p>{p}</p></article></body></html>")


def test_canonical_page_supersedes_its_earlier_copy(dedup):
    mirror = dedup.check("https://m/copy", text=A, canonical="https://s/a")
    assert mirror.action == "keep"
    v = dedup.check("https://s/a", text=A)
    assert v.action == "keep" and v.superseded["url"] == "https://m/copy" and v.superseded["similarity"] == 1.0
    assert urls_and_docs(dedup) == (1, 1)
    again = dedup.check("https://m/copy", text=A)  # no longer a revisit: now a copy of the canonical page
    assert (again.action, again.duplicate_of) == ("drop", "https://s/a")


def test_canonical_found_in_the_html_and_off_by_setting():
    html_m = CANON.format(t="T", c="/a", p=A).encode()
    with Deduplicator(model=PLAIN, backend="memory") as d:
        d.check("https://s/m", html=html_m)
        assert d.check("https://s/a", text=A).superseded["url"] == "https://s/m"
    with Deduplicator(model=PLAIN, backend="memory", canonical=False) as d:
        d.check("https://s/m", html=html_m)
        v = d.check("https://s/a", text=A)
        assert (v.action, v.duplicate_of, v.superseded) == ("drop", "https://s/m", None)


def test_self_canonical_changes_nothing(dedup):
    dedup.check("https://s/a", text=A, canonical="https://s/a")
    v = dedup.check("https://s/b", text=A, canonical="https://s/b")
    assert (v.action, v.duplicate_of, v.superseded) == ("drop", "https://s/a", None)


def _make_format3(path):
    """An index as format 3 wrote it: no URL table, format 3 in meta, and two records of one URL
    (format 3 kept a page that changed a lot again, beside its old record)."""
    with Deduplicator(model=PLAIN, dir=path, lmdb_sync=False, revisit="drop") as d:
        d.check("https://s/a", text=A)
        d.check("https://s/b", text=B)
        d.check("https://s/copy", text=A)
        d.check("https://s/b", text=C)  # kept again at the same URL
    env = lmdb.open(path, max_dbs=1100)
    with env.begin(write=True) as txn:
        txn.drop(env.open_db(b"urls", txn=txn), delete=True)
        txn.put(b"format", b"3", db=env.open_db(b"meta", txn=txn))
        assert txn.stat(env.open_db(b"docs", txn=txn))["entries"] == 3
    env.close()


def test_format3_index_is_migrated_in_place(tmp_path):
    path = str(tmp_path / "idx")
    _make_format3(path)
    with Deduplicator(model=PLAIN, dir=path) as d:
        assert d.index.read(lambda t: (t.meta_get("format"), t.url_count(), t.doc_count())) == (
            str(FORMAT_VERSION).encode(), 2, 2)  # b's older record is gone: b's page is its newest
        assert d.check("https://s/a", text=A).reason == "unchanged"
        assert d.check("https://s/b", text=C).reason == "unchanged"
        v = d.check("https://s/b", text=B)  # b's old text: an update, never a copy of itself
        assert (v.action, v.revisit) == ("keep", "updated")
        assert d.check("https://t/b", text=C).action == "keep"  # b's C entry was replaced by B


def test_migration_runs_through_the_cli_too(tmp_path):
    from .conftest import cli

    path = str(tmp_path / "idx")
    _make_format3(path)
    proc = cli("index", "stats", path)
    assert proc.returncode == 0 and "format 3 (migrated to 4" in proc.stdout
    proc = cli("index", "remove", "https://s/b", "--dir", path, "--yes")
    assert proc.returncode == 0, proc.stderr
    with Deduplicator(model=PLAIN, dir=path) as d:  # every record of b is gone: its texts are new again
        assert d.index.read(lambda t: (t.meta_get("format"), t.url_count(), t.doc_count())) == (
            str(FORMAT_VERSION).encode(), 1, 1)
        assert d.check("https://t/x", text=B).action == d.check("https://t/y", text=C).action == "keep"


def test_an_orphan_record_of_the_url_is_never_its_match(tmp_path):
    """DEDUP_REVISIT=drop can leave an older record of a URL; a later revisit does not match it."""
    from crawler_dedup.stores import MemoryStore

    store = MemoryStore()
    with Deduplicator(model=PLAIN, store=store, revisit="drop") as d:
        d.check("https://s/b", text=B)
        assert d.check("https://s/b", text=C).action == "keep"  # a second record of the URL
    with Deduplicator(model=PLAIN, store=store) as d:
        v = d.check("https://s/b", text=B)
        assert (v.action, v.revisit) == ("keep", "updated")


def test_dry_run_canonical_rule_changes_nothing():
    with Deduplicator(model=PLAIN, backend="memory", dry_run=True) as d:
        d.check("https://m/copy", text=A, canonical="https://s/a")
        v = d.check("https://s/a", text=A)
        assert v.action == "keep" and v.superseded["url"] == "https://m/copy"
        assert d.index.read(lambda t: (t.url_count(), t.doc_count())) == (1, 1)
        assert d.index.read(lambda t: d.index.by_url(t, "https://m/copy")) is not None


def test_pages_naming_each_other_do_not_swap():
    with Deduplicator(model=PLAIN, backend="memory") as d:
        d.check("https://s/x", text=A, canonical="https://s/y")
        v = d.check("https://s/y", text=A, canonical="https://s/x")  # y names x: y is not the canonical page
        assert (v.action, v.duplicate_of, v.superseded) == ("drop", "https://s/x", None)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 5)), min_size=1, max_size=30),
       seed=st.integers(0, 1000))
def test_revisits_against_a_model(steps, seed):
    """Random crawls of 5 URLs over 6 texts (distinct, or one text's correction): a page is
    never dropped as a copy of its own URL; an unchanged page is dropped exactly when its URL's
    entry holds its text; one entry per URL; an update is never dropped unless another URL
    holds its text."""
    rnd = random.Random(seed)
    base = [words(tag) for tag in ("red", "green", "blue")]  # (tags apart in letters, not only digits)
    texts = base + [t + f" A correction number {rnd.randint(1, 9)} was added here today." for t in base]
    with tempfile.TemporaryDirectory() as tmp:
        with Deduplicator(model=PLAIN, dir=tmp, lmdb_sync=False) as d:
            model = {}  # url -> text of its entry
            for u, t in steps:
                url, text = f"https://s/{u}", texts[t]
                v = d.check(url, text=text)
                if v.action == "drop":
                    assert v.duplicate_of != url or v.reason == "unchanged"
                if model.get(url) == text:
                    assert (v.action, v.reason) == ("drop", "unchanged")
                elif v.action == "keep":
                    model[url] = text
                else:  # dropped: another URL's entry holds this text or a near copy of it
                    assert v.duplicate_of in {f"https://s/{x}" for x in range(5)} - {url}
                    assert model[v.duplicate_of] in texts
                count = d.index.read(lambda t: (t.url_count(), t.doc_count()))
                assert count == (len(model), len(model))
                for m_url, m_text in model.items():
                    assert d.index.read(lambda t: d.index.by_url(t, m_url)).text == m_text


@pytest.mark.parametrize("html, expected", [
    (b'<html><head><link href="/a?x=1&amp;y=2" rel="Canonical"></head><body>', "https://h/a?x=1&y=2"),
    (b'<head><meta property="og:url" content="https://o/x"><link rel="canonical" href="https://c/y">', "https://c/y"),
    ("<meta content='https://og/x' property=og:url>", "https://og/x"),
    (b'<link rel="canonical" href="javascript:alert(1)">', None),
    (b"<head></head><body><link rel=canonical href=/in-body>", None),  # only the head counts
    (b'<link rel="alternate canonical" href="/caf\xc3\xa9">', "https://h/caf\u00e9"),
    (b"<html><body>no head at all</body></html>", None),
    (b"", None),
])
def test_canonical_link(html, expected):
    from crawler_dedup.core.page.extract import canonical_link

    assert canonical_link(html, "https://h/p/q") == expected


def test_pages_filed_by_a_killed_crawl_are_passed_on_again(tmp_path):
    """A crawl killed after filing a page may not have stored it (a feed exporter buffers): the
    next crawl passes such a page on again once, instead of dropping it as unchanged."""
    import subprocess
    import sys

    path = str(tmp_path / "idx")
    script = ("import os, sys; from crawler_dedup import Deduplicator\n"
              "d = Deduplicator(dir=sys.argv[1]).open()\n"
              "assert d.check('https://s/a', text=sys.argv[2]).revisit == 'updated'\n"
              "os._exit(0)  # killed: never closed\n")
    with Deduplicator(model=PLAIN, dir=path) as d:  # a crawl that ended
        d.check("https://s/a", text=A)
        d.check("https://s/b", text=B)
    proc = subprocess.run([sys.executable, "-c", script, path, A_FIXED], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    with Deduplicator(model=PLAIN, dir=path) as d:
        v = d.check("https://s/a", text=A_FIXED)  # filed by the killed run: passed on again
        assert (v.action, v.reason, v.resent) == ("keep", "unchanged", True)
        assert d.check("https://s/b", text=B).action == "drop"  # filed by a run that ended
        assert d.check("https://s/a", text=A_FIXED).action == "drop"  # once only
    with Deduplicator(model=PLAIN, dir=path) as d:
        v = d.check("https://s/a", text=A_FIXED)
        assert (v.action, v.reason, v.resent) == ("drop", "unchanged", False)


def test_an_interrupted_migration_run_again_keeps_each_urls_newest_record(tmp_path):
    import subprocess
    import sys

    path = str(tmp_path / "idx")
    _make_format3(path)
    cut = ("import os, sys\nfrom crawler_dedup import Deduplicator\nfrom crawler_dedup.core.index.neardup import NearDupIndex\n"
           "NearDupIndex.remove = lambda *a: os._exit(9)  # killed as the older records go\n"
           "Deduplicator(dir=sys.argv[1]).open()\n")
    proc = subprocess.run([sys.executable, "-c", cut, path], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 9, proc.stderr
    with Deduplicator(model=PLAIN, dir=path) as d:
        assert d.index.read(lambda t: (t.url_count(), t.doc_count())) == (2, 2)
        assert d.index.read(lambda t: d.index.by_url(t, "https://s/b")).text == C
        assert d.check("https://t/c", text=C).duplicate_of == "https://s/b"


def test_items_without_a_url_have_no_url_entry_and_survive_migration(tmp_path):
    path = str(tmp_path / "idx")
    texts = [words(tag) for tag in ("red", "green", "blue")]
    with Deduplicator(model=PLAIN, dir=path, lmdb_sync=False) as d:
        for text in texts:
            assert d.check("", text=text, stage="item").action == "keep"
        assert d.index.read(lambda t: (t.url_count(), t.doc_count())) == (0, 3)
    env = lmdb.open(path, max_dbs=1100)
    with env.begin(write=True) as txn:
        txn.put(b"format", b"3", db=env.open_db(b"meta", txn=txn))
    env.close()
    with Deduplicator(model=PLAIN, dir=path) as d:
        assert d.index.read(lambda t: (t.url_count(), t.doc_count())) == (0, 3)
        assert d.check("", text=texts[0], stage="item").action == "drop"


def test_two_live_crawls_on_one_index_do_not_resend_each_others_pages():
    from crawler_dedup.stores import MemoryStore

    store = MemoryStore()
    first, second = Deduplicator(model=PLAIN, store=store).open(), Deduplicator(model=PLAIN, store=store).open()
    first.check("https://s/n", text=B)
    for _ in range(3):  # both runs are open, both processes alive: neither was killed
        assert (second.check("https://s/n", text=B).action, first.check("https://s/n", text=B).action) == ("drop", "drop")


def test_a_crawl_killed_in_another_container_is_known_killed_once_its_lease_runs_out(tmp_path, monkeypatch):
    """A crawl restarted in a new container has another hostname, and its old pid may be alive
    here (pid 1 in every container): the pid says nothing. A run whose marker was not renewed
    for RUN_LEASE was killed; a live run's marker, renewed by its commits, stays open."""
    import json
    import os

    from crawler_dedup.core.index import neardup
    from crawler_dedup.core.index.neardup import RUN_LEASE, _open_run

    path = str(tmp_path / "idx")
    with Deduplicator(model=PLAIN, dir=path) as d:
        d.check("https://s/b", text=B)
    with Deduplicator(model=PLAIN, dir=path) as d:  # the "killed" run: its marker as another container left it
        d.check("https://s/a", text=A)
        run, d.run = d.run, 0
        marker = {"host": "crawler-7f9c", "pid": os.getpid(), "beat": neardup.time.time()}
        d.index.write(lambda txn: txn.meta_put(_open_run(run), json.dumps(marker).encode()))
    with Deduplicator(model=PLAIN, dir=path) as d:  # within the lease: another host's live crawl
        assert d.check("https://s/a", text=A).resent is False
    clock = neardup.time.time() + RUN_LEASE + 60
    monkeypatch.setattr(neardup.time, "time", lambda: clock)
    with Deduplicator(model=PLAIN, dir=path) as d:
        v = d.check("https://s/a", text=A)
        assert (v.action, v.reason, v.resent) == ("keep", "unchanged", True)
        assert d.check("https://s/b", text=B).resent is False  # (its run ended)
        clock += RUN_LEASE / 2  # this run renews its marker as it commits: never taken for killed
        d.check("https://s/c", text=C)
        clock += RUN_LEASE / 2 + 60
        assert not d.index.read(lambda txn: d.index.run_killed(txn, d.run))


def test_an_old_index_is_met_by_one_path(tmp_path):
    """doctor names the format and the fix; verify reads a format it migrates as it is (and
    writes nothing); rebuild names the whole old file for what it is; a format it cannot migrate
    gets one answer everywhere (`index add`)."""
    import json
    import subprocess
    import sys

    import lmdb

    from .conftest import cli

    path = str(tmp_path / "idx")
    _make_format3(path)
    proc = cli("index", "verify", "--dir", path)
    assert proc.returncode == 0 and "format 3, read as it is" in proc.stdout and "whole (3 kept pages" in proc.stdout
    env = lmdb.open(path, max_dbs=1100, readonly=True)
    with env.begin() as txn:
        assert txn.get(b"format", db=env.open_db(b"meta", txn=txn)) == b"3"  # nothing migrated by verify
    env.close()
    project = tmp_path / "shop"
    subprocess.run([sys.executable, "-m", "scrapy", "startproject", "shop", str(project)], check=True,
                   capture_output=True, timeout=60)
    got = json.loads(cli("doctor", "--json", "-s", f"DEDUP_DIR={path}", cwd=project).stdout)
    checks = {c["check"]: c for c in got["checks"]}
    assert checks["index format"]["status"] == "warn" and "format 3" in checks["index format"]["detail"]
    proc = cli("index", "rebuild", "--dir", path, "--yes")
    assert proc.returncode == 0 and "data.mdb.old-" in proc.stdout, proc.stdout + proc.stderr
    # format 2: migrated by nothing; the crawl's, doctor's, verify's and rebuild's answer is the same
    env = lmdb.open(path, max_dbs=1100)
    with env.begin(write=True) as txn:
        txn.put(b"format", b"2", db=env.open_db(b"meta", txn=txn))
    env.close()
    said = [cli("index", "verify", "--dir", path).stderr, cli("index", "rebuild", "--dir", path, "--yes").stderr,
            json.dumps(json.loads(cli("doctor", "--json", "-s", f"DEDUP_DIR={path}", cwd=project).stdout))]
    for text in said:
        assert "format version 2" in text and "crawler-dedup index add" in text, text
    with pytest.raises(Exception) as err:
        with Deduplicator(model=PLAIN, dir=path) as d:
            d.check("https://s/z", text=A)
    assert "crawler-dedup index add" in str(err.value)


def test_a_crawl_killed_a_moment_ago_is_known_killed_while_its_process_is_still_a_zombie(tmp_path, zombie):
    """Found by a user's walk: `timeout -s KILL 11 scrapy crawl ...; scrapy crawl ...` (the crawl
    run again at once). The killed process stays a zombie until its parent reaps it, over a second
    here, and `kill -0` still finds a zombie: the first pages of the new crawl were dropped as
    unchanged (7 and 14 of about 200 in two walks), never reaching storage. A zombie is gone."""
    import json
    import socket

    from crawler_dedup.core.index import neardup
    from crawler_dedup.core.index.neardup import _open_run

    path = str(tmp_path / "idx")
    with Deduplicator(model=PLAIN, dir=path) as d:  # the "killed" run, its process now a zombie
        d.check("https://s/a", text=A)
        run, d.run = d.run, 0
        marker = {"host": socket.gethostname(), "pid": zombie, "beat": neardup.time.time()}
        d.index.write(lambda txn: txn.meta_put(_open_run(run), json.dumps(marker).encode()))
    with Deduplicator(model=PLAIN, dir=path) as d:
        v = d.check("https://s/a", text=A)
        assert (v.action, v.reason, v.resent) == ("keep", "unchanged", True)
