"""Crawls SIGKILLed at random moments over one DEDUP_DIR and restarted (benchmarks/killtest.py,
fewer kills than its default 50): the index opens and verifies after each kill, nothing stored is
missing from it, no drop line names a page it lacks, no content is kept twice, and after a last
full crawl every URL was stored or dropped with a line."""

import os
import subprocess
import sys

from tests.conftest import ROOT


def test_random_kills_lose_nothing(tmp_path):
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "killtest.py"), "--kills", "6",
                           "--groups", "20", "--sample", "30", "--seed", "3", "--keep", str(tmp_path / "work")],
                          capture_output=True, text=True, timeout=900)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr[-3000:]
    assert "all checks hold" in out
    rows = {line[:52].strip(): line[52:].strip() for line in out.splitlines() if len(line) > 52}
    assert rows["kills (SIGKILL of the crawler)"] != "0"  # a run may finish before its kill, not all of them
    for row in ("index does not open", "index verify fails", "workers left running", "stored, not in the index",
                "drop line, kept page not in the index", "one group kept twice",
                "URLs never stored nor dropped with a line", "kept pages never stored"):
        assert rows[row] == "0", (row, out)
    assert rows["torn last drop-log line reported by inspect"] == "yes"
    assert int(rows["kept pages in the index at the end"]) >= 15  # 20 pages, a few may be copies of each other
