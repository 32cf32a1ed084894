"""crawler-dedup: keep near-duplicate web pages out of a Scrapy crawl's storage."""

from .config import DedupConfig
from .core.dedup import Deduplicator
from .core.verdict import Action, Reason, Skip, Thresholds, Verdict

__version__ = "0.1.0"

__all__ = ["Action", "DedupConfig", "Deduplicator", "Reason", "Skip", "Thresholds", "Verdict", "__version__"]
