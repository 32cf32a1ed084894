"""The settings registry: DedupConfig, defaults.py and docs/settings.md all come from it."""

import importlib.util
import subprocess
import sys
from dataclasses import MISSING, fields
from pathlib import Path

import pytest

from crawler_dedup import defaults
from crawler_dedup.config import (
    BOOL,
    CHOICE,
    FLOAT,
    INT,
    SETTINGS,
    DedupConfig,
    Setting,
)
from crawler_dedup.exceptions import ConfigError

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "settings_table.py"
ANNOTATION = {"bool": "bool", "int": "int", "float": "float", "choice": "str", "field": "str", "backend": "str", "verifier": "str", "url": "str", "text": "str",
              "path": "str | None", "regexes": "tuple", "workers": "int | str", "auto_bool": "bool | str",
              "auto_float": "float | str"}


def _script():
    spec = importlib.util.spec_from_file_location("settings_table", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dataclass_fields_are_the_registrys_settings_with_its_defaults():
    config_fields = {f.name: f for f in fields(DedupConfig) if f.name != "extra"}
    assert sorted(config_fields) == sorted(s.attr for s in SETTINGS)
    assert len({s.name for s in SETTINGS}) == len(SETTINGS)
    for s in SETTINGS:
        f = config_fields[s.attr]
        assert f.default is not MISSING, s.name
        expected = s.check(s.default)
        assert (f.default, type(f.default)) == (expected, type(expected)), s.name
        assert f.type == ANNOTATION[s.kind], s.name
    assert DedupConfig() == DedupConfig.from_settings({})


def test_defaults_module_lists_every_setting_with_the_registrys_default():
    assert sorted(n for n in vars(defaults) if n.startswith("DEDUP_")) == sorted(s.name for s in SETTINGS)
    for s in SETTINGS:
        assert getattr(defaults, s.name) == s.default, s.name
    from crawler_dedup.defaults import DEDUP_K  # noqa: F401  (users import the names)
    with pytest.raises(AttributeError):
        defaults.DEDUP_NO_SUCH  # noqa: B018


def test_docs_settings_table_is_the_registrys():
    """A setting cannot be added (or its default changed) without docs/settings.md saying so."""
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert _script().with_table(page) == page, "run: python scripts/settings_table.py --write"


def test_the_script_prints_one_table_row_a_setting():
    out = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, check=True).stdout
    rows = out.splitlines()
    assert rows[0] == "| setting | default | meaning |" and len(rows) == 2 + len(SETTINGS)
    assert "| `DEDUP_K` | `3` | simhash bits" in out and '| `DEDUP_BACKEND` | `"lmdb"` |' in out
    assert "| `DEDUP_DIR` | `.scrapy/dedup` |" in out


def test_the_table_needs_its_markers():
    with pytest.raises(SystemExit, match="settings-table:start"):
        _script().with_table("## Settings\n\nno markers\n")


# each message as it was before the registry: tests and users match on them
@pytest.mark.parametrize("name,value,message", [
    ("DEDUP_ENABLED", "maybe", "DEDUP_ENABLED='maybe' is not allowed: a boolean (True/False, 1/0)"),
    ("DEDUP_ALLOW", 5, "DEDUP_ALLOW=5 is not allowed: a list of regular expressions"),
    ("DEDUP_BACKEND", "no such",
     "DEDUP_BACKEND='no such' is not allowed: one of lmdb, memory, redis or a dotted path to a store class"),
    ("DEDUP_COMMIT_BATCH", 0, "DEDUP_COMMIT_BATCH=0 is not allowed: an integer from 1 to 10000"),
    ("DEDUP_COMMIT_DELAY", 2, "DEDUP_COMMIT_DELAY=2 is not allowed: a number from 0.0 to 1.0"),
    ("DEDUP_CONCEPTUAL", "on", "DEDUP_CONCEPTUAL='on' is not allowed: one of off, flag, drop"),
    ("DEDUP_DIR", "", "DEDUP_DIR='' is not allowed: a file-system path"),
    ("DEDUP_EXPECTED_PAGES", 0, "DEDUP_EXPECTED_PAGES=0 is not allowed: an integer >= 1"),
    ("DEDUP_ITEM_URL_FIELD", "", "DEDUP_ITEM_URL_FIELD='' is not allowed: a non-empty item field name"),
    ("DEDUP_K", 9, "DEDUP_K=9 is not allowed: an integer from 0 to 8"),
    ("DEDUP_LMDB_MAP_SIZE", 1024, "DEDUP_LMDB_MAP_SIZE=1024 is not allowed: an integer >= 1048576"),
    ("DEDUP_LOGSTATS_INTERVAL", -1, "DEDUP_LOGSTATS_INTERVAL=-1 is not allowed: a number from 0.0 to 86400.0"),
    ("DEDUP_LSI_DIMS", 1, "DEDUP_LSI_DIMS=1 is not allowed: an integer from 2 to 512"),
    ("DEDUP_LSI_TRAIN", 9, "DEDUP_LSI_TRAIN=9 is not allowed: an integer >= 10"),
    ("DEDUP_LSI_TRAIN", 20, "DEDUP_LSI_TRAIN=20 is not allowed: at least DEDUP_LSI_DIMS (64) pages"),
    ("DEDUP_SHINGLE", 17, "DEDUP_SHINGLE=17 is not allowed: an integer from 1 to 16"),
    ("DEDUP_VERIFIER", "lcs", "DEDUP_VERIFIER='lcs' is not allowed: one of resemblance, qgram, swlr or a dotted path to a Verifier class"),
    ("DEDUP_WINDOW", -1, "DEDUP_WINDOW=-1 is not allowed: an integer >= 0"),
    ("DEDUP_WORKERS", 65, "DEDUP_WORKERS=65 is not allowed: auto (one a core) or an integer from 0 to 64"),
    ("DEDUP_WORKERS", "many", "DEDUP_WORKERS='many' is not allowed: auto (one a core) or an integer from 0 to 64"),
    ("DEDUP_TRESHOLD", 0.9, "DEDUP_TRESHOLD is not a known setting: did you mean DEDUP_THRESHOLD?"),
    ("DEDUP_XYZZY_QQ", 1, "DEDUP_XYZZY_QQ is not a known setting: see docs/settings.md for the settings there are"),
])
def test_bad_values_keep_their_messages(name, value, message):
    with pytest.raises(ConfigError) as err:
        DedupConfig.from_settings({name: value})
    assert str(err.value) == message


@pytest.mark.parametrize("keyword,message", [
    ("treshold", "treshold is not a known setting: did you mean threshold?"),
    ("xyzzy_qq", "xyzzy_qq is not a known setting: see docs/settings.md for the settings there are"),
])
def test_unknown_keywords_keep_their_messages(keyword, message):
    with pytest.raises(ConfigError) as err:
        DedupConfig.from_settings({}, **{keyword: 0.9})
    assert str(err.value) == message


def _bad(s: Setting):
    if s.kind in (INT, FLOAT):
        return s.lo - 1
    return {BOOL: "maybe", "auto_bool": "maybe", CHOICE: "nosuch"}.get(s.kind, "")


@pytest.mark.parametrize("setting", [s for s in SETTINGS if s.kind not in ("regexes",)], ids=lambda s: s.name)
def test_every_setting_checks_its_values_by_its_declaration(setting):
    """A new setting is checked as soon as it is declared: a bad value names it and the value."""
    with pytest.raises(ConfigError) as err:
        DedupConfig.from_settings({setting.name: _bad(setting)})
    assert err.value.setting == setting.name and str(err.value).startswith(f"{setting.name}={_bad(setting)!r} ")
    if setting.choices:
        assert ", ".join(setting.choices) in err.value.allowed
    if setting.kind in (INT, FLOAT) and setting.hi is not None:
        with pytest.raises(ConfigError, match=setting.name):
            DedupConfig.from_settings({setting.name: setting.hi + 1})


@pytest.mark.parametrize("given", ["129600", "129600.0", " 129600 ", "1.296e5", 129600.0])
def test_an_integer_setting_takes_a_whole_number_written_as_a_float(given):
    """`-s DEDUP_WINDOW=129600.0` on the command line, as settings.py's `1.5 * 86400` is."""
    assert DedupConfig.from_settings({"DEDUP_WINDOW": given}).window == 129600


@pytest.mark.parametrize("given", ["129600.5", "1.5e-1", "inf", "nan", "12 h", True])
def test_an_integer_setting_refuses_a_fraction_or_text(given):
    with pytest.raises(ConfigError, match="DEDUP_WINDOW=.* an integer"):
        DedupConfig.from_settings({"DEDUP_WINDOW": given})


def test_a_declaration_without_its_bounds_fails_at_import():
    with pytest.raises(ValueError, match="DEDUP_X"):
        Setting("DEDUP_X", INT, 1, doc="no lower bound")
    with pytest.raises(ValueError, match="DEDUP_X"):
        Setting("DEDUP_X", CHOICE, "a", doc="no choices")
    with pytest.raises(ValueError, match="one Markdown table cell"):
        Setting("DEDUP_X", BOOL, True, doc="a | b")


@pytest.mark.parametrize("setting", ["DEDUP_TRESHOLD=0.9", "DEDUP_DIR={tmp}/a-file/index", "DEDUP_WORKERS=many"])
def test_an_error_that_stops_a_crawl_at_start_is_one_line_without_a_traceback(tmp_path, setting):
    from .conftest import scrapy_crawl, write_urls

    (tmp_path / "a-file").write_text("not a folder")
    write_urls(tmp_path / "urls.txt", ["http://127.0.0.1:9/nothing-here"])
    proc = scrapy_crawl("-a", f"urls={tmp_path / 'urls.txt'}", "-s", setting.format(tmp=tmp_path),
                        "-s", f"DEDUP_DIR={tmp_path / 'index'}" if "DEDUP_DIR" not in setting else "LOG_LEVEL=INFO")
    errors = [line for line in proc.stderr.splitlines() if "ERROR" in line]
    assert proc.returncode != 0
    assert len(errors) == 1 and "crawler-dedup cannot start" in errors[0], proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "never retrieved" not in proc.stderr, proc.stderr[-3000:]
