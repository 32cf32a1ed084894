"""Every DEDUP_* setting with its default, as module-level names (`defaults.DEDUP_K`), made from
the registry in config.py (ENABLED first, the rest alphabetical)."""

from __future__ import annotations

import copy
from typing import Any

from .config import SETTINGS

# copies: a caller that changes defaults.DEDUP_ALLOW in place cannot change the registry
globals().update({s.name: copy.deepcopy(s.default) for s in SETTINGS})
__all__ = [s.name for s in SETTINGS]


def __getattr__(name: str) -> Any:
    # only reached for unknown names; it tells a type checker the generated names exist
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
