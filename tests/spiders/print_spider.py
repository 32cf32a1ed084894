"""A spider for the kill test: prints every page that reached parse(), as soon as it does."""

import sys

from crawler_dedup.spider import PagesSpider


class PrintSpider(PagesSpider):  # the pages spider's URL file and order
    name = "print"

    def parse(self, response):
        print("PARSED", response.url, file=sys.stdout, flush=True)
