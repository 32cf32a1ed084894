from crawler_dedup.spider import PagesSpider as _PagesSpider


class PagesSpider(_PagesSpider):
    """`scrapy crawl pages -a urls=FILE [-a follow=1]` (see crawler_dedup/spider.py)."""

    name = "pages"
