"""Signals the add-on sends, for storage pipelines to act on.

    from crawler_dedup.signals import page_superseded
    crawler.signals.connect(on_superseded, signal=page_superseded)

`page_superseded(url, canonical_url, record)`: the kept page at `url` was replaced in the index
by `canonical_url`, the URL its rel=canonical (or og:url) names; `record` is its drop-log line
(reason `superseded`). Storage holding `url` may remove it.
"""

page_superseded = object()
