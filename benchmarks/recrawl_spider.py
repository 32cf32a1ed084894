"""The `pages` spider with requests that are not leaves (as a spider that follows links sends
them): with DEDUP_CONDITIONAL_COPY the index keeps a copy of each page for its 304
(benchmarks/recrawl.py's `copies` row). `scrapy runspider benchmarks/recrawl_spider.py -a urls=FILE`."""

import scrapy

from crawler_dedup.spider import PagesSpider


class NotLeavesSpider(PagesSpider):
    name = "pages-not-leaves"

    async def start(self):
        for url in self.start_list:
            yield scrapy.Request(url)
