"""Step 2: text -> normalized word tokens (NFKC, casefold; CJK one token per character)."""

from __future__ import annotations

import re
import unicodedata

# Scripts written without spaces between words (Han, Hiragana/Katakana, Hangul syllables, Thai,
# Lao, Myanmar, Khmer): each character is a token.
_SPACELESS = ("\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
              "\uac00-\ud7af\uf900-\ufaff")
# Combining marks are not \w to `re`, but inside Indic and Tibetan words (vowel signs, viramas) and
# after Latin letters they belong to the word: "दिल्ली" is one token, not d, l, l.
_MARKS = "\u0300-\u036f\u0900-\u0dff\u0f00-\u0fff"
_TOKEN = re.compile(rf"[{_SPACELESS}]|(?:[^\W_{_SPACELESS}]|[{_MARKS}])+")
# the same tokens, faster: runs of word characters and marks first (one simple class), and the
# exact pattern only for the rare run holding an underscore or a spaceless-script character
_RUN = re.compile(rf"[\w{_MARKS}]+")
_SPECIAL = re.compile(rf"[_{_SPACELESS}]")


def tokenize(text: str) -> list[str]:
    text = unicodedata.normalize("NFKC", text).casefold()
    runs = _RUN.findall(text)
    special = _SPECIAL.search
    if special(text) is None:  # the common case: no run needs a second look
        return runs
    out: list[str] = []
    for run in runs:
        if special(run) is None:
            out.append(run)
        else:
            out.extend(_TOKEN.findall(run))
    return out
