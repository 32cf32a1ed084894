"""DEDUP_* settings parsed and checked once, from Scrapy settings or any mapping."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from . import defaults
from .exceptions import ConfigError

BACKENDS = ("lmdb", "memory")
VERIFIER_NAMES = ("resemblance", "qgram", "swlr")
MAX_K = 8


def _bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on", "0", "false", "no", "off", ""):
        return value.strip().lower() in ("1", "true", "yes", "on")
    raise ConfigError(name, value, "a boolean (True/False, 1/0)")


def _int(name: str, value: Any, lo: int, hi: int | None = None) -> int:
    try:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError
        number = int(value)
    except (TypeError, ValueError):
        number = None
    if number is None or number < lo or (hi is not None and number > hi):
        span = f"from {lo} to {hi}" if hi is not None else f">= {lo}"
        raise ConfigError(name, value, f"an integer {span}")
    return number


def _float(name: str, value: Any, lo: float, hi: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = None
    if number is None or not lo <= number <= hi:
        raise ConfigError(name, value, f"a number from {lo} to {hi}")
    return number


def _regexes(name: str, value: Any) -> list[re.Pattern]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        # -s DEDUP_ALLOW='["^https://a/", "b{1,3}"]' (JSON, for patterns with commas) or "^a,^b"
        text = value.strip()
        try:
            value = json.loads(text) if text.startswith("[") else [p for p in text.split(",") if p.strip()]
        except json.JSONDecodeError as exc:
            raise ConfigError(name, value, f"a JSON list of regular expressions ({exc})") from None
    if not isinstance(value, (list, tuple)):
        raise ConfigError(name, value, "a list of regular expressions")
    out = []
    for pattern in value:
        try:
            out.append(re.compile(pattern))
        except (re.error, TypeError) as exc:
            raise ConfigError(name, pattern, f"a list of valid regular expressions ({exc})") from None
    return out


def _did_you_mean(name: str, known: set[str], lower: bool = False) -> str:
    import difflib

    close = difflib.get_close_matches(name, sorted(known), n=1)
    if not close:
        return "a known setting (see the README's settings table)"
    suggestion = close[0][len("DEDUP_"):].lower() if lower else close[0]
    return f"a known setting: did you mean {suggestion}?"


@dataclass(frozen=True)
class DedupConfig:
    enabled: bool = defaults.DEDUP_ENABLED
    allow: tuple = ()
    backend: str = defaults.DEDUP_BACKEND
    canonical: bool = defaults.DEDUP_CANONICAL
    commit_batch: int = defaults.DEDUP_COMMIT_BATCH
    commit_delay: float = defaults.DEDUP_COMMIT_DELAY
    conceptual: str = defaults.DEDUP_CONCEPTUAL
    conceptual_threshold: float = defaults.DEDUP_CONCEPTUAL_THRESHOLD
    containment: float = defaults.DEDUP_CONTAINMENT
    debug: bool = defaults.DEDUP_DEBUG
    dir: str | None = defaults.DEDUP_DIR
    droplog: str | None = defaults.DEDUP_DROPLOG
    droplog_items: bool = defaults.DEDUP_DROPLOG_ITEMS
    dry_run: bool = defaults.DEDUP_DRY_RUN
    expected_pages: int = defaults.DEDUP_EXPECTED_PAGES
    extract_mode: str = defaults.DEDUP_EXTRACT_MODE
    features: str = defaults.DEDUP_FEATURES
    item_html_field: str = defaults.DEDUP_ITEM_HTML_FIELD
    item_text_field: str = defaults.DEDUP_ITEM_TEXT_FIELD
    item_url_field: str = defaults.DEDUP_ITEM_URL_FIELD
    k: int = defaults.DEDUP_K
    logstats_interval: float = defaults.DEDUP_LOGSTATS_INTERVAL
    lmdb_map_size: int = defaults.DEDUP_LMDB_MAP_SIZE
    lsi_dims: int = defaults.DEDUP_LSI_DIMS
    lsi_train: int = defaults.DEDUP_LSI_TRAIN
    lmdb_sync: bool = defaults.DEDUP_LMDB_SYNC
    max_bytes: int = defaults.DEDUP_MAX_BYTES
    min_resemblance: float = defaults.DEDUP_MIN_RESEMBLANCE
    min_tokens: int = defaults.DEDUP_MIN_TOKENS
    reset: bool = defaults.DEDUP_RESET
    revisit: str = defaults.DEDUP_REVISIT
    shingle: int = defaults.DEDUP_SHINGLE
    sketch_probes: int = defaults.DEDUP_SKETCH_PROBES
    store_text: bool = defaults.DEDUP_STORE_TEXT
    threshold: float = defaults.DEDUP_THRESHOLD
    unchanged: str = defaults.DEDUP_UNCHANGED
    verifier: str = defaults.DEDUP_VERIFIER
    weighting: str = defaults.DEDUP_WEIGHTING
    window: int = defaults.DEDUP_WINDOW
    workers: int = defaults.DEDUP_WORKERS
    extra: dict = field(default_factory=dict, compare=False)

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any] | None = None, **overrides: Any) -> "DedupConfig":
        """Read DEDUP_* names from `settings` (Scrapy Settings or a dict); overrides use field names."""
        settings = settings or {}
        known = {"DEDUP_" + f.name.upper() for f in fields(cls) if f.name != "extra"}
        for name in list(settings.keys()) if hasattr(settings, "keys") else []:
            if isinstance(name, str) and name.startswith("DEDUP_") and name not in known:
                raise ConfigError(name, settings.get(name), _did_you_mean(name, known))
        for name, value in overrides.items():
            if "DEDUP_" + name.upper() not in known:
                raise ConfigError(name, value, _did_you_mean("DEDUP_" + name.upper(), known, lower=True))
        raw = {}
        for f in fields(cls):
            if f.name == "extra":
                continue
            name = "DEDUP_" + f.name.upper()
            value = settings.get(name)
            raw[f.name] = getattr(defaults, name) if value is None else value
        raw.update(overrides)
        return cls._checked(raw)

    @classmethod
    def _checked(cls, raw: dict[str, Any]) -> "DedupConfig":
        n = lambda key: "DEDUP_" + key.upper()  # noqa: E731
        out: dict[str, Any] = {}
        for key in ("enabled", "canonical", "debug", "droplog_items", "dry_run", "lmdb_sync", "reset", "store_text"):
            out[key] = _bool(n(key), raw[key])
        backend = str(raw["backend"]).strip()
        if backend not in BACKENDS and not re.fullmatch(r"[A-Za-z_][\w.]*\.[A-Za-z_]\w*", backend):
            raise ConfigError(n("backend"), raw["backend"], f"one of {', '.join(BACKENDS)} or a dotted path to a store class")
        out["backend"] = backend
        out["allow"] = tuple(_regexes(n("allow"), raw["allow"]))
        for key in ("dir", "droplog"):
            value = raw[key]
            if value is not None and (not isinstance(value, (str, os.PathLike)) or not str(value).strip()):
                raise ConfigError(n(key), value, "a file-system path")
            out[key] = None if value is None else os.path.expanduser(str(value))
        out["expected_pages"] = _int(n("expected_pages"), raw["expected_pages"], 1)
        for key in ("item_html_field", "item_text_field", "item_url_field"):
            if not isinstance(raw[key], str) or not raw[key]:
                raise ConfigError(n(key), raw[key], "a non-empty item field name")
            out[key] = raw[key]
        out["k"] = _int(n("k"), raw["k"], 0, MAX_K)
        out["lmdb_map_size"] = _int(n("lmdb_map_size"), raw["lmdb_map_size"], 1024 * 1024)
        out["max_bytes"] = _int(n("max_bytes"), raw["max_bytes"], 1)
        out["min_tokens"] = _int(n("min_tokens"), raw["min_tokens"], 1)
        out["shingle"] = _int(n("shingle"), raw["shingle"], 1, 16)
        out["threshold"] = _float(n("threshold"), raw["threshold"], 0.0, 1.0)
        out["containment"] = _float(n("containment"), raw["containment"], 0.0, 1.0)
        out["min_resemblance"] = _float(n("min_resemblance"), raw["min_resemblance"], 0.0, 1.0)
        out["sketch_probes"] = _int(n("sketch_probes"), raw["sketch_probes"], 0, 128)
        if raw["verifier"] not in VERIFIER_NAMES:
            raise ConfigError(n("verifier"), raw["verifier"], f"one of {', '.join(VERIFIER_NAMES)}")
        out["verifier"] = raw["verifier"]
        out["conceptual_threshold"] = _float(n("conceptual_threshold"), raw["conceptual_threshold"], 0.0, 1.0)
        out["lsi_dims"] = _int(n("lsi_dims"), raw["lsi_dims"], 2, 512)
        out["lsi_train"] = _int(n("lsi_train"), raw["lsi_train"], 10)
        out["workers"] = _int(n("workers"), raw["workers"], 0, 64)
        out["commit_batch"] = _int(n("commit_batch"), raw["commit_batch"], 1, 10_000)
        out["commit_delay"] = _float(n("commit_delay"), raw["commit_delay"], 0.0, 1.0)
        out["window"] = _int(n("window"), raw["window"], 0)
        out["logstats_interval"] = _float(n("logstats_interval"), raw["logstats_interval"], 0.0, 86400.0)
        if out["lsi_train"] < out["lsi_dims"]:
            raise ConfigError(n("lsi_train"), raw["lsi_train"], f"at least DEDUP_LSI_DIMS ({out['lsi_dims']}) pages")
        for key, allowed in (("features", ("shingles", "docimage")), ("weighting", ("none", "tfidf")),
                             ("extract_mode", ("thorough", "fast")),
                             ("conceptual", ("off", "flag", "drop")), ("revisit", ("update", "keep", "drop")),
                             ("unchanged", ("drop", "keep"))):
            if raw[key] not in allowed:
                raise ConfigError(n(key), raw[key], f"one of {', '.join(allowed)}")
            out[key] = raw[key]
        return cls(**out)
