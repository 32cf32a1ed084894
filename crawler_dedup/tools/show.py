"""`show` and `compare`: one decision explained, and two pages scored against each other.

The index is opened read-only (nothing is created; a crawl may be writing to it meanwhile).
"""

from __future__ import annotations

import difflib
import os
import re
import textwrap
from dataclasses import dataclass

from ..core.index.records import DocRecord
from ..exceptions import ShowError

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)")


class ReadOnlyIndex:
    """An index opened read-only, for the after-crawl tools: the LMDB index in DEDUP_DIR, or the
    store `settings` name (DEDUP_BACKEND) at `path`."""

    def __init__(self, path: str, settings: dict | None = None):
        from ..exceptions import DedupError
        from .indexes import is_lmdb, open_index

        if is_lmdb(settings) and not os.path.isfile(os.path.join(path, "data.mdb")):
            raise ShowError(f"no LMDB index in {path} (give --dir DEDUP_DIR)")
        try:
            self.index = open_index(path, readonly=True, settings=settings)
        except DedupError as exc:
            raise ShowError(f"cannot read the LMDB index in {path}: {exc}" if is_lmdb(settings) else str(exc)) from None
        self.path = path

    def close(self) -> None:
        self.index.store.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def kept(self, fingerprint: str | None, url: str | None) -> DocRecord | None:
        """The kept page with this fingerprint (16 hex digits), preferring the one at `url`."""
        try:
            fp = int(fingerprint or "", 16)
        except (TypeError, ValueError):  # not a string of hex digits
            return None
        found = self.index.read(lambda txn: self.index.docs(txn, fp))
        for doc in found:
            if doc.url == url:
                return doc
        return found[0] if found and url is None else None

    def by_url(self, url: str) -> list[DocRecord]:
        """The kept page at `url` (or a URL of the same canonical form)."""
        doc = self.index.read(lambda txn: self.index.by_url(txn, url))
        return [doc] if doc is not None else []


def sentences(text: str) -> list[str]:
    """Lines to diff: sentences of the paragraphs, so one edited word marks one sentence."""
    out = []
    for para in text.splitlines():
        para = " ".join(para.split())
        if para:
            out += _SENTENCE.split(para)
    return out


def unified(kept: str, dropped: str, kept_name: str, dropped_name: str, width: int) -> list[str]:
    lines = list(difflib.unified_diff(sentences(kept), sentences(dropped), f"kept    {kept_name}",
                                      f"dropped {dropped_name}", lineterm="", n=2))
    if not lines:
        return ["(the two extracted texts are the same)"]
    out = []
    for line in lines:
        if line.startswith(("---", "+++", "@@")):
            out.append(line)
        else:
            out += [line[0] + " " + w for w in textwrap.wrap(line[1:], max(width - 2, 20)) or [""]]
    return out


def side_by_side(kept: str, dropped: str, width: int, context: int = 2) -> list[str]:
    """Two columns, kept page left, dropped page right; a middle mark says how a row differs
    (| changed, < only in the kept page, > only in the dropped page); long equal runs folded."""
    a, b = sentences(kept), sentences(dropped)
    col = max((width - 3) // 2, 20)
    out = [f"{'kept page':<{col}}   dropped page", f"{'-' * col}   {'-' * col}"]
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)

    def rows(left: str | None, right: str | None, mark: str):
        lw = textwrap.wrap(left, col) if left else []
        rw = textwrap.wrap(right, col) if right else []
        for i in range(max(len(lw), len(rw), 1)):
            out.append(f"{(lw[i] if i < len(lw) else ''):<{col}} {mark if i == 0 else ' '} "
                       f"{rw[i] if i < len(rw) else ''}".rstrip())

    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            n = i2 - i1
            if n > 2 * context + 1:
                for k in range(i1, i1 + context):
                    rows(a[k], b[j1 + k - i1], " ")
                out.append(f"{'':<{col // 2 - 10}}... {n - 2 * context} equal sentences ...")
                for k in range(i2 - context, i2):
                    rows(a[k], b[j1 + k - i1], " ")
            else:
                for k in range(i1, i2):
                    rows(a[k], b[j1 + k - i1], " ")
        else:
            for k in range(max(i2 - i1, j2 - j1)):
                left = a[i1 + k] if i1 + k < i2 else None
                right = b[j1 + k] if j1 + k < j2 else None
                rows(left, right, "|" if left is not None and right is not None else ("<" if right is None else ">"))
    return out


def why(rec: dict, config, tokens: int | None = None) -> str:
    """Why the line's page was dropped (or kept, for a `kept` line), in one sentence: the rule
    for a revisit, a replaced page or an LSI neighbour, else the score against its threshold and
    the measurements that weighed most (score_rows has them all)."""
    reason, measure, sim = rec.get("reason"), rec.get("measure"), rec.get("similarity")
    sim_s = f"{sim:.2f}" if isinstance(sim, (int, float)) else "?"
    if reason == "unchanged":
        kept_at = f", kept at {rec['kept_at']}" if rec.get("kept_at") else ""
        if measure == "not-modified":
            return (f"unchanged: its server answered the recrawl's conditional request for {rec.get('url')} with "
                    f"304 Not Modified{kept_at}, so the kept page stood for it (not downloaded); "
                    "DEDUP_CONDITIONAL=False downloads such pages and compares their text")
        if measure == "churn":
            return (f"unchanged: a revisit of {rec.get('url')} with the same words but for churn (dates, "
                    f"times, counters){kept_at}; DEDUP_UNCHANGED=keep keeps such pages")
        return f"unchanged: a revisit of {rec.get('url')} with the same words{kept_at}; DEDUP_UNCHANGED=keep keeps such pages"
    if reason == "superseded" and rec.get("rule") == "clean_url":
        return (f"superseded: {rec.get('duplicate_of')} is this page under a cleaner URL (no tracking or session "
                f"parameters), so it replaced this page in the index ({measure or config.verifier} {sim_s}); "
                "storage may remove this page; DEDUP_PREFER_CLEAN_URL=False keeps the first copy")
    if reason == "superseded":
        return (f"superseded: {rec.get('duplicate_of')} is this page's copy and the URL its rel=canonical (or og:url) "
                f"names, so it replaced this page in the index ({measure or config.verifier} {sim_s}); "
                "storage may remove this page")
    if measure == "not-modified":  # a known copy asked again
        return (f"{reason}: dropped again without a download: its server answered the recrawl's conditional "
                f"request with 304 Not Modified, and {rec.get('duplicate_of')}, the kept page it duplicated when it "
                "was last downloaded, is still kept; DEDUP_CONDITIONAL=False downloads such pages")
    applied = rec.get("thresholds")
    if reason == "conceptual" or measure == "lsi":
        cos = applied.get("conceptual") if isinstance(applied, dict) else None
        return (f"conceptual: LSI cosine {sim_s} >= DEDUP_CONCEPTUAL_THRESHOLD "
                f"{cos if isinstance(cos, (int, float)) else config.conceptual_threshold}")
    score, threshold = rec.get("score"), rec.get("score_threshold")
    if not isinstance(score, (int, float)) or not isinstance(threshold, (int, float)):
        return (f"{reason}: {measure or config.verifier} {sim_s} (a drop log written before the score: "
                "the line does not say more)")
    top = ", ".join(f"{name} {value:+.2f}" for name, value in _parts(rec)[:3])
    what = "the same words" if reason == "exact" or measure == "exact" else f"{measure or config.verifier} {sim_s}"
    if rec.get("action") == "kept":
        return (f"kept: {rec.get('duplicate_of')} passed the lookup thresholds ({what}), but the score of the pair, "
                f"{score:.3f}, is under its threshold {threshold:.3f} (most weight: {top}); a copy let through is "
                "taught with `crawler-dedup eval --fit` (docs/tuning.md)")
    return (f"{reason}: the score of the pair, {score:.3f}, is at or over its threshold {threshold:.3f} ({what}; "
            f"most weight: {top})")


def _parts(rec: dict) -> list[tuple[str, float]]:
    parts = rec.get("contributions")
    if not isinstance(parts, dict):
        return []
    return sorted(((str(k), float(v)) for k, v in parts.items() if isinstance(v, (int, float))), key=lambda kv: -abs(kv[1]))


def score_rows(rec: dict, top: int | None = 8) -> list[list[str]]:
    """(measurement, value, log-odds it added) of a line's score, the `top` that weigh most (the
    rest summed in one row; None: all), then the base and the sum: what `show` and `compare` print."""
    features = rec.get("features")
    features = features if isinstance(features, dict) else {}
    parts = _parts(rec)
    shown, rest = (parts, []) if top is None else (parts[:top], parts[top:])
    rows = []
    for name, value in shown:
        v = features.get(name)
        rows.append([name, "unknown" if v is None else f"{v:.3f}" if isinstance(v, (int, float)) else str(v),
                     f"{value:+.3f}"])
    if rest:
        rows.append([f"({len(rest)} more; --json has them all)", "", f"{sum(v for _, v in rest):+.3f}"])
    base = rec.get("base")
    if isinstance(base, (int, float)):
        total = base + sum(v for _, v in parts)
        rows.append(["(base: a pair at the training means)", "", f"{base:+.3f}"])
        score = rec.get("score")
        rows.append(["= log-odds (score)", f"{score:.4f}" if isinstance(score, (int, float)) else "", f"{total:+.3f}"])
    return rows


def xor_line(a: str | None, b: str | None) -> str:
    try:
        x = int(a or "", 16) ^ int(b or "", 16)
    except (TypeError, ValueError):
        return "(a fingerprint is missing)"
    if not x:
        return f"{x:016x}  (identical fingerprints)"
    return f"{x:016x}  ({x.bit_count()} bits differ at {', '.join(str(63 - i) for i, c in enumerate(f'{x:064b}') if c == '1')})"


@dataclass
class Source:
    name: str
    url: str
    text: str | None
    title: str | None
    problem: str | None = None  # why there is no text
    html: bytes | None = None  # the markup, for the page's view (what it shows beside its main text)


def load_source(arg: str, max_bytes: int, mode: str, timeout: float = 20.0) -> Source:
    """A URL (plain HTTP GET), a .txt file (the text itself) or an HTML file, as extracted text."""
    from ..core.page.fingerprint import extract_step
    from ..core.verdict import Step

    if re.match(r"(?i)https?://", arg):
        import urllib.error
        import urllib.request

        request = urllib.request.Request(arg, headers={"User-Agent": "crawler-dedup compare"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as resp:
                body = resp.read(max_bytes + 1)
                url = resp.geturl()
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise ShowError(f"cannot fetch {arg}: {getattr(exc, 'reason', None) or exc}", exit_code=1) from None
        html = body
    elif os.path.isfile(arg):
        url = "file://" + os.path.abspath(arg)
        try:
            with open(arg, "rb") as fh:
                raw = fh.read(max_bytes + 1)
        except OSError as exc:
            raise ShowError(f"cannot read {arg}: {exc.strerror or exc}") from None
        if arg.lower().endswith(".txt"):
            return Source(arg, url, raw.decode("utf-8", "replace"), None)
        html = raw
    else:
        raise ShowError(f"{arg} is neither an http(s) URL nor a file")
    kind, value, title = extract_step(html, url, max_bytes, mode)
    if kind == Step.TEXT:
        return Source(arg, url, str(value), title, html=bytes(html))
    return Source(arg, url, None, None, problem=f"no text extracted ({value})")
