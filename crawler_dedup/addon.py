"""`ADDONS = {"crawler_dedup.addon.DedupAddon": 0}`: the add-on's public path (the code: scrapy/addon.py)."""

from .scrapy.addon import DedupAddon

__all__ = ["DedupAddon"]
