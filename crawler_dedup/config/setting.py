"""A DEDUP_* setting's declaration (`Setting`) and the check of each kind of value: a wrong value
is a ConfigError naming the setting, the value and what is allowed. config.py declares them all."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any, Callable

from ..exceptions import ConfigError

BACKENDS = ("lmdb", "memory", "redis")
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
        given = value
        if isinstance(given, str) and any(c in given for c in ".eE"):  # (-s DEDUP_WINDOW=129600.0, as
            given = float(given)  # settings.py's 1.5 * 86400 is)
        if isinstance(given, bool) or (isinstance(given, float) and not given.is_integer()):
            raise ValueError
        number = int(given)
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


def _choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ConfigError(name, value, f"one of {', '.join(choices)}")
    return value


def _path(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
        raise ConfigError(name, value, "a file-system path")
    return os.path.expanduser(str(value))


def _redis_url(name: str, value: Any) -> str:
    if not isinstance(value, str) or not re.match(r"(rediss?|unix)://", value.strip()):
        shown = mask_password(value) if isinstance(value, str) else value
        raise ConfigError(name, shown, "a Redis URL: redis://[user:password@]host:port/db, rediss:// (TLS) or unix://")
    return value.strip()


def mask_password(url: str) -> str:
    """The URL with its password (user:password@, or ?password=) shown as ***, for messages."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if parts.password is not None:
            host = netloc.rsplit("@", 1)[1]
            netloc = f"{parts.username or ''}:***@{host}"
        query = parts.query
        if "password" in query.lower():
            query = urlencode([(k, "***" if k.lower() == "password" else v) for k, v in parse_qsl(query)], safe="*/")
        return urlunsplit(parts._replace(netloc=netloc, query=query))
    except ValueError:
        return re.sub(r"(?<=:)[^:@/]*(?=@)", "***", url)  # (a URL urlsplit cannot read: still no password)


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or any(c in value for c in "{}"):
        raise ConfigError(name, value, "a non-empty name without { or }")
    return value.strip()


def _field_name(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(name, value, "a non-empty item field name")
    return value


def _dotted(name: str, value: Any, choices: tuple[str, ...], what: str) -> str:
    """A built-in name, or a dotted path to a class of one's own (loaded when used)."""
    chosen = str(value).strip()
    if chosen not in choices and not re.fullmatch(r"[A-Za-z_][\w.]*\.[A-Za-z_]\w*", chosen):
        raise ConfigError(name, value, f"one of {', '.join(choices)} or a dotted path to a {what} class")
    return chosen


def _workers(name: str, value: Any) -> int | str:
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    try:
        return _int(name, value, 0, 64)
    except ConfigError:
        raise ConfigError(name, value, "auto (one a core) or an integer from 0 to 64") from None


def _auto_bool(name: str, value: Any) -> bool | str:
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    try:
        return _bool(name, value)
    except ConfigError:
        raise ConfigError(name, value, "auto, or a boolean (True/False, 1/0)") from None


def _auto_float(name: str, value: Any, lo: float, hi: float) -> float | str:
    if value is None or isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    try:
        return _float(name, value, lo, hi)
    except ConfigError:
        raise ConfigError(name, value, f"auto, or a number from {lo} to {hi}") from None


# what a setting's value may be; each has one check above
BOOL, INT, FLOAT, CHOICE, PATH, REGEXES, FIELD, BACKEND, VERIFIER, URL, TEXT, WORKERS, AUTO_BOOL, AUTO_FLOAT = (
    "bool", "int", "float", "choice", "path", "regexes", "field", "backend", "verifier", "url", "text", "workers",
    "auto_bool", "auto_float")


@dataclass(frozen=True)
class Setting:
    name: str
    kind: str
    default: Any
    doc: str  # the settings page's "meaning" cell (Markdown, one line)
    lo: float | None = None  # INT, FLOAT: smallest allowed
    hi: float | None = None  # INT: largest allowed (None = no limit); FLOAT: required
    choices: tuple[str, ...] = ()  # CHOICE, BACKEND, VERIFIER
    shown: str | None = None  # the table's default when the value alone says little (None paths)

    def __post_init__(self) -> None:
        # a declaration missing what its check needs fails at import, not on a user's bad value
        if not self.name.startswith("DEDUP_") or self.kind not in _CHECKS:
            raise ValueError(f"bad setting declaration: {self.name} ({self.kind})")
        if (self.kind in (INT, FLOAT, AUTO_FLOAT) and self.lo is None or self.kind in (FLOAT, AUTO_FLOAT) and self.hi is None
                or self.kind in (CHOICE, BACKEND, VERIFIER) and not self.choices):
            raise ValueError(f"{self.name}: a {self.kind} setting needs its bounds or choices")
        if "|" in self.doc or "\n" in self.doc:
            raise ValueError(f"{self.name}: the doc is one Markdown table cell")

    @property
    def attr(self) -> str:
        """The DedupConfig field and keyword name: DEDUP_LSI_DIMS -> lsi_dims."""
        return self.name[len("DEDUP_"):].lower()

    def check(self, value: Any) -> Any:
        """`value` as DedupConfig holds it, or ConfigError naming the setting and what is allowed."""
        return _CHECKS[self.kind](self, value)


_CHECKS: dict[str, Callable[[Setting, Any], Any]] = {
    BOOL: lambda s, v: _bool(s.name, v),
    INT: lambda s, v: _int(s.name, v, int(s.lo or 0), None if s.hi is None else int(s.hi)),
    FLOAT: lambda s, v: _float(s.name, v, float(s.lo or 0), float(s.hi or 0)),
    CHOICE: lambda s, v: _choice(s.name, v, s.choices),
    PATH: lambda s, v: _path(s.name, v),
    REGEXES: lambda s, v: tuple(_regexes(s.name, v)),
    FIELD: lambda s, v: _field_name(s.name, v),
    URL: lambda s, v: _redis_url(s.name, v),
    TEXT: lambda s, v: _text(s.name, v),
    BACKEND: lambda s, v: _dotted(s.name, v, s.choices, "store"),
    VERIFIER: lambda s, v: _dotted(s.name, v, s.choices, "Verifier"),
    WORKERS: lambda s, v: _workers(s.name, v),
    AUTO_BOOL: lambda s, v: _auto_bool(s.name, v),
    AUTO_FLOAT: lambda s, v: _auto_float(s.name, v, float(s.lo or 0), float(s.hi or 0)),
}
