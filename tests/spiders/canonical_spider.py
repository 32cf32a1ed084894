"""A spider for the canonical-rule crawl test: the pages of -a urls=FILE in file order, and each
page_superseded signal written as a JSON line to -a signals=FILE (and, with -a items=1, each item
that went through the pipelines, so the order of the two shows)."""

import json

import scrapy
from scrapy import signals as scrapy_signals

from crawler_dedup.signals import page_superseded


class CanonicalSpider(scrapy.Spider):
    name = "canonical"

    def __init__(self, urls=None, signals=None, items="0", **kw):
        super().__init__(**kw)
        self.url_list = [u.strip() for u in open(urls, encoding="utf-8") if u.strip()]
        self.signal_file = signals
        self.log_items = items == "1"

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.superseded, signal=page_superseded)
        crawler.signals.connect(spider.scraped, signal=scrapy_signals.item_scraped)
        return spider

    def scraped(self, item):
        if self.log_items:
            with open(self.signal_file, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"item": item["url"]}) + "\n")

    def superseded(self, url, canonical_url, record):
        with open(self.signal_file, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"url": url, "canonical_url": canonical_url, "reason": record["reason"]}) + "\n")

    async def start(self):
        for i, url in enumerate(self.url_list):
            yield scrapy.Request(url, priority=-i)

    def parse(self, response):
        yield {"url": response.url}
