"""Step 2: text -> normalized word tokens (NFKC, casefold; CJK one token per character)."""

from __future__ import annotations

import re
import unicodedata

# Han, Hiragana/Katakana, Hangul syllables, CJK compatibility: no spaces between words,
# so each character is a token; everything else splits on non-word characters.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold())
