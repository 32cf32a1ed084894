"""A spider that passes each response's meta on to the requests it makes (a common pattern to
carry context down a crawl): the pages of -a start=URL and the links on them, one level deep."""

import scrapy


class MetaCopySpider(scrapy.Spider):
    name = "metacopy"

    def __init__(self, start=None, **kw):
        super().__init__(**kw)
        self.start_url = start

    async def start(self):
        yield scrapy.Request(self.start_url, meta={"depth_label": "hub"})

    def parse(self, response):
        yield {"url": response.url}
        if response.meta.get("depth_label") == "hub":
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, meta={**response.meta, "depth_label": "article"})
