"""A damaged index never costs a page: each kind of damage, and what runs on it, with each loss counted.

    python benchmarks/damage.py [--groups 40] [--keep DIR]

A real crawl (the killtest's spider and local server: real pages, each under 3 URLs, plus hostile
pages) builds an index. Then, for each kind of damage, on a fresh copy of that index:

- rot: bytes inside a kept record's URL made invalid UTF-8 (bit rot inside a value);
- zeroed: one 4 KiB page of data.mdb that holds kept records, zeroed;
- cut: data.mdb cut at half its size (a full disk, a bad copy);
- empty: data.mdb emptied; missing: data.mdb deleted (its lock file and drop log left);

and runs on it: a crawl of every URL; `index expire`, `compact`, `remove`, `add`; `index rebuild`,
then a crawl of every URL on the rebuilt index. Loss columns (all must be 0):

- lost requests: URLs neither stored nor dropped with a line, in a crawl that did not stop at start;
- silent start-overs: a crawl on an emptied or missing data.mdb that ran without an ERROR line;
- tracebacks: in any crawl's or command's output;
- writes into damage: a writing command that exited 0 on the damaged index, or changed its file;
- rebuild claims: `rebuild` exited 0 but its result does not verify.

Hostile pages are in every crawl: titles with C1 controls and bidi overrides, an empty body, binary
bytes, invalid UTF-8, a 6 MB page. Each must be stored or dropped with a line, and `restore` of the
drop log must print no raw C1 or bidi character.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from killtest import ROOT, Harness  # noqa: E402

HOSTILE = {
    "h-c1.html": "<html><head><title>Breaking \x9b31m news \x85 now</title></head><body><article><p>"
                 + "A story with a hostile title, told at length for the extraction. " * 30 + "</p></article></body></html>",
    "h-bidi.html": "<html><head><title>Invoice \u202egnp.exe\u2066 paid</title></head><body><article><p>"
                   + "A story with a bidi override in its title, told at length. " * 30 + "</p></article></body></html>",
    "h-copy.html": "<html><head><title>Invoice \u202egnp.exe\u2066 paid</title></head><body><main><p>"
                   + "A story with a bidi override in its title, told at length. " * 30 + "</p></main></body></html>",
    "h-empty.html": "",
    "h-binary.html": None,  # random bytes
    "h-badutf8.html": None,  # invalid UTF-8 declared UTF-8
    "h-huge.html": None,  # 6 MB
}
UNSAFE = {chr(c) for c in (*range(0x80, 0xA0), 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))}
DAMAGES = ("rot", "zeroed", "cut", "empty", "missing")
COMMANDS = (("expire", ["index", "expire", "--window", "1", "--yes"]), ("compact", ["index", "compact", "--yes"]),
            ("remove", ["index", "remove", "URL", "--yes"]), ("add", ["index", "add", "ITEMS"]))


def write_hostile(site: str) -> list[str]:
    rnd = os.urandom
    for name, body in HOSTILE.items():
        if name == "h-binary.html":
            data = rnd(20000)
        elif name == "h-badutf8.html":
            data = (b"<html><head><meta charset='utf-8'><title>Bad \xff\xfe bytes</title></head><body><p>"
                    + b"Words and \xc3\x28 broken \xa0\xa1 sequences. " * 60 + b"</p></body></html>")
        elif name == "h-huge.html":
            data = b"<html><body><p>" + b"huge page words " * 400_000 + b"</p></body></html>"
        else:
            data = body.encode("utf-8")
        with open(os.path.join(site, name), "wb") as fh:
            fh.write(data)
    return ["/" + n for n in HOSTILE]


class Damage(Harness):
    def __init__(self, work: str, groups: int):
        super().__init__(work, groups, seed=1)
        self.hostile = write_hostile(os.path.join(work, "site"))
        self.all = self.paths + self.hostile
        self.losses = {"lost requests": 0, "silent start-overs": 0, "tracebacks": 0, "writes into damage": 0,
                       "rebuild claims": 0, "hostile pages lost": 0, "raw C1/bidi printed": 0}
        self.rows: list[tuple[str, str, str]] = []

    def full_crawl(self, log: str) -> dict:
        if os.path.exists(self.stored_path):
            os.remove(self.stored_path)
        got = self.crawl(self.all, {"DEDUP_WORKERS": "0"}, None, log)
        with open(log, encoding="utf-8", errors="replace") as fh:
            got["log"] = fh.read()
        got["stored"] = {url for url, _ in self.stored()}
        return got

    def accounted(self, got: dict, since: int) -> tuple[int, int]:
        """(URLs neither stored nor dropped with a line since drop line `since`, of them hostile)."""
        dropped = {line.get("url") for line in self.drop_lines()[since:]}
        never = [p for p in self.all if self.url(p) not in got["stored"] and self.url(p) not in dropped]
        return len(never), sum(p in self.hostile for p in never)

    def cli(self, args: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "crawler_dedup", *args], capture_output=True, text=True,
                              cwd=ROOT, timeout=600)

    def kept_urls(self) -> list[str]:
        from crawler_dedup.tools.indexes import open_index

        index = open_index(self.dir, readonly=True)
        try:
            return sorted(doc.url for doc in index.read(lambda txn: list(index.scan(txn))))
        finally:
            index.store.close()

    def damage(self, kind: str) -> None:
        """Every stored copy is damaged: LMDB writes pages anew, so older copies of a record lie in
        its free pages, and damaging only the first one met may miss the live one."""
        data = os.path.join(self.dir, "data.mdb")
        if kind in ("rot", "zeroed"):
            raw = bytearray(open(data, "rb").read())
            needle = self.victims[0 if kind == "rot" else 1].encode()
            at = raw.find(needle)
            while at >= 0:
                if kind == "rot":
                    raw[at + len(needle) - 3] = 0xFF
                else:
                    page = at // 4096 * 4096
                    raw[page:page + 4096] = bytes(4096)
                at = raw.find(needle, at + 1)
            open(data, "wb").write(bytes(raw))
        elif kind == "cut":
            with open(data, "r+b") as fh:
                fh.truncate(os.path.getsize(data) // 2)
        elif kind == "empty":
            open(data, "wb").close()
        else:
            os.remove(data)

    def run(self) -> int:  # type: ignore[override]
        base = os.path.join(self.work, "base")
        self.dir = base
        first = self.full_crawl(os.path.join(self.work, "base.log"))
        never, hostile = self.accounted(first, 0)
        self.losses["lost requests"] += never
        self.losses["hostile pages lost"] += hostile
        self.check_printed(base)
        kept = self.kept_urls()
        self.victims = [kept[0], kept[len(kept) // 2], kept[-1]]  # rotted, zeroed, removed
        items = os.path.join(self.work, "items.jsonl")
        with open(items, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({"url": "https://new.example/1", "text": "a page filed by index add " * 40}) + "\n")
        for kind in DAMAGES:
            self.dir = os.path.join(self.work, kind)
            shutil.copytree(base, self.dir)
            self.damage(kind)
            self.crawl_on(kind)
            for name, args in COMMANDS:
                self.dir = os.path.join(self.work, f"{kind}-{name}")
                shutil.copytree(base, self.dir)
                self.damage(kind)
                before = self.snapshot()
                args = [self.victims[2] if a == "URL" else items if a == "ITEMS" else a for a in args]
                got = self.cli(args + ["--dir", self.dir])
                changed = self.snapshot() != before
                wrote = got.returncode == 0 or changed
                self.losses["writes into damage"] += wrote
                self.losses["tracebacks"] += "Traceback" in got.stderr
                self.rows.append((kind, name, f"exit {got.returncode}{', file changed' if changed else ''}: "
                                  f"{(got.stderr or got.stdout).strip().splitlines()[-1][:90] if (got.stderr or got.stdout).strip() else ''}"))
            self.dir = os.path.join(self.work, f"{kind}-rebuild")
            shutil.copytree(base, self.dir)
            self.damage(kind)
            got = self.cli(["index", "rebuild", "--yes", "--dir", self.dir])
            self.losses["tracebacks"] += "Traceback" in got.stderr
            line = (got.stderr or got.stdout).strip().splitlines()[-1][:90] if (got.stderr or got.stdout).strip() else ""
            if got.returncode == 0:
                verified = self.cli(["index", "verify", "--dir", self.dir]).returncode == 0
                self.losses["rebuild claims"] += not verified
                self.rows.append((kind, "rebuild", f"exit 0, verifies: {'yes' if verified else 'NO'}"))
                self.crawl_on(kind + ", rebuilt")
            else:
                self.rows.append((kind, "rebuild", f"exit {got.returncode}: {line}"))
        return self.report()

    def crawl_on(self, label: str) -> None:
        since = len(self.drop_lines())
        got = self.full_crawl(os.path.join(self.work, f"{label.replace(', ', '-')}.log"))
        stopped = "dedup_index_damaged" in got["log"]
        errors = [line for line in got["log"].splitlines() if " ERROR: " in line]
        self.losses["tracebacks"] += "Traceback" in got["log"] or "Traceback" in got.get("stderr", "")
        if stopped:
            outcome = f"stopped at start: {errors[0].split(' ERROR: ', 1)[1][:80] if errors else '(no ERROR line)'}"
        else:
            never, hostile = self.accounted(got, since)
            self.losses["lost requests"] += never
            self.losses["hostile pages lost"] += hostile
            if label in ("empty", "missing") and not errors:
                self.losses["silent start-overs"] += 1
            store_errors = got["log"].count("dedup store failed")
            outcome = (f"ran: {len(got['stored'])} stored, {len(self.drop_lines()) - since} drop lines, "
                       f"{never} lost{', a store-error WARNING' if store_errors else ''}")
        self.rows.append((label, "crawl", outcome))

    def snapshot(self) -> tuple:
        return tuple(sorted((n, os.path.getsize(os.path.join(self.dir, n))) for n in os.listdir(self.dir)
                            if n.startswith("data.mdb")))

    def check_printed(self, where: str) -> None:
        got = self.cli(["restore", os.path.join(where, "droplog.jsonl"), "--all"])
        shown = self.cli(["inspect", os.path.join(where, "droplog.jsonl")])
        self.losses["raw C1/bidi printed"] += bool(UNSAFE & set(got.stdout + got.stderr + shown.stdout))

    def report(self) -> int:
        print(f"{'damage':<16} {'run':<9} outcome")
        for kind, what, outcome in self.rows:
            print(f"{kind:<16} {what:<9} {outcome}")
        print()
        for name, n in self.losses.items():
            print(f"{name:<40} {n:>5}")
        bad = sum(self.losses.values())
        print("\nall checks hold" if not bad else f"\n{bad} problems")
        return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", type=int, default=40, help="real pages, each under 3 URLs")
    ap.add_argument("--keep", metavar="DIR", help="work in DIR and keep it")
    args = ap.parse_args(argv)
    work = args.keep or tempfile.mkdtemp(prefix="damage-")
    os.makedirs(work, exist_ok=True)
    harness = Damage(work, args.groups)
    try:
        return harness.run()
    finally:
        harness.close()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
