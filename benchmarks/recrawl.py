"""Recrawl: what a second crawl over the same index does with a site of real pages that changed.

    python benchmarks/recrawl.py [--pages 300] [--seed 0] [--data ../shared/data] [--out DIR [--keep]]
                                 [--json FILE] [--skip-baseline] [--rows update,drop,conditional,...]

Builds a site of N real article pages from ../shared/data (article-extraction-benchmark,
newspaper-testpages, readability-test-pages; pages whose trafilatura text is under 100 words or
a near-duplicate of a page already chosen are skipped), serves it on 127.0.0.1 with the demo's
PageServer, and crawls it twice with the project's own spider, as a user would:

    python -m scrapy crawl pages -a urls=URLFILE -s DEDUP_DIR=DIR/index -s DEDUP_DROPLOG=DIR/drops-N.jsonl \\
        -s ROBOTSTXT_OBEY=0 -s LOG_LEVEL=INFO -s CONCURRENT_REQUESTS=1 -o DIR/items-N.jsonl

Between the crawls the site changes (deterministically, by --seed; benchmarks/recrawl_site.py
chooses the pages and makes the changes), in groups:
  updated            ~N/6   a real correction: a new paragraph of another page's human text inserted
                            after a body paragraph, and 3-5 words of the body replaced
  churn              ~N/6   the same article re-fetched: digits of dates, times and counters changed
                            outside the article's text, and a "N views" element added after it
  figures            ~N/12  a correction of one figure: a number inside a sentence of the article's
                            own text changed (an update that differs only in a number: to be kept)
  replaced           ~N/12  the file now holds another (unchanged) page of the site
  copies_of_updates  ~N/12  new URLs after all old ones: an updated page's new HTML, byte for byte
                            (half) or with a few words of a sidebar changed (half)
  unchanged          rest   byte-identical
  new                ~10    real pages that were not in crawl 1
Crawl 2 uses the same index and the old URLs, then the new ones. One page at a time
(CONCURRENT_REQUESTS=1) so which copy comes first is defined.

Prints, per row (the default, and DEDUP_REVISIT=drop in its own index: a revisit matched
against its own URL dropped as a copy of itself; then conditional requests, recrawl_bytes.py),
what crawl 2 did with each group, and crawl 2's dedup/* counters. The server sends no validators
for the first two rows; for the others it honours them (or ignores them), and a second table
gives what crawl 2 downloaded, its time, and what the index keeps of the responses. --json FILE gets every figure plus the URLs that went wrong with their drop-log
lines. Exits 0 when the crawls ran (the figures are measured, not asserted); a setting the
project does not accept prints "n/a". Skips (exit 0) when the data folder is absent.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pages import data_dir  # noqa: E402
from recrawl_bytes import ROWS, bytes_table, index_bytes  # noqa: E402
from recrawl_site import Site, change_site, choose_pages, common_words, donor_snippets, load_candidates  # noqa: E402

DEFAULT_DATA = data_dir()
SPIDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recrawl_spider.py")
CRAWL_TIMEOUT = 1800


# -- the crawls --------------------------------------------------------------------------------

STAT = re.compile(r"'(dedup/[^']+)': (\d+)")


@dataclass
class Crawl:
    setting: str
    n: int
    cmd: list[str]
    seconds: float = 0.0
    rc: int | None = None
    error: str | None = None
    stats: dict = field(default_factory=dict)
    items: set = field(default_factory=set)
    drops: dict = field(default_factory=dict)  # url -> last drop-log line
    downloaded: int = 0  # Scrapy's downloader/response_bytes
    index: dict = field(default_factory=dict)  # recrawl_bytes.index_bytes after the crawl


def run_crawl(setting: str, n: int, urlfile: str, d: str, server) -> Crawl:
    row = ROWS[setting]
    server.validators = row["server"]  # (read per request: one server, the same URLs for every row)
    spider = ["runspider", SPIDER] if row.get("not_leaves") else ["crawl", "pages"]
    cmd = [sys.executable, "-m", "scrapy", *spider, "-a", f"urls={urlfile}",
           "-s", f"DEDUP_DIR={d}/index", "-s", f"DEDUP_DROPLOG={d}/drops-{n}.jsonl",
           "-s", "ROBOTSTXT_OBEY=0", "-s", "LOG_LEVEL=INFO", "-s", "CONCURRENT_REQUESTS=1"]
    for s in row["settings"]:
        cmd += ["-s", s]
    cmd += ["-o", f"{d}/items-{n}.jsonl"]
    c = Crawl(setting, n, cmd)
    print(f"crawl {n} [{setting}]: {shlex.join(cmd)}", flush=True)
    log = os.path.join(d, f"crawl-{n}.log")
    t0 = time.perf_counter()
    try:
        with open(log, "w", encoding="utf-8") as err:
            c.rc = subprocess.run(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err,
                                  timeout=CRAWL_TIMEOUT).returncode
    except subprocess.TimeoutExpired:
        c.error = f"timed out after {CRAWL_TIMEOUT} s"
    c.seconds = time.perf_counter() - t0
    with open(log, encoding="utf-8", errors="replace") as fh:
        stderr = fh.read()  # Scrapy's log, ending with the stats dump
    c.stats = {k: int(v) for k, v in STAT.findall(stderr)}
    got = re.search(r"'downloader/response_bytes': (\d+)", stderr)
    c.downloaded = int(got.group(1)) if got else 0
    c.index = index_bytes(os.path.join(d, "index"))
    if c.error is None and c.rc != 0:
        first = next((ln for ln in stderr.splitlines() if "ERROR" in ln), None) or stderr.strip().splitlines()[-1:]
        first = first if isinstance(first, str) else " ".join(first)
        first = re.sub(r"^\S+ \S+ \[[^\]]*\] ERROR: ", "", first)  # the log line's time and logger
        c.error = f"exit status {c.rc}: {first}"[:400]
    items = os.path.join(d, f"items-{n}.jsonl")
    if os.path.exists(items):
        with open(items, encoding="utf-8") as fh:
            c.items = {json.loads(ln)["url"] for ln in fh if ln.strip()}
    drops = os.path.join(d, f"drops-{n}.jsonl")
    if os.path.exists(drops):
        with open(drops, encoding="utf-8") as fh:
            for ln in fh:
                if ln.strip():
                    rec = json.loads(ln)
                    c.drops[rec["url"]] = rec
    print(f"  {c.seconds:.1f} s, {len(c.items)} items, {len(c.drops)} drop-log lines"
          + (f"  FAILED: {c.error}" if c.error else ""), flush=True)
    return c


def _line(rec: dict) -> dict:
    """A drop-log line without its bulky fields, for the report."""
    return {k: v for k, v in rec.items() if k not in ("item", "text", "excerpt")}


def fate(c: Crawl, url: str) -> tuple[str, dict | None]:
    """kept | unchanged | self (exact/near copy of its own URL) | dropped | missing."""
    if url in c.items:
        return "kept", None
    rec = c.drops.get(url)
    if rec is None:
        return "missing", None
    if rec.get("reason") == "unchanged":
        return "unchanged", rec
    if rec.get("duplicate_of") == url and rec.get("reason") in ("exact", "near"):
        return "self", rec
    return "dropped", rec


def figures(c: Crawl, groups: dict, sources: dict, copy_of: dict) -> dict:
    out: dict = {"stats": dict(sorted(c.stats.items())), "failures": {}}
    fails = out["failures"]

    def record(key, url, how, rec):
        fails.setdefault(key, []).append({"url": url, "fate": how, "drop": _line(rec) if rec else None})

    for g in ("updated", "figures", "new"):
        kept = 0
        for u in groups[g]:
            how, rec = fate(c, u)
            kept += how == "kept"
            if how != "kept":
                record(f"{g}_lost", u, how, rec)
        out[g] = {"kept": kept, "total": len(groups[g])}
    for g in ("churn", "unchanged"):
        split = {"unchanged": 0, "self": 0, "kept": 0, "dropped": 0, "missing": 0}
        reasons: dict = {}
        for u in groups[g]:
            how, rec = fate(c, u)
            split[how] += 1
            r = "kept" if how == "kept" else (rec or {}).get("reason", how)
            reasons[r] = reasons.get(r, 0) + 1
            if how in ("self", "dropped", "missing") or (g == "unchanged" and how == "kept"):
                record(f"{g}_{how}", u, how, rec)
        out[g] = {**split, "total": len(groups[g]), "reasons": reasons}
    for g, target in (("replaced", sources), ("copies_of_updates", copy_of)):
        right = 0
        for u in groups[g]:
            how, rec = fate(c, u)
            ok = how != "kept" and rec is not None and rec.get("duplicate_of") == target[u]
            right += ok
            if not ok:
                fails.setdefault(f"{g}_wrong", []).append(
                    {"url": u, "expected_duplicate_of": target[u], "fate": how, "drop": _line(rec) if rec else None})
        out[g] = {"dropped_as_copy": right, "total": len(groups[g])}
    return out


# -- the report --------------------------------------------------------------------------------

def table(rows: dict, groups: dict) -> str:
    """One row per setting, a column (or four) per group; a setting that did not run says why."""
    n = {g: len(v) for g, v in groups.items()}
    spans = [("", 1), (f"updated ({n['updated']})", 1), (f"figures ({n['figures']})", 1), (f"churn ({n['churn']})", 4),
             (f"unchanged ({n['unchanged']})", 4), (f"replaced ({n['replaced']})", 1),
             (f"copies ({n['copies_of_updates']})", 1), (f"new ({n['new']})", 1)]
    head = ["setting", "kept", "kept", "unch", "self", "kept", "other", "unch", "self", "kept", "other", "->source",
            "->updated", "kept"]
    lines, skipped = [head], []
    for name, f in rows.items():
        if "n/a" in f:
            skipped.append((name, f"n/a ({f['n/a']})"))
            continue
        cells = [name, f"{f['updated']['kept']}/{f['updated']['total']}", f"{f['figures']['kept']}/{f['figures']['total']}"]
        for g in ("churn", "unchanged"):
            s = f[g]
            cells += [str(s["unchanged"]), str(s["self"]), str(s["kept"]), str(s["dropped"] + s["missing"])]
        cells += [f"{f['replaced']['dropped_as_copy']}/{f['replaced']['total']}",
                  f"{f['copies_of_updates']['dropped_as_copy']}/{f['copies_of_updates']['total']}",
                  f"{f['new']['kept']}/{f['new']['total']}"]
        lines.append(cells)
    widths = [max(len(r[i]) for r in lines) for i in range(len(head))]
    at = 0
    for title, cols in spans:  # widen a one-column group to its title
        if cols == 1:
            widths[at] = max(widths[at], len(title))
        at += cols
    top, at = [], 0
    for title, cols in spans:
        top.append(f"{title:^{sum(widths[at:at + cols]) + 2 * (cols - 1)}}")
        at += cols
    out = ["  ".join(top).rstrip()]
    out += ["  ".join(f"{c:<{w}}" if i == 0 else f"{c:>{w}}" for i, (c, w) in enumerate(zip(r, widths))).rstrip()
            for r in lines]
    out += [f"{name:<{widths[0]}}  {why}" for name, why in skipped]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=300, help="pages of the site in crawl 1 (default 300)")
    ap.add_argument("--seed", type=int, default=0, help="which pages, groups and edits (default 0)")
    ap.add_argument("--data", default=DEFAULT_DATA, help="the shared data folder (default <repo>/../shared/data)")
    ap.add_argument("--out", help="an empty or new folder for the site, indexes, logs and feeds "
                                  "(default: a temporary folder, removed unless --keep)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--json", metavar="FILE", help="write every figure (and the failures) to FILE")
    ap.add_argument("--skip-baseline", action="store_true", help="leave out the DEDUP_REVISIT=drop row")
    ap.add_argument("--rows", default=",".join(ROWS), help=f"which rows, of {','.join(ROWS)} (default: all)")
    args = ap.parse_args(argv)
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    if not rows or rows[0] != "update" or any(r not in ROWS for r in rows):
        ap.error(f"--rows: names of {', '.join(ROWS)}, starting with update")
    if args.pages < 4:
        ap.error("--pages must be at least 4 (one page per group)")
    data = os.path.abspath(args.data)
    if not os.path.isdir(data):
        print(f"no data folder at {data}: skipping the recrawl benchmark")
        return 0
    if args.out and os.path.isdir(args.out) and os.listdir(args.out):
        ap.error(f"--out {args.out} is not empty (a used index would change the results)")
    out = os.path.abspath(args.out) if args.out else tempfile.mkdtemp(prefix="crawler-dedup-recrawl-")
    os.makedirs(os.path.join(out, "site"), exist_ok=True)

    from crawler_dedup.demo.server import PageServer

    # one server for every crawl: the URLs (its port) must be the same in every row; it
    # reads a file again when its mtime or size changes, so the site is changed on disk
    server = PageServer(os.path.join(out, "site")).start()
    try:
        return run(args, data, out, server)
    finally:
        server.stop()
        if args.out or args.keep:
            print(f"kept: {out}")
        else:
            shutil.rmtree(out, ignore_errors=True)


def run(args, data: str, out: str, server) -> int:
    t_start = time.perf_counter()
    rnd = random.Random(args.seed)
    cands = load_candidates(data)
    if not cands:
        print(f"no pages under {data}: skipping the recrawl benchmark")
        return 0
    rnd.shuffle(cands)  # mix the three sets; the same seed gives the same order
    n = args.pages
    n_new = max(1, min(10, n // 6))
    width = max(3, len(str(n + n_new - 1)))
    url_of = lambda i: f"{server.base_url}/p{i:0{width}d}.html"  # noqa: E731
    chosen, rest = choose_pages(cands, n, n_new, url_of)
    if len(chosen) < n + n_new:
        n_new = max(1, min(n_new, len(chosen) // 7))
        n = len(chosen) - n_new
        print(f"only {len(chosen)} usable pages: the site gets {n}, and {n_new} new ones")
        if n < 4:
            print("too few pages for the benchmark")
            return 1
    site = Site(chosen[:n], chosen[n:n + n_new])
    n_upd, n_churn, n_repl, n_copies = max(1, n // 6), max(1, n // 6), max(1, n // 12), max(1, n // 12)
    n_fig = max(1, n // 12)
    n_repl = max(1, min(n_repl, (n - n_upd - n_churn - n_fig) // 2))  # as many unchanged pages as sources
    snippets = donor_snippets(rest, [p.text for p in chosen] + [p.gold for p in chosen], 2 * n_upd)
    if not snippets:
        print("no donor text for the updates (too few pages outside the site)")
        return 1
    vocab = common_words(cands)
    kinds = {k: sum(p.name.startswith(k) for p in site.pages) for k in ("aeb", "np", "rd")}
    print(f"site: {n} pages ({kinds['aeb']} article-extraction-benchmark, {kinds['np']} newspaper, "
          f"{kinds['rd']} readability) + {n_new} new in crawl 2, from {len(cands)} candidates; "
          f"{len(snippets)} correction snippets from pages not on the site ({time.perf_counter() - t_start:.1f} s)")

    # crawl 1: the pages as they are (the sets are all UTF-8: written back byte for byte)
    for p in site.pages:
        _write(os.path.join(out, "site", p.url.rsplit("/", 1)[1]), p.html.encode("utf-8"))
    urls1 = [p.url for p in site.pages]
    _write(os.path.join(out, "urls-1.txt"), ("\n".join(urls1) + "\n").encode())
    settings = [r for r in args.rows.split(",") if r and not (args.skip_baseline and r == "drop")]
    crawls: dict = {s: {} for s in settings}
    for s in settings:
        os.makedirs(os.path.join(out, s), exist_ok=True)
        crawls[s][1] = run_crawl(s, 1, os.path.join(out, "urls-1.txt"), os.path.join(out, s), server)

    t0 = time.perf_counter()
    change_site(site, n_upd, n_churn, n_repl, n_copies, snippets, vocab, rnd, server.base_url, url_of, n_fig)
    time.sleep(0.01)  # a rewritten file gets a new mtime, so the server reads it again
    for u, html in site.new_html.items():
        _write(os.path.join(out, "site", u.rsplit("/", 1)[1]), html)
    urls2 = urls1 + site.groups["new"] + site.groups["copies_of_updates"]
    _write(os.path.join(out, "urls-2.txt"), ("\n".join(urls2) + "\n").encode())
    runs = site.churn_runs.values()
    print(f"crawl 2's site ({time.perf_counter() - t0:.1f} s): "
          + ", ".join(f"{g} {len(v)}" for g, v in site.groups.items())
          + f"\n  churn: {sum(runs)} date/time/counter runs changed on {sum(1 for v in runs if v)} of the "
          f"{len(runs)} pages; extracted text changed on {len(site.churn_changed)} "
          f"({len(site.churn_changed_words)} beyond its digits)")
    for s in settings:
        if crawls[s][1].error is None:
            crawls[s][2] = run_crawl(s, 2, os.path.join(out, "urls-2.txt"), os.path.join(out, s), server)

    rows = {}
    for s in settings:
        c1, c2 = crawls[s][1], crawls[s].get(2)
        bad = c1.error or (c2.error if c2 else None)
        if bad:
            rows[s] = {"n/a": bad}
            continue
        f = figures(c2, site.groups, site.sources, site.copy_of)
        f["crawl1"] = {"kept": len(c1.items & set(urls1)), "total": n,
                       "dropped": [_line(r) for r in c1.drops.values()], "stats": dict(sorted(c1.stats.items()))}
        f["churn_text_changed"] = {u: _short_fate(c2, u) for u in site.churn_changed}
        rows[s] = f
    report(rows, site, crawls)
    print("\n" + bytes_table(crawls))
    total = time.perf_counter() - t_start
    print(f"total {total:.1f} s")
    if args.json:
        doc = {"pages": n, "seed": args.seed, "data": data, "base_url": server.base_url,
               "sources": {p.url: p.name for p in site.pages + site.fresh},
               "groups": site.groups, "replaced_sources": site.sources, "copies_of": site.copy_of,
               "churn": {"text_changed": site.churn_changed, "text_changed_beyond_digits": site.churn_changed_words,
                         "runs_changed": site.churn_runs},
               "settings": rows,
               "crawls": [{"setting": s, "crawl": k, "cmd": c.cmd, "seconds": round(c.seconds, 2), "rc": c.rc,
                           "error": c.error, "downloaded": c.downloaded, "index": c.index}
                          for s in settings for k, c in sorted(crawls[s].items())],
               "seconds": round(total, 1)}
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=1, ensure_ascii=False)
    if "n/a" in rows["update"]:
        print(f"the crawl with the default settings failed: {rows['update']['n/a']}", file=sys.stderr)
        return 1
    return 0


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)


def _short_fate(c: Crawl, url: str) -> str:
    how, rec = fate(c, url)
    return how if how != "dropped" else f"dropped/{rec.get('reason')}"


def report(rows: dict, site: Site, crawls: dict) -> None:
    print()
    print(table(rows, site.groups))
    print("unch = dropped as `unchanged`; self = dropped as an exact/near copy of its own URL; other = dropped "
          "otherwise, or never fetched;\n->source, ->updated = dropped as a copy of the page whose content it holds")
    for s, f in rows.items():
        if "n/a" in f:
            continue
        c1 = f["crawl1"]
        print(f"\n[{s}] crawl 1 kept {c1['kept']}/{c1['total']}")
        for d in c1["dropped"]:  # a page crawl 1 dropped is not in the index under its own URL
            print(f"    crawl 1 dropped {d['url']} as {d.get('reason')} of {d.get('duplicate_of')}")
        print(f"[{s}] crawl 2 stats: " + (", ".join(f"{k.split('/', 1)[1]}={v}" for k, v in f["stats"].items())
                                          or "none"))
        if f["churn_text_changed"]:
            fates: dict = {}
            for v in f["churn_text_changed"].values():
                fates[v] = fates.get(v, 0) + 1
            print(f"[{s}] churn pages whose extracted text changed ({len(f['churn_text_changed'])}): "
                  + ", ".join(f"{k} {v}" for k, v in sorted(fates.items())))
        if not f["failures"]:
            print(f"[{s}] no failures: every group did what the design says")
        for key, lst in f["failures"].items():
            print(f"[{s}] {key}: {len(lst)}")
            for e in lst[:3 if key.endswith("_self") else 5]:
                d = e["drop"] or {}
                print(f"    {e['url']}  {e['fate']}"
                      + (f"  reason={d.get('reason')} duplicate_of={d.get('duplicate_of')} "
                         f"similarity={d.get('similarity')}" if d else "")
                      + (f"  expected {e['expected_duplicate_of']}" if "expected_duplicate_of" in e else ""))
            if len(lst) > (3 if key.endswith("_self") else 5):
                print("    ... (all in --json)")
    print("\ncrawls:")
    for s, runs in crawls.items():
        for k, c in sorted(runs.items()):
            print(f"  [{s}] crawl {k}: {c.seconds:6.1f} s, {len(c.items)} items, {len(c.drops)} drop-log lines"
                  + (f", failed: {c.error}" if c.error else ""))


if __name__ == "__main__":
    sys.exit(main())
