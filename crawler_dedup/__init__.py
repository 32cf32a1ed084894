"""crawler-dedup: keep near-duplicate web pages out of a Scrapy crawl's storage.

The package's face: what a user of the Python API needs, from private modules (as httpx does).
"""

from .config import DedupConfig
from .core.verdict import Action, Reason, Skip, Thresholds, Verdict, Weighing
from .deduplicator import Deduplicator
from .exceptions import (
    CliError,
    ConfigError,
    DedupError,
    DemoError,
    InputError,
    LogError,
    ModelError,
    ScanError,
    ShowError,
    SourceError,
    StoreDamaged,
    StoreError,
    StoreFormat,
    StoreFull,
    ToolError,
    WorkerDied,
)
from .tools.batch import BatchResult, dedupe_batch

__version__ = "0.1.0"

__all__ = [
    "Action", "BatchResult", "CliError", "ConfigError", "DedupConfig", "DedupError", "Deduplicator", "DemoError",
    "InputError", "LogError", "ModelError", "Reason", "ScanError", "ShowError", "Skip", "SourceError", "StoreDamaged",
    "StoreError", "StoreFormat", "StoreFull", "Thresholds", "ToolError", "Verdict", "Weighing", "WorkerDied", "__version__",
    "dedupe_batch",
]
