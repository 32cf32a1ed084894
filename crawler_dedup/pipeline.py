"""The item pipeline's public path, as projects name it in ITEM_PIPELINES (the code: scrapy/pipeline.py)."""

from .scrapy.pipeline import DedupPipeline, DuplicateItem

__all__ = ["DedupPipeline", "DuplicateItem"]
