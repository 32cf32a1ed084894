"""The generic `pages` spider's public path (the code: scrapy/spider.py)."""

from .scrapy.spider import PagesSpider

__all__ = ["PagesSpider"]
