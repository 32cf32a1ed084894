"""Part of step 7 for revisits: is a re-fetched page's text the same as the text kept for its URL,
but for churn? Churn is what changes between two fetches of an unchanged page: dates and times
("Updated Nov 23, 2026 10:31 AM", "2026-11-23T10:31Z"), relative times ("5 minutes ago") and
counters ("1,204 views", "12 comments"), in the short lines where pages print them (bylines,
datelines, counters). Every other difference, a changed number included (a price, a score, a
casualty figure) and a date in a sentence of the article, is an edit: the page is an update.
"""

from __future__ import annotations

import re

import xxhash

from .tokens import tokenize

# names as written in dates, capitalized: "may 5" in a sentence is no date
_MONTH = (r"(?-i:(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*|"
          r"(?:JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC)[A-Z]*)\.?")
_DAY = r"(?-i:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*|(?:MON|TUE|WED|THU|FRI|SAT|SUN)[A-Z]*)\.?,?\s+"
_TIME = r"\d{1,2}:\d{2}(?::\d{2})?(?:\.\d+)?\s*(?:[ap]\.?m\b\.?)?(?:\s*(?:utc|gmt|[ecmp][sd]t|z)\b)?"
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
  | \b\d[\d,.\s]*[km]?\s+(?:views?|comments?|shares?|likes?|reads?|replies|reply|votes?|reactions?)\b  # 1,204 views
    """,
    re.IGNORECASE | re.VERBOSE,
)


CHURN_LINE_WORDS = 15  # churn is masked in lines this short: bylines, datelines, counters


def mask(text: str) -> str:
    """The text with every churn expression of its short lines replaced by one placeholder word.
    A date in a sentence of the article ("Sentencing is scheduled for Feb. 14.") is content: a
    change there is an edit."""
    return "\n".join(CHURN.sub(" zzchurn ", line) if len(line.split()) <= CHURN_LINE_WORDS else line
                     for line in text.splitlines())


def churn_digest(text: str) -> bytes:
    """A digest of the text's words with churn masked: equal for two fetches that differ only by churn."""
    return xxhash.xxh3_128_digest("\x1f".join(tokenize(mask(text))).encode("utf-8"))


def same_but_churn(old: str, new: str) -> bool:
    return tokenize(mask(old)) == tokenize(mask(new))
