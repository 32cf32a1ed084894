"""crawler-dedup: keep near-duplicate web pages out of a Scrapy crawl's storage."""

from .config import DedupConfig
from .dedup import Deduplicator, Verdict

__version__ = "0.1.0"

__all__ = ["DedupConfig", "Deduplicator", "Verdict", "__version__"]
