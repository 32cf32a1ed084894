"""The middlewares' public paths, as projects name them in DOWNLOADER_MIDDLEWARES and
SPIDER_MIDDLEWARES (the code: scrapy/middleware.py)."""

from .scrapy.middleware import DedupMiddleware, DedupSpiderMiddleware, DuplicateResponse

__all__ = ["DedupMiddleware", "DedupSpiderMiddleware", "DuplicateResponse"]
