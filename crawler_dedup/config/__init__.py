"""The DEDUP_* settings: `registry.py` declares every one (SETTINGS) and parses them into a
`DedupConfig`; `setting.py` is a setting's declaration and the check of each kind of value. The
core, the shell and the commands all read their settings through `DedupConfig`."""

from .registry import (
    CROSS_RULES,
    SETTINGS,
    DedupConfig,
    _did_you_mean,
    default_droplog,
)
from .setting import (
    AUTO_BOOL,
    AUTO_FLOAT,
    BACKEND,
    BACKENDS,
    BOOL,
    CHOICE,
    FIELD,
    FLOAT,
    INT,
    MAX_K,
    PATH,
    REGEXES,
    TEXT,
    URL,
    VERIFIER,
    VERIFIER_NAMES,
    WORKERS,
    Setting,
    mask_password,
)

__all__ = [
    "AUTO_BOOL", "AUTO_FLOAT", "BACKEND", "BACKENDS", "BOOL", "CHOICE", "CROSS_RULES", "FIELD", "FLOAT", "INT", "MAX_K", "PATH",
    "REGEXES", "SETTINGS", "TEXT", "URL", "VERIFIER", "VERIFIER_NAMES", "WORKERS", "DedupConfig", "Setting",
    "_did_you_mean", "default_droplog", "mask_password",
]
