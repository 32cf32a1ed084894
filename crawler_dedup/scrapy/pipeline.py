"""Item pipeline: drop items that carry the html or text of a page already kept."""

from __future__ import annotations

from itemadapter import ItemAdapter

from scrapy.exceptions import DropItem

from ..core.verdict import Action, Skip, Stage
from .extension import DedupExtension


class DuplicateItem(DropItem):
    """An item pipeline drop: the item is a near-duplicate of a kept page."""


class DedupPipeline:
    def __init__(self, ext: DedupExtension):
        self.ext = ext

    @classmethod
    def from_crawler(cls, crawler):
        return cls(DedupExtension.enabled(crawler))

    def process_item(self, item):
        rt, cfg = self.ext, self.ext.config
        adapter = ItemAdapter(item)
        html, text = adapter.get(cfg.item_html_field), adapter.get(cfg.item_text_field)
        if not html and not text:
            return item  # not a page: nothing to compare
        url = str(adapter.get(cfg.item_url_field) or "")
        how = rt.decided_as_response(url)
        if how is not None:
            # the middleware already decided this page (or was told not to): not again
            rt.skip(url, Skip.DONT_DEDUP if how == "dont_dedup" else Skip.CHECKED_AS_RESPONSE)
            return item
        title = adapter.get(cfg.item_title_field) if text is not None else None
        verdict = rt.check(url, html=html if text is None else None, text=text, stage=Stage.ITEM,
                           title=title if isinstance(title, str) and title.strip() else None, item=adapter.asdict())
        if verdict.action == Action.DROP:
            raise DuplicateItem(f"duplicate of {verdict.duplicate_of} ({verdict.reason})", log_level="INFO")
        return item
