"""A count of one says its noun in the singular: "1 page checked", not "1 pages checked"."""

import logging
from types import SimpleNamespace

from crawler_dedup.cli.out import plural
from crawler_dedup.cli.scan import print_summary
from crawler_dedup.scrapy import stats as keys
from crawler_dedup.scrapy.recording import Recorder


def test_plural():
    assert [plural(n, "page") for n in (0, 1, 2)] == ["0 pages", "1 page", "2 pages"]
    assert plural(1, "copy", "copies") == "1 copy" and plural(3, "copy", "copies") == "3 copies"


class _Stats:
    def __init__(self, values):
        self.values = values

    def get_value(self, key, default=None):
        return self.values.get(key, default)

    def get_stats(self):
        return dict(self.values)


def _recorder(values):
    config = SimpleNamespace(dry_run=False, droplog="/x/droplog.jsonl")
    return Recorder(SimpleNamespace(stats=_Stats(values)), config)


def test_the_crawls_lines_say_one_page(caplog):
    caplog.set_level(logging.INFO, logger="crawler_dedup.scrapy.recording")
    one = {keys.CHECKED: 1, keys.KEPT: 1, keys.REVISITS: 1, keys.REVISITS_COPY: 1, keys.CONDITIONAL: 1}
    _recorder(one).closing_line()
    _recorder(one).periodic_line(60.0, 0)
    _recorder({keys.CHECKED: 2, keys.KEPT: 2, keys.REVISITS: 2, keys.REVISITS_COPY: 2, keys.CONDITIONAL: 2}).closing_line()
    closing, periodic, two = (r.getMessage() for r in caplog.records)
    assert closing.startswith("Dedup: 1 page checked, 1 kept, 0 dropped (0.0%)")
    assert "; 1 revisit: 0 unchanged, 0 updated, 1 now a copy of another URL's page" in closing
    assert "; 1 conditional request, 0 answered 304" in closing
    assert periodic.startswith("Dedup: checked 1 page (1/min), dropped 0")
    assert two.startswith("Dedup: 2 pages checked") and "2 revisits: " in two and "2 now copies of" in two
    assert "2 conditional requests" in two


def test_the_scan_summary_says_one_page(capsys):
    summary = {"records": 1, "pages": 1, "kept": 1, "dropped": 0, "policy": ["longest"], "by_reason": {},
               "unchecked": {}, "passed": {}, "revisits": {"kept": 0, "dropped": 0, "no_original": 0},
               "inputs": [{"input": "a.jsonl", "pages": 1, "kept": 1, "kept_output": "k", "dropped": 0,
                           "dropped_output": "d"}], "droplog": "droplog.jsonl", "clusters": "clusters.jsonl"}
    print_summary(summary)
    out = capsys.readouterr().out
    assert out.startswith("1 record, 1 page: 1 kept, 0 dropped") and "  a.jsonl: 1 page, 1 kept" in out
