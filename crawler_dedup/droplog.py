"""The JSONL drop log: one object per dropped (or flagged) page, appended and flushed per line;
with DEDUP_LOG_KEPT, also one per page kept although a candidate passed the lookup thresholds
(`action` `kept`: the copies the score let through, for a user to look over)."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from typing import Any, Callable, Iterator

from .core.dedup import Verdict, fp_hex

REQUIRED_KEYS = (
    "time", "url", "duplicate_of", "action", "reason", "distance", "similarity",
    "fingerprint", "duplicate_of_fingerprint", "stage", "spider",
)
_ACTIONS = {"drop": "dropped", "flag": "flagged", "keep": "kept"}
KEPT = "kept"  # the action of a line that drops nothing (readers that act on drops skip it)


def iso_time(seconds: float | None = None) -> str:
    when = datetime.now(timezone.utc) if seconds is None else datetime.fromtimestamp(seconds, timezone.utc)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def make_record(verdict: Verdict, stage: str, spider: str | None, item: Any = None) -> dict[str, Any]:
    """A drop's line, or a kept page's (`kept`: the candidate it was scored apart from is its
    `duplicate_of`, its scores the pair's)."""
    w = verdict.weighing
    kept = verdict.action == "keep"
    if kept and not verdict.scored_apart:
        raise ValueError("a kept page has a drop-log line only when the score kept it apart from a candidate")
    record: dict[str, Any] = {
        "time": iso_time(),
        "url": verdict.url,
        "duplicate_of": w.url if kept and w is not None else verdict.duplicate_of,
        "action": _ACTIONS[str(verdict.action)],
        "reason": ("exact" if w.measures.get("exact") else "near") if kept and w is not None else verdict.reason,
        "distance": ((w.fingerprint ^ (verdict.fingerprint or 0)).bit_count() if kept and w is not None
                     else verdict.distance),
        "similarity": w.similarity if kept and w is not None else verdict.similarity,
        "fingerprint": fp_hex(verdict.fingerprint),
        "duplicate_of_fingerprint": fp_hex(w.fingerprint if kept and w is not None else verdict.duplicate_of_fingerprint),
        "stage": stage,
        "spider": spider,
    }
    measure = w.measure if kept and w is not None else verdict.measure
    if measure:
        record["measure"] = measure
    if verdict.rule:
        record["rule"] = verdict.rule  # the rule of the chain that decided (core/decide/rules.py)
    if verdict.thresholds is not None:  # what it was verified against (`show` prints them)
        record["thresholds"] = verdict.thresholds.as_dict()
    if verdict.reason == "unchanged" and verdict.kept_at is not None:
        record["kept_at"] = iso_time(verdict.kept_at)  # when the URL's text was first kept
    if w is not None and verdict.reason not in ("unchanged", "superseded"):
        record.update(w.explained())  # score, score_threshold, features, contributions, base
    if verdict.title:
        record["title"] = verdict.title
    other_title = w.title if kept and w is not None else verdict.duplicate_of_title
    if other_title:
        record["duplicate_of_title"] = other_title
    if verdict.excerpt:
        record["excerpt"] = verdict.excerpt
    if verdict.text is not None:
        record["text"] = verdict.text
    if item is not None:
        record["item"] = item
    return record


def superseded_record(verdict: Verdict, stage: str, spider: str | None, dry_run: bool = False) -> dict[str, Any]:
    """The line for a kept page that `verdict`'s page replaced as its canonical URL: storage
    holding the earlier URL may remove it."""
    old = verdict.superseded or {}
    record: dict[str, Any] = {
        "time": iso_time(), "url": old["url"], "duplicate_of": verdict.url,
        "action": "flagged" if dry_run else "dropped", "reason": "superseded",
        "distance": old["distance"], "similarity": old["similarity"], "fingerprint": fp_hex(old["fingerprint"]),
        "duplicate_of_fingerprint": fp_hex(verdict.fingerprint), "stage": stage, "spider": spider,
        "measure": old["measure"], "kept_at": iso_time(old["time"]),
    }
    if old.get("rule"):
        record["rule"] = old["rule"]  # canonical (its rel=canonical names this page) or clean_url
    if old.get("title"):
        record["title"] = old["title"]
    if verdict.title:
        record["duplicate_of_title"] = verdict.title
    if old.get("text") is not None:
        record["text"] = old["text"]
    return record


def kept_now(lines) -> Callable[[str], str]:
    """url -> the URL whose page stands for it now, following the log's superseded lines (a kept
    page replaced later by its canonical or cleaner URL); a URL never replaced is itself."""
    replaced: dict[str, str] = {}
    for r in lines:  # in the log's order: a URL that replaces another is kept from then on
        if r.get("reason") == "superseded":
            replaced[r["url"]] = r["duplicate_of"]
            replaced.pop(r["duplicate_of"], None)

    def now(url: str) -> str:
        seen: set[str] = set()
        while url in replaced and url not in seen:
            seen.add(url)
            url = replaced[url]
        return url
    return now


# JSON leaves these raw: C1 controls (U+009B is a one-character CSI on some terminals; U+0085 ends
# a line for str.splitlines and some JSON-lines readers), the line and paragraph separators, and
# the bidi overrides and isolates (a URL that reads as another). Escaped, they parse back the same.
_UNSAFE = {c: f"\\u{c:04x}" for c in (*range(0x80, 0xA0), 0x2028, 0x2029, *range(0x202A, 0x202F),
                                      *range(0x2066, 0x206A))}
_LINE_BREAKS = _UNSAFE


def dumps(value: Any, **kwargs: Any) -> str:
    """JSON as the drop log writes it (UTF-8 text, crawled values' unsafe characters escaped): for
    every line or document a command prints or writes with crawled URLs, titles or texts in it."""
    return json.dumps(value, ensure_ascii=False, **kwargs).translate(_UNSAFE)


class DropLog:
    """Each line goes out in one O_APPEND write, so processes sharing the file never interleave."""

    def __init__(self, path: str):
        self.path = path
        parent = os.path.dirname(os.path.abspath(path))
        os.makedirs(parent, exist_ok=True)
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        _end_torn_line(path, self._fd)

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, default=str, separators=(",", ":"))
        # (JSON leaves these raw; str.splitlines and some JSON-lines readers end a line at them)
        line = line.translate(_LINE_BREAKS) + "\n"
        if self._fd is None:
            raise OSError(f"the drop log {self.path} is closed")
        os.write(self._fd, line.encode("utf-8"))

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _end_torn_line(path: str, fd: int) -> None:
    """A last line without its newline (a crash mid-write) is ended, so the next record starts a
    line of its own instead of being glued to it (the readers count the torn one)."""
    try:
        size = os.fstat(fd).st_size
        if size:
            with open(path, "rb") as fh:
                fh.seek(size - 1)
                if fh.read(1) != b"\n":
                    os.write(fd, b"\n")
    except OSError:
        pass


def jsonl_lines(path: str) -> Iterator[tuple[int, Any, str]]:
    """(line number, parsed value or the JSONDecodeError, line) of each non-blank line; `path` a
    file, or a folder of parts with a manifest (a Spark scan's output: parts_of)."""
    number = 0
    for part in parts_of(path):
        with open(part, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                number += 1
                if not line.strip():
                    continue
                try:
                    yield number, json.loads(line), line
                except json.JSONDecodeError as exc:
                    yield number, exc, line


MANIFEST = "_manifest.json"


def parts_of(path: str) -> list[str]:
    """The files of a JSON-lines output in order: the file itself, or a folder's parts as its
    MANIFEST lists them (written after every part: a folder without one is unfinished)."""
    if not os.path.isdir(path):
        return [path]
    try:
        with open(os.path.join(path, MANIFEST), encoding="utf-8") as fh:
            manifest = json.load(fh)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} has no {MANIFEST}: an output its job did not finish (run the scan "
                                "again to finish it)") from None
    return [os.path.join(path, part["name"]) for part in manifest["parts"]]


def read_droplog(path: str, errors: list | None = None) -> Iterator[dict[str, Any]]:
    """Records in file order; a line that is not a JSON object is skipped (and noted in `errors`)."""
    for number, record, line in jsonl_lines(path):
        if isinstance(record, dict):
            yield record
        elif errors is not None:
            errors.append((number, line[:200]))
