"""The generic `pages` spider: crawl the URLs of a file, optionally following same-site links.

`scrapy crawl pages -a urls=FILE [-a follow=1]`. It yields one small item per page kept; the
pages themselves go wherever the project's pipelines send them.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import scrapy
from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor


def read_url_file(path: str) -> list[str]:
    """One URL per line; blank lines and `#` comments are ignored."""
    urls = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.split("#", 1)[0].strip() if line.lstrip().startswith("#") else line.strip()
            if line:
                urls.append(line)
    return urls


class PagesSpider(scrapy.Spider):
    name = "pages"
    # first in, first out: requests go out in file order with one priority (a priority each made
    # Scrapy keep a queue each and count them all at every request: a 100,000-URL file crawled at
    # 30 pages a second with 1 GB of queues)
    custom_settings = {"SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
                       "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue"}

    def __init__(self, urls: str | None = None, follow: str | int = 0, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not urls:
            raise ValueError("the pages spider needs -a urls=FILE (one URL per line)")
        try:
            self.start_list = read_url_file(urls)
        except OSError as exc:
            raise ValueError(f"-a urls={urls}: cannot read the URL file ({exc.strerror})") from None
        bad = [u for u in self.start_list if urlsplit(u).scheme not in ("http", "https")]
        if bad:
            raise ValueError(f"-a urls={urls}: not an http(s) URL: {bad[0]!r}")
        self.follow = str(follow).lower() in ("1", "true", "yes", "on")
        self.domains = sorted({urlsplit(u).hostname or "" for u in self.start_list} - {""})
        self.links = LinkExtractor() if self.follow else None

    async def start(self):
        # in file order (FIFO). Which of two copies is kept depends on which response is checked
        # first, so only CONCURRENT_REQUESTS=1 makes that exact. With follow=1 the start pages
        # are hubs: never dropped, so a re-crawl with the same index still reaches the pages they
        # link to; but indexed, so their copies are caught.
        for url in self.start_list:
            # without follow=1 nothing on a page is followed: a leaf, whose 304 needs no kept copy
            yield scrapy.Request(url, meta={"dedup_never_drop": True} if self.follow else {"dedup_leaf": True})

    def parse(self, response):
        yield {
            "url": response.url,
            "status": response.status,
            "title": response.css("title::text").get(default="").strip() if isinstance(response, HtmlResponse) else None,
            "fingerprint": (f"{response.meta['dedup_fingerprint']:016x}"
                            if response.meta.get("dedup_fingerprint") is not None else None),
        }
        if self.links is not None and isinstance(response, HtmlResponse):
            for link in self.links.extract_links(response):
                if self._in_scope(link.url):
                    yield response.follow(link.url, callback=self.parse)

    def _in_scope(self, url: str) -> bool:
        # by host name, not netloc: LinkExtractor(allow_domains=) compares host:port and so
        # rejects every link of a site served on a port
        host = urlsplit(url).hostname or ""
        return any(host == d or host.endswith("." + d) for d in self.domains)
