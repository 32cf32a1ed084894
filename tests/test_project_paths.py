"""Where a crawl started anywhere in a user's Scrapy project finds its index and allow file, and
how it tells a scheduled job it could not start (a new user's walk: a crawl from a subfolder
silently began a new empty index; an index that could not be opened exited 0)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from .conftest import ROOT, make_site, write_urls


def _project(tmp_path):
    """A Scrapy project of the user's own: scrapy.cfg, its settings and spider, a subfolder."""
    proj = tmp_path / "proj"
    proj.mkdir()
    shutil.copy(f"{ROOT}/scrapy.cfg", proj / "scrapy.cfg")
    shutil.copytree(f"{ROOT}/settings", proj / "settings")
    shutil.copytree(f"{ROOT}/spiders", proj / "spiders")
    (proj / "sub").mkdir()
    return proj


def _crawl(cwd, *args):
    return subprocess.run([sys.executable, "-m", "scrapy", "crawl", "pages", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=180)


def _site(tmp_path, serve, articles):
    root = make_site(tmp_path / "site", {"a.html": articles[0][0], "b.html": articles[0][0], "c.html": articles[1][0]})
    base = serve(root).base_url
    return base, write_urls(tmp_path / "urls.txt", [f"{base}/a.html", f"{base}/b.html", f"{base}/c.html"])


def _stored(path) -> list[str]:
    return sorted(json.loads(line)["url"].rsplit("/", 1)[1] for line in path.read_text().splitlines() if line.strip())


def test_a_relative_dedup_dir_is_in_the_projects_data_folder_wherever_the_crawl_starts(tmp_path, serve, articles):
    proj = _project(tmp_path)
    base, urls = _site(tmp_path, serve, articles)
    first = _crawl(proj / "sub", "-a", f"urls={urls}", "-s", "DEDUP_DIR=myidx", "-O", str(tmp_path / "one.jsonl"))
    assert first.returncode == 0, first.stderr[-3000:]
    assert (proj / ".scrapy" / "myidx" / "data.mdb").is_file() and not (proj / "sub" / "myidx").exists()
    kept = _stored(tmp_path / "one.jsonl")
    assert len(kept) == 2 and "c.html" in kept  # (a or b: the crawl's order decides)
    # from the project's root, with b's copy under a new URL: the same index drops it
    write_urls(tmp_path / "urls.txt", [f"{base}/b.html?x=1"])
    second = _crawl(proj, "-a", f"urls={urls}", "-s", "DEDUP_DIR=myidx", "-O", str(tmp_path / "two.jsonl"))
    assert second.returncode == 0, second.stderr[-3000:]
    assert _stored(tmp_path / "two.jsonl") == [] and not (proj / "myidx").exists()
    # the tools find it under the same name from the project's root
    cli = subprocess.run([sys.executable, "-m", "crawler_dedup", "inspect", "--dir", "myidx"], cwd=proj,
                         capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0 and "b.html?x=1" in cli.stdout, cli.stdout + cli.stderr


def test_a_relative_allow_file_beside_scrapy_cfg_is_found_from_a_subfolder(tmp_path, serve, articles):
    proj = _project(tmp_path)
    base, urls = _site(tmp_path, serve, articles)
    (proj / "allow.txt").write_text(f"# URLs never dropped\n^{base}/b\\.html$\n")
    proc = _crawl(proj / "sub", "-a", f"urls={urls}", "-s", "DEDUP_ALLOW_FILE=allow.txt",
                  "-s", "DEDUP_DIR=idx", "-O", str(tmp_path / "out.jsonl"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _stored(tmp_path / "out.jsonl") == ["a.html", "b.html", "c.html"]  # b is a's copy, but allowed
    missing = _crawl(proj / "sub", "-a", f"urls={urls}", "-s", "DEDUP_ALLOW_FILE=nowhere.txt", "-s", "DEDUP_DIR=idx")
    assert missing.returncode == 1 and "DEDUP_ALLOW_FILE" in missing.stderr and "Traceback" not in missing.stderr
    assert str(proj / ".scrapy" / "nowhere.txt") in missing.stderr


def test_a_misspelt_prefix_and_an_index_that_cannot_be_opened_exit_non_zero(tmp_path, serve, articles):
    proj = _project(tmp_path)
    _, urls = _site(tmp_path, serve, articles)
    typo = _crawl(proj, "-a", f"urls={urls}", "-s", "DEDUPE_DIR=idx")
    assert typo.returncode == 1 and "did you mean DEDUP_DIR" in typo.stderr, typo.stderr[-2000:]
    made = _crawl(proj, "-a", f"urls={urls}", "-s", "DEDUP_DIR=idx", "-s", "DEDUP_K=3")
    assert made.returncode == 0, made.stderr[-2000:]
    other_k = _crawl(proj, "-a", f"urls={urls}", "-s", "DEDUP_DIR=idx", "-s", "DEDUP_K=4")
    assert other_k.returncode == 1 and "DEDUP_K=3" in other_k.stderr and "Traceback" not in other_k.stderr
    # a scan's --out is no index: named as such, and the crawl does not start
    (tmp_path / "scan-out" / "index").mkdir(parents=True)
    (tmp_path / "scan-out" / "summary.json").write_text("{}")
    scan_out = _crawl(proj, "-a", f"urls={urls}", "-s", f"DEDUP_DIR={tmp_path / 'scan-out'}",
                      "-O", str(tmp_path / "s.jsonl"))
    assert scan_out.returncode == 1 and "its index is" in scan_out.stderr, scan_out.stderr[-2000:]
    assert not (tmp_path / "scan-out" / "data.mdb").exists()
