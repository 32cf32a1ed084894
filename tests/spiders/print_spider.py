"""A spider for the kill test: prints every page that reached parse(), as soon as it does."""

import sys

import scrapy


class PrintSpider(scrapy.Spider):
    name = "print"

    def __init__(self, urls=None, **kw):
        super().__init__(**kw)
        self.urls = [u.strip() for u in open(urls, encoding="utf-8") if u.strip()]

    async def start(self):
        for url in self.urls:
            yield scrapy.Request(url)

    def parse(self, response):
        print("PARSED", response.url, file=sys.stdout, flush=True)
