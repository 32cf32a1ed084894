"""The Scrapy shell: how a crawl's pages reach the core and what is recorded of each decision.

`addon.py` puts the parts in place. `middleware.py` (a response, before the spider parses it)
and `pipeline.py` (an item) hand pages to the one hub, `extension.py`, which owns the crawl's
Deduplicator: it opens the index (`opening.py`), sends extraction to the workers and groups
commits (`batching.py`), makes a recrawl's requests conditional and turns a 304 into a decision
(`conditional.py`), and hands each verdict to `recording.py` (stats keys from `stats.py`, the
drop-log line, the log line, the page_superseded signal). `spider.py` is the generic `pages`
spider. Users name the parts by their public paths: `crawler_dedup.addon.DedupAddon`,
`crawler_dedup.middleware.*`, `crawler_dedup.pipeline.*`, `crawler_dedup.spider.PagesSpider`.
"""
