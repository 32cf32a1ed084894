"""A spider for the conditional-request tests: the pages of -a urls=FILE, each request with the
meta of -a meta=JSON (e.g. {"dedup_conditional": false}) and the headers of -a headers=JSON, following every link on the site with
-a follow=1; one item a parsed page, with its status and flags (a 304 handed on as its kept copy
carries `dedup_copy`)."""

import json
from urllib.parse import urlsplit

import scrapy


class ConditionalSpider(scrapy.Spider):
    name = "conditional"

    def __init__(self, urls=None, meta="{}", follow="0", headers="{}", **kw):
        super().__init__(**kw)
        self.url_list = [u.strip() for u in open(urls, encoding="utf-8") if u.strip()]
        self.meta, self.headers = json.loads(meta), json.loads(headers)
        self.follow = follow == "1"

    async def start(self):
        for url in self.url_list:
            yield scrapy.Request(url, meta=dict(self.meta), headers=self.headers)

    def parse(self, response):
        yield {"url": response.url, "status": response.status, "flags": list(response.flags)}
        if self.follow:
            host = urlsplit(response.url).netloc
            for href in response.css("a::attr(href)").getall():
                url = response.urljoin(href)
                if urlsplit(url).netloc == host:
                    yield scrapy.Request(url, meta=dict(self.meta))
