"""A spider for the pipeline tests: one item per line of -a texts=FILE (JSON: url, text or html),
plus the pages of -a urls=FILE, some fetched with meta dont_dedup."""

import json

import scrapy


class ItemsSpider(scrapy.Spider):
    name = "items"

    def __init__(self, texts=None, urls=None, dont_dedup="", **kw):
        super().__init__(**kw)
        self.texts = [json.loads(line) for line in open(texts, encoding="utf-8")] if texts else []
        self.urls = [u.strip() for u in open(urls, encoding="utf-8") if u.strip()] if urls else []
        self.dont = set(filter(None, dont_dedup.split(",")))

    async def start(self):
        for record in self.texts:
            yield record  # items straight from start(): the pipeline sees them in order
        for i, url in enumerate(self.urls):
            yield scrapy.Request(url, priority=-i, meta={"dont_dedup": url.rsplit("/", 1)[-1] in self.dont})

    def parse(self, response):
        yield {"url": response.url, "html": response.text}
