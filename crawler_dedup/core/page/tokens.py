"""Step 2: text -> normalized word tokens (NFKC, casefold; CJK one token per character)."""

from __future__ import annotations

import functools
import re
import unicodedata

import numpy as np

# Scripts written without spaces between words (Han, Hiragana/Katakana, Hangul syllables, Thai,
# Lao, Myanmar, Khmer): each character is a token.
_SPACELESS = ("\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
              "\uac00-\ud7af\uf900-\ufaff")
# Combining marks are not \w to `re`, but inside Indic and Tibetan words (vowel signs, viramas) and
# after Latin letters they belong to the word: "दिल्ली" is one token, not d, l, l.
_MARKS = "\u0300-\u036f\u0900-\u0dff\u0f00-\u0fff"
_TOKEN = re.compile(rf"[{_SPACELESS}]|(?:[^\W_{_SPACELESS}]|[{_MARKS}])+")
# The tokens are defined by these two patterns (the reference, kept in tokenize_reference): runs
# of word characters and marks, and the exact pattern above only for the run holding an
# underscore or a spaceless-script character.
_RUN = re.compile(rf"[\w{_MARKS}]+")
_SPECIAL = re.compile(rf"[_{_SPACELESS}]")

# tokenize() gives the same tokens with one table lookup per character instead of a regex match
# per token. Every code point is a separator, a word character or a character that is a token of
# its own; the table is built from the patterns above, so it says exactly what they say:
# - not in a run of _RUN: a separator;
# - "_": a separator too (_TOKEN never matches it, so in a run it only splits);
# - the spaceless-script characters of a run: a token each (_TOKEN matches them one by one, and
#   every other run character is in _TOKEN's word class, so the rest of a run splits only there);
# - the other characters of a run: word characters.
# The table maps separators to " ", word characters to themselves and single-character tokens to
# themselves + _OFF, beyond Unicode: the UTF-32 decoder refuses those, which tells that a text has
# some (CJK, Thai, ...) at no cost for the others. str.split() then cuts out the words: no word
# character is whitespace to it (checked when the table is built, else tokenize falls back to the
# patterns).
_OFF = 0x110000


def _char_map(lo: int, hi: int) -> np.ndarray | None:
    """The table for code points lo .. hi-1 (None: use the patterns)."""
    every = np.arange(lo, hi, dtype=np.uint32)
    chars = every.tobytes().decode("utf-32-le", "surrogatepass")
    word = np.zeros(every.size, dtype=bool)
    for m in _RUN.finditer(chars):
        word[m.start() : m.end()] = True
    if lo <= ord("_") < hi:
        word[ord("_") - lo] = False
    single = np.zeros(every.size, dtype=bool)
    for m in re.finditer(rf"[{_SPACELESS}]+", chars):
        single[m.start() : m.end()] = word[m.start() : m.end()]
    word &= ~single
    kept = every[word | single]
    if ((kept >= 0xD800) & (kept < 0xE000)).any():
        return None  # a word character that is a surrogate (the decoder would refuse it)
    kept_text = kept.tobytes().decode("utf-32-le")
    if kept.size and kept_text.split() != [kept_text]:
        return None  # a word character that is whitespace (str.split would cut there)
    table = np.full(every.size, ord(" "), dtype=np.uint32)
    table[word] = every[word]
    table[single] = every[single] + np.uint32(_OFF)
    return table


_PLANE = 0x10000
# the Basic Multilingual Plane and the next one (emoji) now, ~5 ms; each further plane (rare CJK,
# tag characters) on the first text that needs it
_MAP = _char_map(0, 2 * _PLANE)
_SPACE = np.uint32(ord(" "))


def _grown(table: np.ndarray, code: int) -> np.ndarray | None:
    """`table` extended to the plane of `code`."""
    global _MAP
    hi = min(_OFF, (code // _PLANE + 1) * _PLANE)
    more = _char_map(table.size, hi)
    grown = None if more is None else np.concatenate((table, more))
    if _MAP is not None and (grown is None or _MAP.size < grown.size):
        _MAP = grown
    return grown


def tokenize_reference(text: str) -> list[str]:
    """The definition of the tokens (what tokenize returns, token for token), with regexes."""
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


_NFKC = functools.partial(unicodedata.normalize, "NFKC")


def _nfkc(text: str) -> str:
    """unicodedata.normalize("NFKC", text), a line at a time.

    The same string: normalization never reaches across a line feed (a starter that is its own
    NFKC, never composes with what precedes it, and no character composes with it), so
    NFKC(a + "\n" + b) == NFKC(a) + "\n" + NFKC(b). And faster: one "…" or "½" makes CPython
    normalize the whole string the slow way (its quick check is all or nothing), now only its line.
    """
    return "\n".join(map(_NFKC, text.split("\n")))


def tokenize(text: str) -> list[str]:
    table = _MAP
    if table is None or type(text) is not str:  # (not text at all: the same error as ever)
        return tokenize_reference(text)
    original, text = text, _nfkc(text).casefold()
    if not text:
        return []
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    try:
        mapped = table.take(codes)
    except IndexError:  # a code point beyond the table
        table = _grown(table, int(codes.max()))
        if table is None:
            return tokenize_reference(original)
        mapped = table.take(codes)
    try:
        return mapped.tobytes().decode("utf-32-le").split()
    except UnicodeDecodeError:  # single-character tokens: a space either side of each
        pass
    single = mapped >= _OFF
    mapped[single] -= np.uint32(_OFF)
    out = np.empty((mapped.size, 3), dtype=np.uint32)
    out[:, 0] = out[:, 2] = _SPACE
    out[:, 1] = mapped
    keep = np.empty((mapped.size, 3), dtype=bool)
    keep[:, 0] = keep[:, 2] = single
    keep[:, 1] = True
    return out[keep].tobytes().decode("utf-32-le").split()
