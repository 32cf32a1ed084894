"""The sequences of crawls the model (tests/test_crawl_model.py) found, or an issue named, kept as
examples: each drives the same machine and model (tests/crawl_model.py) through one fixed
sequence, checked by the same oracle (tests/crawl_oracle.py). benchmarks/mutations.py names them
as the tests that find each reverted fix; the last test here keeps its edits meeting their lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from .crawl_model import Article, Model, Site, article_text, clean_url, edited, variant_url, write_graded_model
from .crawl_oracle import Oracle
from .test_crawl_model import Crawls

def _site(canonical: str | None, *kinds: str) -> Site:
    site = Site()
    site.articles[1] = Article(1, article_text(1009), canonical=canonical)
    site.add_url(clean_url(1), 1)
    for kind in kinds:
        site.add_url(variant_url(1, kind), 1)
    return site


def _checked(model: Model, oracle: Oracle, order: list[str], settings: dict):
    """A crawl of `order`, the tracking URLs downloaded as they are (no DEDUP_CLEAN_REQUESTS), checked."""
    oracle.before_crawl(False)
    done = model.crawl(order, {"DEDUP_CLEAN_REQUESTS": False, **settings})
    oracle.after(done)
    return done


@pytest.mark.parametrize("first", [{}, {"DEDUP_PREFER_CLEAN_URL": False}])
def test_a_known_copys_304_keeps_the_page_its_canonical_names(tmp_path, first):
    """The site's rel=canonical names a tracking URL: crawl 1 keeps it and drops the clean URL as
    its copy. Crawl 2 (the clean-URL rule on, as it was or newly): the clean URL's 304 used to
    replace the tracking URL (storage removed it), then the clean URL came back as its own
    unchanged revisit: neither URL was stored."""
    model = Model(tmp_path, _site("tracking", "tracking"))
    oracle = Oracle(model)
    _checked(model, oracle, [variant_url(1, "tracking"), clean_url(1)], first)
    assert set(model.storage) == {variant_url(1, "tracking")}
    second = _checked(model, oracle, [clean_url(1), variant_url(1, "tracking")], {})
    # (dropped under other deciding settings, the copy is asked again in full and decided from its text)
    assert set(model.storage) == {variant_url(1, "tracking")} and second.statuses[clean_url(1)] == (200 if first else 304)


def test_a_known_copy_that_is_now_the_cleaner_url_replaces_the_kept_page_from_its_full_page(tmp_path):
    """DEDUP_PREFER_CLEAN_URL off in crawl 1: the clean URL was dropped as the tracking URL's copy.
    On in crawl 2: its 304 cannot replace the kept page (nothing of it was downloaded, its own
    rel=canonical is not known): it is asked again in full, and its 200 replaces the kept page, as
    storage is told. Crawl 3: both answer 304, nothing changes."""
    model = Model(tmp_path, _site(None, "tracking"))
    oracle = Oracle(model)
    _checked(model, oracle, [variant_url(1, "tracking"), clean_url(1)], {"DEDUP_PREFER_CLEAN_URL": False})
    assert set(model.storage) == {variant_url(1, "tracking")}
    second = _checked(model, oracle, [clean_url(1), variant_url(1, "tracking")], {})
    assert set(model.storage) == {clean_url(1)} and second.removed == [(variant_url(1, "tracking"), clean_url(1))]
    third = _checked(model, oracle, [clean_url(1), variant_url(1, "tracking")], {})
    assert set(model.storage) == {clean_url(1)} and set(third.statuses.values()) == {304}


def test_a_crawl_killed_after_a_cleaner_url_replaced_a_page_it_kept_is_told_again(tmp_path):
    """Found by the machine once it killed crawls: a crawl keeps a tracking URL, then its clean URL
    replaces it; the signal for a page kept earlier in the same crawl waits for the spider's close
    (its item may still be on its way to storage), and the crawl is killed first, with the
    tracking URL's item written and the clean URL's lost. The next crawl passed the clean URL on
    again but never told storage to remove the tracking URL: both stayed. The page passed on again
    carries the replacement it made."""
    model = Model(tmp_path, _site(None, "tracking2"))
    oracle = Oracle(model)
    tracking = variant_url(1, "tracking2")
    oracle.after(model.crawl([tracking, clean_url(1)], {"DEDUP_CLEAN_REQUESTS": False}, kill=(2, 0.5)))
    assert set(model.storage) == {tracking}
    again = _checked(model, oracle, [tracking, clean_url(1)], {})
    assert set(model.storage) == {clean_url(1)} and (tracking, clean_url(1)) in again.removed


def test_a_killed_crawls_chain_of_replacements_is_told_whole(tmp_path):
    """Found by the machine: a killed crawl kept a tracking URL, a cleaner tracking URL replaced it,
    then the canonical URL replaced that one, each signal waiting for the close; storage got the
    first URL's item only. The page passed on again told storage of the URL it replaced, not of
    the one before: the first URL stayed beside it. A record carries the chain."""
    model = Model(tmp_path, _site("clean", "tracking", "tracking2"))
    oracle = Oracle(model)
    first, cleaner = variant_url(1, "tracking2"), variant_url(1, "tracking")
    oracle.after(model.crawl([first, cleaner, clean_url(1)], {"DEDUP_CLEAN_REQUESTS": False}, kill=(3, 0.34)))
    assert set(model.storage) == {first}
    _checked(model, oracle, [first, cleaner, clean_url(1)], {})
    assert set(model.storage) == {clean_url(1)}


def test_a_page_whose_rel_canonical_changes_is_filed_again_so_the_url_it_names_replaces_it(tmp_path):
    """Found by the machine: the clean URL kept, its tracking URL dropped as its copy; the site
    then names the tracking URL as canonical. The clean URL's text was unchanged, so its record
    kept no canonical and the tracking URL stayed a copy for good. A new rel=canonical is an update."""
    model = Model(tmp_path, _site(None, "tracking"))
    oracle = Oracle(model)
    order = [clean_url(1), variant_url(1, "tracking")]
    _checked(model, oracle, order, {})
    assert set(model.storage) == {clean_url(1)}
    art = model.site.articles[1]
    art.canonical, art.modified = "tracking", art.modified + 1
    _checked(model, oracle, order, {})
    _checked(model, oracle, order, {})
    assert set(model.storage) == {variant_url(1, "tracking")}


@pytest.mark.parametrize("edit", [False, True])
def test_a_killed_crawls_page_is_passed_on_again_under_revisit_drop(tmp_path, edit):
    """Found by the machine: DEDUP_REVISIT=drop checks no URL, so a page filed by a killed crawl
    (its item never written) was dropped the next crawl as a copy of its own URL: lost. Edited
    since, it was a near copy of itself (a review's find): a killed run's page is a revisit there."""
    model = Model(tmp_path, _site(None))
    oracle = Oracle(model)
    drop = {"DEDUP_REVISIT": "drop"}
    oracle.after(model.crawl([clean_url(1)], drop, kill=(1, 0.0)))
    assert model.storage == {}
    if edit:
        art = model.site.articles[1]
        art.version, art.modified, art.text = art.version + 1, art.modified + 1, edited(art.text, 7)
    _checked(model, oracle, [clean_url(1)], drop)
    assert set(model.storage) == {clean_url(1)}


def test_a_url_whose_entry_a_killed_crawl_wrote_is_asked_with_its_validators_again():
    """Found by the machine: a killed crawl rewrote a URL's validators (the server changed them)
    while its kept page, filed by a crawl that ended, was not passed on again; the entry named
    the killed run, so every later request for it went out unconditional: downloaded in full
    on every crawl (the settled crawls' check: nothing downloaded again where the server answers 304)."""
    Crawls.store = {}
    machine = Crawls()
    try:
        machine.start(canonical=None, other=0, kind="tracking", more=[], requests=False)
        machine.settle(named=None, seed=0)
        machine.killed(asked=9, changes=[("add_article", None, 0), ("redirects", False)], reached=0.0, seed=0)
        machine.crawl(changes=[("set_canonical", 78, None, 58), ("server", False, "both"), ("add_variant", 79, "tracking"),
                               ("server", True, "last-modified")], dry=True, item_html=True, leaf=False, part=1.0,
                      racing=False, seed=9729)
        machine.killed(asked=9, changes=[], reached=1.0, seed=1157)
        machine.crawl(changes=[], dry=False, item_html=False, leaf=False, part=0.5, racing=False, seed=86)
        machine.settle(named=None, seed=925)
        assert set(machine.model.crawls[-1].statuses.values()) == {304}
    finally:
        machine.teardown()


def test_a_loosened_threshold_reaches_a_known_copy_whose_server_answers_304(tmp_path):
    """A new user's walk: a print version dropped as a near copy under one threshold; the threshold
    raised after reading the drop log, the server answered the copy's conditional request with 304
    and the kept page's fingerprint stood in for it ("similarity 1.0, not-modified"). A copy
    dropped under other deciding settings is asked again in full and kept, as a fresh index keeps it."""
    model = Model(tmp_path, _site(None, "print"), {"DEDUP_MODEL": write_graded_model(tmp_path)})
    oracle = Oracle(model)
    _checked(model, oracle, [clean_url(1), variant_url(1, "print")], {})
    assert set(model.storage) == {clean_url(1)}
    loose = {"DEDUP_SCORE_THRESHOLD": 0.97}
    second = _checked(model, oracle, [clean_url(1), variant_url(1, "print")], loose)
    assert second.statuses[variant_url(1, "print")] == 200 and set(model.storage) == {clean_url(1), variant_url(1, "print")}
    third = _checked(model, oracle, [clean_url(1), variant_url(1, "print")], loose)
    assert set(third.statuses.values()) == {304}


def test_a_url_its_canonical_replaces_after_a_settings_change_is_asked_with_its_validators_after(tmp_path):
    """Found by the model (settled after a kill): a page kept under one threshold, the threshold
    changed back, then the URL its rel=canonical names served and replacing it. The replaced URL's
    validators became a known copy's entry still dated from its first download's run, older than
    the settings change: the crawl after asked it in full once more (nothing had changed). The
    replacement is decided under the settings in force: its entry is the replacing run's."""
    site = _site("tracking")
    model = Model(tmp_path, site, {"DEDUP_MODEL": write_graded_model(tmp_path)})
    oracle = Oracle(model)
    _checked(model, oracle, [clean_url(1)], {"DEDUP_SCORE_THRESHOLD": 0.99})
    site.add_url(variant_url(1, "tracking"), 1)
    oracle.before_crawl(False)  # (the page asked with its validators, its 304 decided before the URL replacing it)
    replacing = model.crawl([clean_url(1), variant_url(1, "tracking")], {"DEDUP_CLEAN_REQUESTS": False}, width=2)
    oracle.after(replacing)
    assert replacing.statuses == {clean_url(1): 304, variant_url(1, "tracking"): 200}, replacing.statuses
    assert replacing.removed == [(clean_url(1), variant_url(1, "tracking"))], replacing.removed
    after = _checked(model, oracle, [variant_url(1, "tracking"), clean_url(1)], {})
    assert after.statuses == {variant_url(1, "tracking"): 304, clean_url(1): 304}, after.statuses
    assert set(model.storage) == {variant_url(1, "tracking")}


def test_a_window_turned_on_then_off_on_the_spread_layout_leaves_one_value_a_key(redis_cluster):
    """Found by the machine on the spread layout: a page kept without DEDUP_WINDOW, then, the
    window on, out of it and kept again (its entries in the window's generations of shards), then
    read without the window: its URL's entry in the plain shards still named the record that
    left (a put wrote the newest place only), and `index verify` found the index broken. Entries
    are read in every generation an index was ever written in, and a put clears the others."""
    from crawler_dedup import Deduplicator
    from crawler_dedup.core.index.integrity import verify

    Crawls.store = {"DEDUP_BACKEND": "redis", "DEDUP_REDIS_URL": redis_cluster}
    machine = Crawls()
    try:
        machine.start(canonical=None, other=0, kind="tracking")  # (the page and a tracking URL)
        steps = [[("edit", 0)], [("add_article", None, 0), ("change_settings", True, True, "update", "drop", 129600.0)],
                 [], [("change_settings", True, True, "update", "drop", 0)]]
        for i, changes in enumerate(steps):
            machine.crawl(changes=changes, seed=21 if i == 0 else 0, leaf=i == 0, item_html=False, racing=False,
                          part=1.0, dry=False)
        cfg = {k.removeprefix("DEDUP_").lower(): v for k, v in machine.model.store_settings.items()}
        with Deduplicator(**cfg) as d:
            assert d.index is not None
            report = verify(d.index)
            assert report.ok, report.problems
    finally:
        machine.teardown()
        Crawls.store = {}


@pytest.mark.parametrize("order", ["tracking first", "clean only"])
def test_a_killed_crawls_replacement_is_told_when_its_page_comes_back_edited(tmp_path, order):
    """A killed crawl kept a tracking URL, then its clean URL replaced it (the signal waiting for the
    close), storage got the tracking URL's item only. The site edits the page before the next crawl:
    the clean URL comes back as an update, not unchanged, and storage must still be told."""
    model = Model(tmp_path, _site(None, "tracking2"))
    oracle = Oracle(model)
    tracking = variant_url(1, "tracking2")
    oracle.after(model.crawl([tracking, clean_url(1)], {"DEDUP_CLEAN_REQUESTS": False}, kill=(2, 0.5)))
    assert set(model.storage) == {tracking}
    art = model.site.articles[1]
    art.version, art.modified, art.text = art.version + 1, art.modified + 1, edited(art.text, 7)
    again = _checked(model, oracle, [tracking, clean_url(1)] if order == "tracking first" else [clean_url(1)], {})
    assert set(model.storage) == {clean_url(1)} and (tracking, clean_url(1)) in again.removed


def test_a_crawl_killed_in_another_container_is_passed_on_again(tmp_path):
    """A killed crawl's open-run marker as another container leaves it (another hostname, a pid
    alive here): known killed once its lease ran out, so its update, never stored, is passed on
    again by the next crawl a day later."""
    model = Model(tmp_path, _site(None))
    oracle = Oracle(model)
    _checked(model, oracle, [clean_url(1)], {})
    art = model.site.articles[1]
    art.version, art.modified, art.text = art.version + 1, art.modified + 1, edited(art.text, 7)
    oracle.after(model.crawl([clean_url(1)], {}, kill=(1, 0.0)))  # (run 2: the marker of another container)
    assert model.storage[clean_url(1)] == (1, 0)
    _checked(model, oracle, [clean_url(1)], {})
    assert model.storage[clean_url(1)] == (1, 1)


def test_a_killed_runs_copy_answered_304_within_its_lease_may_be_asked_in_full_once_after():
    """Found by a nightly run (an oracle error): a print version kept apart under a raised
    threshold, the threshold back, then a crawl killed in another container, whose run wrote the
    print version's entry as a copy's; the crawl a minute later met it while the run still looked
    alive (304), the next, knowing the run killed, asked it in full once (a killed run's copy entry
    is asked again): one download, not a crawl that never settles."""
    machine = Crawls()
    try:
        machine.begin(place=1, keep=False, kinds=["tracking2", "session", "http", "mirror"], copies=0, mirror=False,
                      canonical=None, kill=False, reached=0.0, seed=3)
        machine.begin_killed(seed=0, asked=2, reached=0.0, requests=False)
        machine.begin_threshold(seed=7, threshold=0.97)
        machine.start(kind="tracking", other=0, canonical=None, more=[], requests=False)
        machine.killed(asked=11, changes=[], reached=0.0, seed=231, settle=True, soon=True)
        assert set(machine.model.crawls[-1].statuses.values()) <= {200, 304}
    finally:
        machine.teardown()


def test_each_mutation_of_the_mutation_check_still_reverts_one_place_of_the_package():
    """benchmarks/mutations.py edits the package's source by text: each edit must still meet the
    line it reverts, once, and each test it names must exist (code moves; the check must not go blind)."""
    import importlib.util
    import sys

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "mutations.py"
    spec = importlib.util.spec_from_file_location("mutations", path)
    assert spec is not None and spec.loader is not None
    mutations = importlib.util.module_from_spec(spec)
    sys.modules["mutations"] = mutations  # (its dataclass looks its module up)
    try:
        spec.loader.exec_module(mutations)
    finally:
        del sys.modules["mutations"]
    root = path.parent.parent
    for m in mutations.MUTATIONS:
        source = (mutations.PKG / m.path).read_text(encoding="utf-8")
        assert source.count(m.old) == 1, f"{m.name}: its line is in {m.path} {source.count(m.old)} times"
        for test in m.tests.split():
            file, _, name = test.partition("::")
            assert (root / file).exists() and (not name or f"def {name}(" in (root / file).read_text()), (m.name, test)


def test_a_tracking_url_the_site_names_as_canonical_is_revisited_under_clean_requests(tmp_path):
    """Found by the machine's stricter one-URL check: the site's rel=canonical names a tracking
    URL, kept as the page; DEDUP_CLEAN_REQUESTS then sent that URL as the clean one, so it was
    never asked again, and each edit of the page was dropped as a near copy of the version kept
    under it: storage held the first version for good. A URL the index keeps is asked as it is."""
    model = Model(tmp_path, _site("tracking", "tracking"))
    oracle = Oracle(model)
    tracking = variant_url(1, "tracking")
    _checked(model, oracle, [tracking, clean_url(1)], {})
    assert set(model.storage) == {tracking}
    art = model.site.articles[1]
    art.version, art.modified, art.text = art.version + 1, art.modified + 1, edited(art.text, 7)
    oracle.before_crawl(False)
    done = model.crawl([tracking, clean_url(1)], {"DEDUP_CLEAN_REQUESTS": True})
    oracle.after(done)
    assert model.storage == {tracking: (1, 1)} and done.statuses[tracking] == 200


def test_a_killed_crawls_replacement_is_told_when_its_page_is_replaced_in_turn(tmp_path):
    """Found by the machine: a killed crawl kept a tracking URL, then its clean URL replaced it
    (the signal waiting for the close, lost with the kill), every item written. The next crawl
    meets the URL the site's rel=canonical names first: it replaces the clean URL, whose record
    carried the replacement it had made, and went with it: the first tracking URL stayed stored."""
    model = Model(tmp_path, _site("tracking", "tracking", "tracking2"))
    oracle = Oracle(model)
    first, named = variant_url(1, "tracking2"), variant_url(1, "tracking")
    oracle.after(model.crawl([first, clean_url(1)], {"DEDUP_CLEAN_REQUESTS": False}, kill=(2, 1.0)))
    assert set(model.storage) == {first, clean_url(1)}
    again = _checked(model, oracle, [named, first, clean_url(1)], {})
    assert set(model.storage) == {named} and (first, named) in again.removed


def test_a_killed_crawls_replacement_is_told_after_the_second_look_on_the_spread_layout(redis_cluster):
    """Found by the machine on the spread layout: a killed crawl kept a page's session URL, then its
    clean URL replaced it (the signal lost with the kill); before the next crawl the page names
    another rel=canonical, so the clean URL is filed again (an update). Its first look told storage
    of the session URL, but the claim's second look decided again and its verdict, which did not,
    was the one used: both URLs stayed stored. The second look tells it as the first did."""
    Crawls.store = {"DEDUP_BACKEND": "redis", "DEDUP_REDIS_URL": redis_cluster}
    machine = Crawls()
    try:
        machine.start(requests=True, other=6, kind="print", canonical=None, more=[(None, "tracking")])
        machine.killed(asked=10, between=[("set_canonical", 47, "other", 36), ("add_variant", 50, "http")],
                       changes=[("redirects", False), ("remove_url", 1)], lead=True, reached=1.0, seed=738)
        assert not [u for u in machine.model.storage if ";jsessionid=" in u and "/a3" in u]
    finally:
        machine.teardown()
        Crawls.store = {}


def test_a_killed_crawls_page_whose_copy_cannot_be_read_is_passed_on_after_its_304(tmp_path):
    """A 304 for a page a killed crawl filed (its item never written; a page to follow links on,
    whose copy is kept) whose stored copy cannot be read (it rotted, or went meanwhile): the page
    is downloaded again and passed on, not dropped as this run's unchanged page (lost)."""
    from crawler_dedup import Deduplicator
    from crawler_dedup.core.index.records import url_key

    model = Model(tmp_path, _site(None))
    oracle = Oracle(model)
    url = clean_url(1)
    plain = {"DEDUP_CLEAN_REQUESTS": False}
    oracle.after(model.crawl([url], plain, leaf=False, kill=(1, 0.0)))  # (a page to follow links on: its copy kept)
    assert model.storage == {}
    with Deduplicator(dir=model.store_settings["DEDUP_DIR"]) as dedup:
        kept, killed = dedup.fetch_entry(url)
        assert killed and kept.copy is not None
        kept.copy = b"not zlib"
        dedup.index.write(lambda txn: txn.fetch_put(url_key(url), kept.encode()))
    oracle.before_crawl(False)
    done = model.crawl([url], plain, leaf=False)
    oracle.after(done)
    assert done.statuses[url] == 200 and set(model.storage) == {url}


def test_a_known_copys_304_dropped_against_the_page_replacing_its_own_names_that_page_after(tmp_path):
    """Found by the long run: a known copy's entry names the page it copies; in one group commit that
    page is replaced (the URL the site's rel=canonical names comes first) and the copy's 304 is
    dropped against the replacing page. Its entry, unchanged, still named the record gone, so the
    next crawl, with nothing changed, downloaded the copy in full again. A copy's 304 dropped against
    another record than its entry's names that record from then on."""
    model = Model(tmp_path, _site("tracking", "tracking", "tracking2", "session", "http"))
    oracle = Oracle(model)
    named, feed = variant_url(1, "tracking"), variant_url(1, "tracking2")
    _checked(model, oracle, [feed, clean_url(1)], {})  # (the clean URL replaces the feed URL, its entry a copy's)
    assert set(model.storage) == {clean_url(1)}
    order = [named, feed, clean_url(1), variant_url(1, "session"), variant_url(1, "http")]  # (three at once)
    first = _checked(model, oracle, order, {})
    assert first.statuses[feed] == 304 and set(model.storage) == {named}
    oracle.before_crawl(False)
    again = model.crawl(order, {"DEDUP_CLEAN_REQUESTS": False})
    oracle.after(again)
    oracle.settled(again, first)
    assert again.statuses[feed] == 304 and feed not in again.stored


def test_a_page_passed_on_unchanged_then_replaced_in_the_same_crawl_leaves_storage(tmp_path):
    """Found by the long run: under DEDUP_UNCHANGED=keep a kept mirror page was passed on again,
    unchanged; in the same downloads the URL its rel=canonical names (served again now) replaced it.
    Its record was an earlier run's, so storage was told at once, before the mirror's item got
    there: the item came after the deletion and both URLs stayed stored. A page passed on again is
    this run's: the replacement is told at the close, after its item."""
    model = Model(tmp_path, _site("tracking", "mirror", "session", "http"))
    oracle = Oracle(model)
    mirror, named = variant_url(1, "mirror"), variant_url(1, "tracking")
    keep = {"DEDUP_UNCHANGED": "keep"}
    _checked(model, oracle, [mirror, clean_url(1)], keep)  # (the URL it names is not served yet)
    assert set(model.storage) == {mirror}
    model.site.add_url(named, 1)
    done = _checked(model, oracle, [mirror, named, clean_url(1), variant_url(1, "session"), variant_url(1, "http")], keep)
    assert (mirror, named) in done.removed and set(model.storage) == {named}


def test_a_crawl_killed_between_a_replacements_commit_and_its_telling_tells_it_after(tmp_path):
    """Found by the fault run: a crawler kept a page's clean URL, which replaced the tracking URL
    another crawl had kept, and was killed after the commit, before the drop-log line and the
    signal (told at once for an earlier crawl's page, not held to the close). Run again, the clean
    URL was passed on again, but only a replacement made in its own run was told: both URLs stayed
    stored and no `superseded` line said why. The replacing page's record carries it either way."""
    model = Model(tmp_path, _site(None, "tracking"))
    oracle = Oracle(model)
    tracking = variant_url(1, "tracking")
    _checked(model, oracle, [tracking], {})
    # (killed right after the clean URL's commit: nothing of it recorded, no item stored)
    oracle.after(model.crawl([clean_url(1)], {"DEDUP_CLEAN_REQUESTS": False}, kill=(1, 0.0, True)))
    assert set(model.storage) == {tracking}
    again = _checked(model, oracle, [clean_url(1), tracking], {})
    assert (tracking, clean_url(1)) in again.removed and set(model.storage) == {clean_url(1)}


def test_a_page_replacing_one_of_a_crawl_killed_elsewhere_before_its_lease_ran_out_tells_that_crawls_replacements(tmp_path):
    """Found by the machine once a crawl could start again within a killed crawl's lease: a crawl
    in another container kept a page's session URL, then its feed URL, then its clean URL, each
    replacing the one before (the signals held for its close, lost with the kill; every item
    written). A minute later the next crawl meets the URL the page's rel=canonical names first: it
    replaced the clean URL, but the killed run still looked alive (its lease had not run out), so
    its replacements were left for its close, which never came: three URLs of the page stayed."""
    model = Model(tmp_path, _site("tracking", "tracking", "tracking2", "session"))
    oracle = Oracle(model)
    session, feed, named = variant_url(1, "session"), variant_url(1, "tracking2"), variant_url(1, "tracking")
    model.elsewhere = True
    oracle.after(model.crawl([session, feed, clean_url(1)], {"DEDUP_CLEAN_REQUESTS": False}, kill=(3, 1.0)))
    model.elsewhere = None
    assert set(model.storage) == {session, feed, clean_url(1)}
    oracle.before_crawl(False)
    done = model.crawl([named, session, feed, clean_url(1)], {"DEDUP_CLEAN_REQUESTS": False}, gap=60.0)
    oracle.after(done)
    assert set(model.storage) == {named}


def test_a_killed_crawls_page_whose_304_comes_after_its_lease_ran_out_is_passed_on_from_its_full_page():
    """Found by the machine: a crawl in another container kept a page (a leaf: no copy) and was
    killed before its item was stored; the next crawl, a minute later, sent the page's validators
    (the run looked alive) and the lease ran out before its 304 was decided. The decision passed it
    on again (the run was killed) and made its record this run's, but with nothing to pass on the
    page was asked again in full, and that response was this run's unchanged page: dropped, and
    dropped by every crawl after. The 304 now asks in full first and leaves the record to that run."""
    machine = Crawls()
    try:
        machine.start(more=[(None, "http"), ("clean", "print")], kind="tracking", requests=True, other=3, canonical="clean")
        machine.begin_killed(asked=7, seed=65535, reached=0.0)
        machine.begin(canonical=None, reached=1.0, kill=False, kinds=["http", "tracking2", "session", "mirror"],
                      place=0, keep=False, seed=65536, copies=0)
        assert 2 in {a for a, _ in machine.model.storage.values()}
    finally:
        machine.teardown()


def test_an_index_written_after_a_compact_is_never_taken_for_a_file_cut_short():
    """Found by the nightly model: after `index compact`, an `index remove` and an `index expire`,
    LMDB committed a last page it never wrote (allocated and freed in the transaction), so the
    file ended two pages before it and every later open, a crawl's too, refused the index as
    "cut short". Each write now extends the file to its last page."""
    Crawls.store = {}
    s = Crawls()
    try:
        s.begin_killed(seed=826, renamed=False, server=True, requests=False, reached=0.0, settle=False, asked=6)
        s.begin_passed_on(kinds=["tracking2", "session", "http"], seed=46399, copies=0)
        s.start(canonical=None, requests=False, more=[(None, "tracking")], kind="print", other=0)
        s.begin_repointed(canonical=None, seed=10166, kinds=["tracking2", "mirror", "session", "http"])
        s.begin_threshold(seed=44, threshold=0.97)
        s.begin_out_of_index(first="copy", how="window")
        s.begin_killed_edited(requests=True, edit=True, revisit="drop", reached=0.5, meets="server", seed=972, asked=5)
        s.begin_renamed(seed=146, canonical="tracking", which=38)
        s.begin_killed_kept(reached=0.0, asked=4, seed=20713, lead=True)
        s.begin(canonical=None, reached=0.0, place=1, kinds=["http", "session", "mirror", "tracking2"], kill=False,
                mirror=True, copies=1, keep=False, seed=1415)
        s.begin_killed_appears(reached=0.0, place=2, seed=23839, keep=False)
        s.maintain(how="compact")
        s.maintain(how="compact")
        s.restore(which=94)
        s.unindex(which=77)
        s.expire(older=True)  # (runs `index verify`: "data.mdb is cut short" before the fix)
        s.crawl(changes=[], seed=0, leaf=True, item_html=False, racing=False, part=1.0, dry=False)
    finally:
        s.teardown()
