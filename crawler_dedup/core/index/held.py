"""Supersedes a killed run never told: a page that replaces another URL kept earlier in the same
run tells storage when the spider closes (that URL's item may still be on its way there), one
kept by an earlier run at once, after the commit. A kill before either telling loses it, so the
replacing page's record carries what it replaced (and what that page had replaced in the run: a
chain), and the page passed on again after the kill (unchanged, or an update of it) tells it then."""

from __future__ import annotations

import json

from .records import DocRecord, Extra


def hold(record: DocRecord, gone: dict | None, run: int) -> None:
    """Note on `record` the page it supersedes (`gone`, rules.superseded), and when this run kept
    that page, what it had replaced in the run. A page an earlier run kept is told at once, not at
    the close, but a kill between the commit and the telling loses that too (a fault run: both
    URLs stayed stored, no `superseded` line)."""
    if gone:
        chain = gone.get("held", ()) if gone.get("run") == run else ()
        held = [{k: v for k, v in gone.items() if k not in ("text", "held")}, *chain]
        record.extras[Extra.HELD] = json.dumps(held).encode()


def held_of(doc: DocRecord) -> list[dict]:
    """The pages a record's page superseded in its own run, oldest replacement last (none when
    the note is damaged: the URL stays in storage, a page twice, never lost)."""
    raw = doc.extras.get(Extra.HELD)
    try:
        held = json.loads(raw) if raw else []
    except ValueError:
        return []
    return [g for g in held if isinstance(g, dict) and isinstance(g.get("url"), str)] if isinstance(held, list) else []


def tell_again(index, txn, prior: DocRecord) -> dict | None:
    """For a page a killed run filed, passed on again: the superseded entry its verdict carries
    (the rest of the chain under "chain"), leaving out URLs that are kept pages again since."""
    gone = [g for g in held_of(prior) if index.by_url(txn, g["url"]) is None]
    return {**gone[0], "chain": gone[1:]} if gone else None


def joined(superseded: dict | None, again: dict | None) -> dict | None:
    """A verdict's own superseded entry with the ones told again after it (its "chain")."""
    if superseded is None or again is None:
        return superseded or again
    rest = [{k: v for k, v in again.items() if k != "chain"}, *again.get("chain", ())]
    return {**superseded, "chain": [*superseded.get("chain", ()), *rest]}


def resent(index, txn, verdict, prior: DocRecord, run: int):
    """A killed run's unchanged page passed on again: now `run`'s (once: if this run ends, the
    next crawl drops it), and telling storage what it superseded."""
    verdict = told(index, txn, verdict, prior)
    prior.run = run
    prior.extras.pop(Extra.HELD, None)  # (told once: a URL stored again later, allow-listed, stays)
    txn.doc_put(int(prior.doc_id or 0), prior.encode())
    return verdict


def passed_on(txn, prior: DocRecord, run: int) -> None:
    """An unchanged page passed on again (DEDUP_UNCHANGED=keep, DEDUP_REVISIT=keep, a start page):
    now `run`'s, like a page this run filed, so a page replacing it later in the run tells storage
    at the close, after its item (sent at once, the deletion could come first and the item after
    it), and a kill before the close leaves that told again (hold)."""
    prior.run = run  # (its note of replacements stays: its run may be one killed and not known yet)
    txn.doc_put(int(prior.doc_id or 0), prior.encode())


def told(index, txn, verdict, prior: DocRecord):
    """`verdict`, passed on, telling storage what the killed run's page `prior` superseded in its
    run (maybe still stored), after what it supersedes itself."""
    return verdict.but(superseded=joined(verdict.superseded, tell_again(index, txn, prior)))


def replaced_killed(index, txn, verdict, run: int):
    """`verdict`, which superseded a page a run not ended kept, telling storage what that page had
    superseded in its run too: the record goes now, and the run may be killed before its close
    tells it, or already be while its lease runs (a crawl in another container taken for alive:
    its signals never came). A run alive tells it again at its close (a deletion twice, harmless)."""
    gone = verdict.superseded
    if not gone or not gone.get("held") or gone.get("run") in (None, run) or not index.run_open(txn, gone["run"]):
        return verdict
    rest = [g for g in gone["held"] if index.by_url(txn, g["url"]) is None]
    return verdict.but(superseded={**gone, "chain": [*gone.get("chain", ()), *rest]}) if rest else verdict


def after_kept(index, txn, verdict, decision, run: int):
    """A kept page's verdict, telling storage what the killed runs' pages it replaces had replaced
    in their runs (an update of one, or a replacement of one: their signals went with the kill)."""
    if decision.replaces_killed is not None:
        verdict = told(index, txn, verdict, decision.replaces_killed)
    return replaced_killed(index, txn, verdict, run)
