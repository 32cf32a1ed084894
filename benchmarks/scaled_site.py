"""A holdout several times its size, for measuring what an index costs at 10^4+ pages: each page
of an extracted holdout (manifest.json and site/, as run_holdout.py reads it) served COPIES times,
the words of its text renamed per copy (every word outside scripts, styles and tags mapped to
another word of the holdout's own vocabulary, by a hash of the word and the copy's number).

A renamed copy keeps the page's markup, its lengths and its structure, so extraction, the
visible text, the title's parts and the URL cost what the real page costs; its text is distinct
from every other copy's. Copy 0 is the page itself; copy c of a page at HOST is served at
c<c>.HOST, and its duplicate group is the page's with `#c` appended (a copy of a page stays a
copy of it within the renamed copy: the renaming is the same word for word).

    python benchmarks/scaled_site.py --holdout DIR --copies 7 --out DIR2
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import xxhash

_WORD = re.compile(rb"(?<![&#\w])[A-Za-z]{2,}")  # (not an entity's name: &mdash;)
_HIDDEN = re.compile(rb"(<script\b.*?</script\s*>|<style\b.*?</style\s*>|<!--.*?-->|<[^>]*>)", re.S | re.I)


def vocabulary(site: Path, limit: int = 60_000) -> list[bytes]:
    seen: dict[bytes, None] = {}
    for path in sorted(site.iterdir())[:400]:
        for part in _HIDDEN.split(path.read_bytes()):
            if part.startswith(b"<"):
                continue
            for word in _WORD.findall(part):
                seen.setdefault(word.lower(), None)
                if len(seen) >= limit:
                    return list(seen)
    return list(seen)


def renamed(html: bytes, copy: int, vocab: list[bytes]) -> bytes:
    """The page with each word of its text (not its tags, scripts or styles) renamed for `copy`,
    to a word of the same length (the text's length stays the page's)."""
    if copy == 0:
        return html
    seed = copy * 7919
    by_length: dict[int, list[bytes]] = {}
    for w in vocab:
        by_length.setdefault(len(w), []).append(w)

    def word(m: re.Match) -> bytes:
        w = m.group(0)
        pool = by_length.get(len(w)) or vocab
        new = pool[xxhash.xxh64_intdigest(w.lower(), seed=seed) % len(pool)]
        return new.capitalize() if w[:1].isupper() else new

    return b"".join(part if part.startswith(b"<") else _WORD.sub(word, part) for part in _HIDDEN.split(html))


def _write(job):
    src, dst, copy, vocab = job
    dst.write_bytes(renamed(src.read_bytes(), copy, vocab))


def scale(holdout: Path, copies: int, out: Path) -> Path:
    """Write the scaled holdout into `out` (once: an `out` that has its manifest is reused)."""
    if (out / "manifest.json").exists():
        return out
    manifest = json.loads((holdout / "manifest.json").read_text())
    (out / "site").mkdir(parents=True, exist_ok=True)
    vocab = vocabulary(holdout / "site")
    items, jobs = [], []
    for copy in range(copies):
        for it in manifest["items"]:
            path = it["path"] if copy == 0 else f"c{copy}-{it['path']}"
            mark = "" if copy == 0 else f"#c{copy}"
            items.append(dict(it, path=path, id=it["id"] + mark, group=it["group"] + mark,
                              host=it["host"] if copy == 0 else f"c{copy}.{it['host']}"))
            jobs.append((holdout / "site" / it["path"], out / "site" / path, copy, vocab))
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(_write, jobs, chunksize=64))
    ignore = [[a + m, b + m] for a, b in manifest.get("ignore", []) for m in [""] + [f"#c{c}" for c in range(1, copies)]]
    (out / "manifest.json").write_text(json.dumps({"items": items, "ignore": ignore}))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--holdout", required=True, type=Path)
    ap.add_argument("--copies", type=int, default=7)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    scale(args.holdout, args.copies, args.out)
    print(f"{args.out}: {len(json.loads((args.out / 'manifest.json').read_text())['items'])} pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
