"""`crawler-dedup doctor` in a project made by `scrapy startproject`, as a new user meets it: the
ADDONS = {} trap, then a real crawl, then settings that clash with the index."""

import json
import subprocess
import sys

import pytest

from .conftest import cli, make_site

SPIDER = '''
import scrapy


class Site(scrapy.Spider):
    name = "site"

    def __init__(self, urls="", **kw):
        super().__init__(**kw)
        self.start_urls = urls.split(",")

    def parse(self, response):
        yield {"url": response.url}
'''


@pytest.fixture
def project(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "scrapy", "startproject", "shop", str(tmp_path / "shop")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return tmp_path / "shop"


def doctor(project, *args):
    proc = cli("doctor", "--json", *args, cwd=project)
    assert proc.returncode in (0, 1), proc.stderr
    got = json.loads(proc.stdout)
    assert got["ok"] == (proc.returncode == 0)
    return got, {c["check"]: c for c in got["checks"]}


def test_doctor_finds_the_startproject_trap_then_a_crawls_index_and_drop_log(project, serve, articles):
    settings = project / "shop" / "settings.py"
    text = settings.read_text(encoding="utf-8")
    assert "\nADDONS = {}" in text  # what startproject writes: a line put above it is overridden
    settings.write_text('ADDONS = {"crawler_dedup.addon.DedupAddon": 0}\n' + text, encoding="utf-8")
    got, checks = doctor(project)
    assert not got["ok"] and checks["add-on enabled"]["status"] == "fail"
    assert "line 1 enables it, but line" in checks["add-on enabled"]["detail"]
    plain = cli("doctor", cwd=project)  # the text form names the same finding
    assert plain.returncode == 1 and "assigns ADDONS again" in plain.stdout and "\x1b[" not in plain.stdout

    settings.write_text(text.replace("\nADDONS = {}", '\nADDONS = {"crawler_dedup.addon.DedupAddon": 0}'),
                        encoding="utf-8")
    got, checks = doctor(project)
    assert got["ok"], got
    assert checks["add-on enabled"]["status"] == "ok"
    assert checks["conditional requests"]["detail"].startswith("on:")
    cached, checks = doctor(project, "-s", "DEDUP_CONDITIONAL_COPY=False")
    assert "only requests marked dedup_leaf" in checks["conditional requests"]["detail"]
    assert got["where"]["index"] == str(project / ".scrapy" / "dedup")
    assert "not made yet" in checks["index"]["detail"] and "none yet" in checks["drop log"]["detail"]

    html, _ = articles[0]
    site = make_site(project.parent / "site", {"a.html": html, "b.html": html, "c.html": articles[1][0]})
    server = serve(site)
    (project / "shop" / "spiders" / "site.py").write_text(SPIDER, encoding="utf-8")
    urls = ",".join(f"{server.base_url}/{n}" for n in ("a.html", "b.html", "c.html"))
    crawl = subprocess.run([sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"urls={urls}", "-s",
                            "CONCURRENT_REQUESTS=1"], cwd=project, capture_output=True, text=True, timeout=180)
    assert crawl.returncode == 0, crawl.stderr[-2000:]
    got, checks = doctor(project)
    assert got["ok"], got
    assert "2 pages kept" in checks["index"]["detail"]
    assert "1 drop," in checks["drop log"]["detail"]
    assert got["where"]["droplog"] == str(project / ".scrapy" / "dedup" / "droplog.jsonl")

    # every command finds the crawl's index and drop log from the project's settings, with no options
    assert json.loads(cli("index", "stats", "--json", cwd=project).stdout)["pages"] == 2
    assert json.loads(cli("inspect", "--json", cwd=project).stdout)["matched"] == 1
    assert json.loads(cli("index", "verify", "--json", cwd=project).stdout)["whole"] is True

    got, checks = doctor(project, "-s", "DEDUP_K=4")  # settings the index was not built with
    assert not got["ok"] and "DEDUP_K: index 3, settings 4" in checks["index vs settings"]["detail"]
    got, checks = doctor(project, "-s", "DEDUP_DRY_RUN=true")
    assert got["ok"] and checks["DEDUP_DRY_RUN"]["status"] == "warn"


def test_doctor_outside_a_project_says_so(tmp_path):
    got, checks = doctor(tmp_path)
    assert not got["ok"] and "no scrapy.cfg" in checks["Scrapy project"]["detail"]
    assert checks["libraries"]["status"] == "ok"


def test_doctor_names_a_setting_that_is_not_allowed(project):
    got, checks = doctor(project, "-s", "DEDUP_THRESHOLD=2")
    assert not got["ok"] and "DEDUP_THRESHOLD" in checks["DEDUP_ settings"]["detail"]


def test_every_command_checks_the_settings_and_reading_creates_nothing(project):
    for args in (["inspect"], ["restore", "--all"], ["index", "stats"], ["report", "-o", "r.html"]):
        proc = cli(*args, "-s", "DEDUP_THRESHOLD=abc", cwd=project)
        assert proc.returncode == 2 and "DEDUP_THRESHOLD='abc' is not allowed" in proc.stderr, (args, proc.stderr)
        proc = cli(*args, "-s", "DEDUP_FOO=1", cwd=project)
        assert proc.returncode == 2 and "DEDUP_FOO is not a known setting" in proc.stderr, (args, proc.stderr)
    assert not (project / ".scrapy").exists()  # looking for the default index made no folder
    assert not (project / "r.html").exists()
    settings = project / "shop" / "settings.py"
    settings.write_text(settings.read_text(encoding="utf-8") + "\nDEDUP_THRESHLD = 0.6\n", encoding="utf-8")
    proc = cli("inspect", cwd=project)
    assert proc.returncode == 2 and "settings.py: DEDUP_THRESHLD is not a known setting: did you mean DEDUP_THRESHOLD?" \
        in proc.stderr
    got, checks = doctor(project)  # a finding, not a stop
    assert not got["ok"] and "did you mean DEDUP_THRESHOLD" in checks["DEDUP_ settings"]["detail"]


def test_doctor_finds_a_relative_index_path_in_the_projects_data_folder_from_any_folder_of_it(project):
    """As a crawl resolves it (scrapy/opening.in_data_dir, as HTTPCACHE_DIR): from a subfolder the
    same index, and no warning (doctor used to say a subfolder made a second index)."""
    want = str(project / ".scrapy" / "data" / "idx")
    for where in (project / "shop", project):
        got, checks = doctor(where, "-s", "DEDUP_DIR=data/idx")
        assert "DEDUP_DIR" not in checks, checks["DEDUP_DIR"]
        assert checks["index"]["detail"].startswith(want + ":"), (where, checks["index"])
        assert checks["drop log"]["detail"].startswith(want + "/droplog.jsonl"), (where, checks["drop log"])


def test_doctor_says_when_the_http_cache_keeps_conditional_requests_off(project):
    settings = project / "shop" / "settings.py"
    text = settings.read_text(encoding="utf-8").replace("\nADDONS = {}", '\nADDONS = {"crawler_dedup.addon.DedupAddon": 0}')
    settings.write_text(text + "\nHTTPCACHE_ENABLED = True\n", encoding="utf-8")
    got, checks = doctor(project)
    assert got["ok"] and checks["conditional requests"]["status"] == "warn"
    assert "HTTPCACHE_ENABLED" in checks["conditional requests"]["detail"]
    settings.write_text(text + "\nHTTPCACHE_ENABLED = False\n", encoding="utf-8")
    got, checks = doctor(project)
    assert checks["conditional requests"]["status"] == "ok"


def test_doctor_warns_of_a_setting_the_backend_never_reads(project):
    got, checks = doctor(project, "-s", "DEDUP_REDIS_URL=redis://127.0.0.1:6379/0")
    assert checks["DEDUP_REDIS_URL"]["status"] == "warn" and "never reads it" in checks["DEDUP_REDIS_URL"]["detail"]


def test_doctor_asks_for_redis_py_when_the_command_line_sets_the_redis_backend(tmp_path):
    """-s DEDUP_BACKEND=redis counts as settings.py's would (it was read from settings.py only)."""
    _, checks = doctor(tmp_path, "-s", "DEDUP_BACKEND=redis")
    assert "redis " in checks["libraries"]["detail"]
    _, checks = doctor(tmp_path)
    assert "redis " not in checks["libraries"]["detail"]
