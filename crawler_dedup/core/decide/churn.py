"""Part of step 7 for revisits: is a re-fetched page's text the same as the text kept for its URL,
but for churn? Churn is what changes between two fetches of an unchanged page: dates and times
("Updated Nov 23, 2026 10:31 AM", "2026-11-23T10:31Z"), relative times ("5 minutes ago") and
counters ("1,204 views", "12 comments") in the page's metadata lines: bylines, datelines and
counters, short lines that hold nothing else, or a cue word ("by", "updated", "published", "views")
with names and metadata words around it ("By Jane Doe | Published").
Every other difference is an edit and the page is an update: a changed price, score or figure,
a date or time inside a sentence ("Sentencing is scheduled for Feb. 14."), any changed word.
Precision first: churn taken for an edit stores a page again; an edit taken for churn loses it.
"""

from __future__ import annotations

import re

import xxhash

from ..page.tokens import tokenize

_MONTHS = ("January|February|March|April|May|June|July|August|September|October|November|December|"
           "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec")
_DAYS = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|Mon|Tue|Tues|Wed|Thu|Thur|Thurs|Fri|Sat|Sun"
# names as dates write them, capitalized or in capitals, whole words: "may 5" is no date, nor "Maryland 21"
_MONTH = rf"(?-i:(?:{_MONTHS}|{_MONTHS.upper()}))\b\.?"
_DAY = rf"(?-i:(?:{_DAYS}|{_DAYS.upper()}))\b\.?,?\s+"
_TIME = r"\d{1,2}:\d{2}(?::\d{2})?(?:\.\d+)?\s*(?:[ap]\.?m\b\.?)?(?:\s*(?:utc|gmt|[ecmp][sd]?t|z)\b)?"
CHURN = re.compile(
    rf"""
    \b\d{{4}}-\d{{2}}-\d{{2}}(?:[T\s]{_TIME})?(?:z|[+-]\d{{2}}:?\d{{2}})?      # 2026-11-23T10:31:00Z
  | \b(?:{_DAY})?{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s+\d{{4}}\b)?   # (Mon,) Nov 23(rd)(, 2026)
    (?:,?\s+(?:at\s+)?{_TIME})?
  | \b(?:{_DAY})?\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}(?:,?\s+\d{{4}}\b)?  # (Monday) 23 November (2026)
    (?:,?\s+(?:at\s+)?{_TIME})?
  | \b\d{{1,2}}[/.]\d{{1,2}}[/.]\d{{2,4}}\b(?:,?\s+{_TIME})?                  # 11/23/2026 (10:31)
  | \b{_TIME}                                                                # 10:31 am (EST)
  | \b(?:\d+|an?|one)\s+(?:sec(?:ond)?|min(?:ute)?|h(?:ou)?r|day|week|month|year)s?\s+ago\b  # 5 minutes ago
  | \b\d[\d,.]*[km]?\s+(?:views?|comments?|shares?|likes?|reads?|replies|reactions?)\b  # 1,204 views
    """,
    re.IGNORECASE | re.VERBOSE,
)
CHURN_LINE_WORDS = 15  # metadata lines are short
# the words a metadata line holds besides its dates, counters and (capitalized) names
META_WORDS = frozenset("""
    a am and at by ago comment comments date dated edited et first from gmt in last min
    mins minute minutes modified of on photo pm posted published read reads reply replies share shares
    the time updated update upd utc via view views with written
""".split())
_WORD = re.compile(r"[^\W\d_]+")
_PLACEHOLDER = "zzchurn"


# one of them must be there when the line holds other words: "Application Deadline: March 14" or
# "Polls Close At 8:00 PM" (title case, no cue) are content, "By Jane Doe, Nov 23" a byline
CUE_WORDS = frozenset("""
    by ago comment comments dated edited modified posted published read reads replies reply share shares
    updated update upd view views likes reactions
""".split())


def _metadata(masked: str) -> bool:
    """A line whose words, once its churn is masked, are none but the churn (a dateline, a counter),
    or a metadata cue word ("by", "updated", "published", ...) with names (capitalized) and
    metadata words around it."""
    words = [w for w in _WORD.findall(masked) if w != _PLACEHOLDER]
    if not words:
        return True
    if not any(w.lower() in CUE_WORDS for w in words):
        return False
    return all(w[0].isupper() or w.lower() in META_WORDS for w in words)


def mask(text: str) -> str:
    """The text with the churn of its metadata lines replaced by a placeholder word."""
    out = []
    for line in text.splitlines():
        if len(line.split()) <= CHURN_LINE_WORDS:
            masked = CHURN.sub(f" {_PLACEHOLDER} ", line)
            if masked != line and _metadata(masked):
                line = masked
        out.append(line)
    return "\n".join(out)


def churn_digest(text: str) -> bytes:
    """A digest of the text's words with churn masked: equal for two fetches that differ only by churn."""
    return xxhash.xxh3_128_digest("\x1f".join(tokenize(mask(text))).encode("utf-8"))


def same_but_churn(old: str, new: str) -> bool:
    return tokenize(mask(old)) == tokenize(mask(new))
