"""The data model of a decision: typed outcomes and an immutable Verdict.

The enums are `str` subclasses whose str() and format() are their value, so stats keys
(`dedup/dropped/near`), drop-log JSON and comparisons with plain strings keep working.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from enum import Enum
from typing import Any

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # Python 3.10
    class StrEnum(str, Enum):
        def __str__(self) -> str:
            return str(self.value)

        def __format__(self, spec: str) -> str:
            return format(str(self.value), spec)


class Action(StrEnum):
    KEEP = "keep"
    DROP = "drop"
    FLAG = "flag"  # a dry run (or DEDUP_CONCEPTUAL=flag): would be dropped, is kept


class Reason(StrEnum):
    """Why a page is a duplicate (drop-log `reason`)."""

    EXACT = "exact"  # the same words
    NEAR = "near"  # the verifier's score over the threshold
    CONCEPTUAL = "conceptual"  # LSI cosine (seed 000)
    UNCHANGED = "unchanged"  # a revisit with the text kept for its URL
    SUPERSEDED = "superseded"  # a kept page another one replaced as its canonical URL


class Skip(StrEnum):
    """Why a page was kept without a check (stats `dedup/skipped/<skip>`)."""

    ALLOWED = "allowed"
    EMPTY = "empty"
    BAD_INPUT = "bad_input"
    TOO_LARGE = "too_large"
    NO_TEXT = "no_text"
    TOO_SHORT = "too_short"
    NOTICE = "notice"
    NEVER_DROP = "never_drop"
    CHECKED_AS_RESPONSE = "checked_as_response"
    DONT_DEDUP = "dont_dedup"
    STATUS = "status"
    NOT_HTML = "not_html"
    UNDECODABLE = "undecodable"
    # a dropped copy's 304 that would now be decided otherwise (rules.known_copy): asked again in
    # full. Not counted: the page is decided when it comes back
    REFETCH = "refetch"


class Failure(StrEnum):
    """Where a failure made us keep a page (stats `dedup/errors/<failure>`)."""

    OPEN = "open"
    EXTRACT = "extract"
    FINGERPRINT = "fingerprint"
    STORE = "store"
    INTERNAL = "internal"
    DROPLOG = "droplog"


class Stage(StrEnum):
    """Where a page was checked: the downloader middleware or the item pipeline."""

    RESPONSE = "response"
    ITEM = "item"


class Step(StrEnum):
    """What steps 1-4 gave (fingerprint.extract_step, extract_and_fingerprint)."""

    TEXT = "text"  # the extracted text and title
    FINGERPRINT = "fingerprint"  # steps 2-4 done too (a worker, pure plugins)
    SKIPPED = "skipped"  # a Skip: nothing to check
    ERROR = "error"  # the exception extraction raised


class Revisit(StrEnum):
    UNCHANGED = "unchanged"
    UPDATED = "updated"
    COPY = "copy"  # new text that copies another URL's page


@dataclass(frozen=True)
class Thresholds:
    """The lookup thresholds a page's candidates were read with (the settings): a candidate over
    them is weighed by the score; the score's threshold decides."""

    threshold: float  # the verifier's score (DEDUP_THRESHOLD)
    containment: float  # 0: containment off
    min_resemblance: float  # a containment match needs this resemblance too
    visible: float = 0.0  # a kept page under the headline: one main text in the other's visible text
    conceptual: float = 0.0  # the LSI cosine of a conceptual duplicate (0: the check is off)
    score: float = 0.0  # the model's threshold (a probability)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Weighing:
    """The score of one (page, kept page) pair: for a drop the pair that decided it, for a kept
    page the closest candidate over the lookup thresholds that the score kept it apart from."""

    url: str | None
    title: str | None
    fingerprint: int
    doc_id: int | None
    score: float  # the probability that the page is the kept page's copy
    logit: float
    base: float  # the log-odds of a pair at the training means; base + contributions = logit
    threshold: float
    measures: dict  # measures.NAMES -> value or None
    contributions: tuple  # ((term, log-odds it adds), ...), largest first
    similarity: float = 0.0
    measure: str = ""

    def explained(self, top: int | None = None) -> dict[str, Any]:
        """What the drop log keeps: the score, the measurements and each term's contribution."""
        parts = self.contributions if top is None else self.contributions[:top]
        return {"score": round(self.score, 4), "score_threshold": round(self.threshold, 4),
                "features": {k: (None if v is None else round(float(v), 4)) for k, v in self.measures.items()},
                "contributions": {name: round(value, 3) for name, value in parts}, "base": round(self.base, 3)}


@dataclass(frozen=True)
class Verdict:
    """What to do with one page. Build changed copies with `verdict.but(field=value)`."""

    url: str
    action: Action = Action.KEEP
    reason: Reason | None = None
    duplicate_of: str | None = None
    duplicate_of_title: str | None = None
    distance: int | None = None
    similarity: float | None = None
    fingerprint: int | None = None
    duplicate_of_fingerprint: int | None = None
    skipped: Skip | None = None  # why the page was kept without a check
    error: Failure | None = None  # where a failure made us keep the page (fail open)
    # the pair's score: the match's for a drop; for a kept page, the closest candidate over the
    # lookup thresholds the score kept it apart from (None: no candidate passed them)
    weighing: Weighing | None = None
    # what `similarity` is: exact, churn, containment, lsi, or the verifier's name (resemblance,
    # qgram, swlr, or a verifier of one's own: an open set, so a string)
    measure: str | None = None
    thresholds: Thresholds | None = None  # what the page was verified against
    title: str | None = None
    excerpt: str | None = None
    tokens: int = 0
    doc_id: int | None = None
    # the extracted text of a duplicate, for the drop log (DEDUP_STORE_TEXT); not in repr()
    text: str | None = dataclasses.field(default=None, repr=False)
    never_drop: bool = False  # a hub page: indexed when new, kept (and not indexed again) when matched
    canonical: str | None = None  # rel=canonical or og:url, absolute; "": HTML names none; None: not known
    revisit: Revisit | None = None  # the URL was in the index
    kept_at: float | None = None  # a revisit: when the URL's page in the index was kept
    superseded: dict | None = None  # a kept page this one replaced as its canonical URL (url, title, ...)
    resent: bool = False  # unchanged, but filed by a crawl that never ended (killed): passed on again
    rule: str | None = None  # the rule of the chain that decided (rules.RULES), when the index was consulted

    @property
    def is_duplicate(self) -> bool:
        """Dropped, or flagged (would be dropped)."""
        return self.action in (Action.DROP, Action.FLAG)

    @property
    def would_drop(self) -> bool:
        """Dropped, or flagged only because of a dry run: what a crawl with these settings drops
        (a conceptual duplicate flagged by DEDUP_CONCEPTUAL=flag is kept)."""
        return self.action == Action.DROP or (self.action == Action.FLAG and self.reason != Reason.CONCEPTUAL)

    @property
    def scored_apart(self) -> bool:
        """Kept because the score kept it apart from a candidate over the lookup thresholds (not
        kept for the chain's own reasons: it replaced its copy, it is a start page, a revisit)."""
        w = self.weighing
        return self.action == Action.KEEP and w is not None and w.score < w.threshold

    def but(self, **changes: Any) -> "Verdict":
        """A copy with `changes` (dataclasses.replace, without its 15 us of re-validation: a page
        makes a few copies on its way through)."""
        unknown = changes.keys() - _VERDICT_FIELDS
        if unknown:
            raise TypeError(f"Verdict has no field {', '.join(sorted(unknown))}")
        new = object.__new__(Verdict)
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        return new

    def kept_because(self, failure: Failure) -> "Verdict":
        """This page kept after a failure: no drop without a drop-log line."""
        return self.but(action=Action.KEEP, error=Failure(failure))


_VERDICT_FIELDS = frozenset(f.name for f in dataclasses.fields(Verdict))
