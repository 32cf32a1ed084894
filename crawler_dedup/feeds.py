"""FEEDS `"postprocessing": ["crawler_dedup.feeds.SupersededFilter"]`: the feed plugin's public path
(the code: scrapy/feeds.py). The add-on puts it first in every feed's chain (`DEDUP_FEED_FILTER`)."""

from .scrapy.feeds import SupersededFilter

__all__ = ["SupersededFilter"]
