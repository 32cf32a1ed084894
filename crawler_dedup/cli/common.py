"""What the commands share: the one error type, the one argument convention (--dir/--redis for the
index, --log for the drop log, -s settings over the project's, --url filters, --json, --yes),
the pages progress bar of scan and index add, where a crawl put its index and drop log, opening
an index, terminal-safe output. Tables and the other progress bars are in out.py."""

from __future__ import annotations

import os
import sys
from ..exceptions import CliError


# -- the one argument convention ---------------------------------------------------------
# every command takes the index as --dir DIR or --redis URL, the drop log as --log FILE, settings
# as -s NAME=VALUE over the Scrapy project's settings.py, filters with --url (an exact URL or a
# glob), --json where it reports, and --yes where it destroys

SETTINGS_HELP = "a DEDUP_ setting, as with scrapy -s (over the project's settings.py when run in a Scrapy project)"
DIR_HELP = "the LMDB index (default: the project's DEDUP_DIR, else .scrapy/dedup)"
REDIS_HELP = "the index is in Redis at URL (DEDUP_BACKEND=redis, DEDUP_REDIS_URL=URL; its prefix: -s DEDUP_REDIS_PREFIX=...)"


def add_settings(p, help: str = SETTINGS_HELP) -> None:
    p.add_argument("-s", "--set", action="append", metavar="DEDUP_NAME=VALUE", help=help)


def add_index(p, dir_help: str = DIR_HELP, settings_help: str = SETTINGS_HELP, dir: bool = True) -> None:
    """--dir DIR or --redis URL (where the index is) and -s."""
    if dir:
        p.add_argument("--dir", metavar="DIR", help=dir_help)
    p.add_argument("--redis", metavar="URL", help=REDIS_HELP)
    add_settings(p, help=settings_help)


def add_backend(p, help: str = SETTINGS_HELP) -> None:
    """--redis URL and -s, for a command whose index is not --dir (scan: OUT/index)."""
    add_index(p, settings_help=help, dir=False)


def add_log(p) -> None:
    p.add_argument("--log", metavar="FILE", help="the drop log (default: the project's DEDUP_DROPLOG, else <DIR>/droplog.jsonl)")


def add_json(p, help: str = "print JSON instead of text") -> None:
    p.add_argument("--json", action="store_true", help=help)


def add_yes(p, dry_run: str | None = None) -> None:
    p.add_argument("-y", "--yes", action="store_true", help="do not ask first (needed when stdin is not a terminal)")
    if dry_run:
        p.add_argument("-n", "--dry-run", action="store_true", help=dry_run)


def add_legacy(p, dest: str) -> None:
    """The positional index or drop log of earlier releases, still taken (not shown in --help)."""
    import argparse

    p.add_argument(f"legacy_{dest}", nargs="?", help=argparse.SUPPRESS)


def take_legacy(args) -> None:
    """An earlier release's positional DEDUP_DIR or LOG becomes --dir / --log."""
    for dest in ("dir", "log"):
        old = getattr(args, f"legacy_{dest}", None)
        if old is None:
            continue
        if getattr(args, dest, None) not in (None, old):
            raise CliError(f"the {dest} is given twice ({old} and --{dest} {getattr(args, dest)}): give --{dest} only")
        setattr(args, dest, old)


def confirm(args, question: str) -> bool:
    """--yes, or a y on the terminal; without a terminal the command stops and names --yes."""
    if getattr(args, "yes", False):
        return True
    if not sys.stdin.isatty():
        raise CliError(f"{question}: give --yes to go on (there is no terminal to ask on)")
    try:
        answer = input(f"{question}? [y/N] ")
    except EOFError:
        answer = ""
    return answer.strip().lower() in ("y", "yes")


def index_location(args, settings: dict | None = None) -> str:
    """Where the index is: --dir, else the settings' DEDUP_DIR (-s, the project's), else Scrapy's
    data dir; a placeholder for a backend that is not LMDB (the store ignores it)."""
    from ..tools.indexes import is_lmdb

    settings = backend_settings(args) if settings is None else settings
    if not is_lmdb(settings):
        return args.dir or os.curdir
    if args.dir:
        return given_dir(args.dir)
    return in_data_dir(str(settings["DEDUP_DIR"])) if settings.get("DEDUP_DIR") else default_dir()


def backend_settings(args) -> dict:
    """The -s settings, with --redis URL as DEDUP_BACKEND=redis and DEDUP_REDIS_URL."""
    settings = parse_settings(args.set)
    if getattr(args, "redis", None):
        settings.update({"DEDUP_BACKEND": "redis", "DEDUP_REDIS_URL": args.redis})
    return settings


def parse_set(items: list[str] | None) -> dict:
    """The -s DEDUP_NAME=VALUE options alone; an unknown name gets the crawl's "did you mean"."""
    from dataclasses import fields

    from ..config import DedupConfig, _did_you_mean
    from ..exceptions import ConfigError

    known = {"DEDUP_" + f.name.upper() for f in fields(DedupConfig) if f.name != "extra"}
    out = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep:
            raise CliError(f"-s takes a DEDUP_ setting as NAME=VALUE, not {item!r} (see docs/settings.md)")
        if name not in known:  # as a crawl says it: "... is not a known setting: did you mean DEDUP_THRESHOLD?"
            raise CliError(str(ConfigError(name, value, _did_you_mean(name, known), unknown=True)))
        out[name] = value
    return out


def parse_settings(items: list[str] | None) -> dict:
    """-s options over the project's DEDUP_ settings, as one dict checked as a crawl checks it (a
    bad value or an unknown name is an error, naming settings.py when it is there)."""
    from ..config import DedupConfig
    from ..exceptions import ConfigError

    out = parse_set(items)
    project = project_settings()
    merged = {**project, **out}  # -s over the project's settings.py
    try:
        DedupConfig.from_settings(merged)
    except ConfigError as exc:
        where = "the project's settings.py: " if exc.setting in project and exc.setting not in out else ""
        raise CliError(f"{where}{exc}") from None
    return merged


# the project's settings, loaded once a command (main() empties it): the -s check, the defaults of
# --dir and --log and doctor all read this one load
_PROJECT: dict = {}


def load_project():
    """(all settings, settings module name, its file) of the Scrapy project the command is run in
    (found as `scrapy` finds it: scrapy.cfg in this folder or above), or None outside one.
    Raises what the project's settings.py raises."""
    key = os.getcwd()
    if key in _PROJECT:
        return _PROJECT[key]
    # Scrapy's loader sets SCRAPY_SETTINGS_MODULE and sys.path for the process: put both back
    # (and forget the imported module), so nothing run later is pointed at this project
    env, path, modules = dict(os.environ), list(sys.path), set(sys.modules)
    try:
        from scrapy.utils.project import get_project_settings, inside_project

        got = None
        if inside_project():
            settings = get_project_settings()
            name = os.environ.get("SCRAPY_SETTINGS_MODULE") or ""
            got = (settings, name, getattr(sys.modules.get(name), "__file__", None))
    finally:
        loaded = os.environ.get("SCRAPY_SETTINGS_MODULE") or ""
        os.environ.clear()
        os.environ.update(env)
        sys.path[:] = path
        parts = loaded.split(".")
        for name in {".".join(parts[:i]) for i in range(1, len(parts) + 1)} - modules:
            sys.modules.pop(name, None)  # the project's settings module (and package) only
    _PROJECT[key] = got
    return got


def project_settings() -> dict:
    """The DEDUP_* settings of the project the command is run in, so the commands read the index,
    drop log and thresholds its crawls use; {} outside a project (or one whose settings.py does
    not load: `crawler-dedup doctor` says why)."""
    try:
        project = load_project()
    except Exception:  # noqa: BLE001
        return {}
    if project is None:
        return {}
    settings = project[0]
    return {name: settings[name] for name in settings if str(name).startswith("DEDUP_")}


def make_config(settings: dict):
    """The DedupConfig of `settings`; a value not allowed is a usage error."""
    from ..config import DedupConfig
    from ..exceptions import ConfigError

    try:
        return DedupConfig.from_settings(settings)
    except ConfigError as exc:
        raise CliError(str(exc)) from None


# -- the drop log --------------------------------------------------------------------------

def add_filters(p, url_help: str = "the dropped page's URL, or a glob when it holds * ('*part*' for a substring; "
                "repeatable: any of them)") -> None:
    g = p.add_argument_group("filters (a drop must pass all of them)")
    g.add_argument("--domain", action="append", metavar="HOST", help="the dropped URL's host or a subdomain of it (repeatable)")
    g.add_argument("--reason", action="append", choices=("exact", "near", "conceptual", "unchanged", "superseded"),
                   help="repeatable")
    g.add_argument("--action", action="append", choices=("dropped", "flagged"),
                   help="`dropped` (a real crawl's drops) or `flagged` (a dry run's: DEDUP_DRY_RUN); repeatable")
    g.add_argument("--since", metavar="ISO_TIME", help="drops at or after this time, e.g. 2026-11-22T04:00Z or 2026-11-22")
    g.add_argument("--url", action="append", metavar="PATTERN", help=url_help)
    g.add_argument("--min-similarity", type=float, metavar="S", help="similarity at least S (0..1)")
    g.add_argument("--kept", action="store_true", help="instead of the drops, the pages kept although a candidate "
                   "passed the lookup thresholds (`action` `kept`: the score kept them apart; DEDUP_LOG_KEPT)")


def filters(args):
    from ..tools.inspect import Filters, parse_time

    since = None
    if args.since:
        try:
            since = parse_time(args.since)
        except ValueError:
            raise CliError(f"--since takes an ISO 8601 time such as 2026-11-22T04:00:00Z, not {args.since!r}") from None
    if args.min_similarity is not None and not 0 <= args.min_similarity <= 1:
        raise CliError(f"--min-similarity takes a number from 0 to 1, not {args.min_similarity}")
    return Filters(domains=tuple(d.lower().strip(".") for d in args.domain or ()), reasons=tuple(args.reason or ()),
                   since=since, urls=tuple(args.url or ()), min_similarity=args.min_similarity,
                   kept=bool(getattr(args, "kept", False)), actions=tuple(getattr(args, "action", None) or ()))


def same_file(a: str, b: str) -> bool:
    """Whether paths `a` and `b` name one file (symlinks and hard links too; a missing `b` by path)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def term(text) -> str:
    """`text` safe to print on a terminal: crawled titles and URLs may hold control characters."""
    from ..tools.summary_text import field_safe

    return field_safe(text)


# -- where a crawl put the index and the drop log ------------------------------------------

def in_data_dir(path: str = "dedup") -> str:
    """Where a crawl resolves DEDUP_DIR / DEDUP_DROPLOG `path` (Scrapy's data_path: a relative
    one inside the project's data folder), found without making the project's .scrapy folder as
    Scrapy's helper does: a command that reads creates nothing."""
    from scrapy.utils.conf import closest_scrapy_cfg, get_config

    path = os.path.expanduser(path)
    if os.path.isabs(path):
        return path
    cfg_path = closest_scrapy_cfg()
    if not cfg_path:
        return os.path.join(".scrapy", path)
    cfg = get_config()
    if cfg.has_option("datadir", "default"):  # scrapy.cfg's [datadir] default = ...
        return os.path.join(cfg.get("datadir", "default"), path)
    return os.path.join(os.path.dirname(os.path.abspath(cfg_path)), ".scrapy", path)


def default_dir() -> str:
    """Where a crawl puts its index by default (Scrapy's data_path("dedup"))."""
    return in_data_dir("dedup")


def given_dir(path: str) -> str:
    """A --dir as given; a relative one that is not there but is in the project's data folder
    (where a crawl's `-s DEDUP_DIR=NAME` put it) is that one."""
    if os.path.isabs(path) or os.path.exists(path):
        return path
    inside = in_data_dir(path)
    return inside if os.path.exists(inside) else path


def resolve_log_dir(log: str | None, dir_: str | None, settings: dict | None = None) -> tuple[str, str]:
    """Where a crawl put them: the project's DEDUP_DIR and DEDUP_DROPLOG (settings.py) when the
    command runs in a Scrapy project; DEDUP_DROPLOG defaults to <DEDUP_DIR>/droplog.jsonl (a Redis
    index's, named by `settings` or the project, to <DEDUP_DIR>/droplog-redis-<prefix>.jsonl),
    DEDUP_DIR to <scrapy data dir>/dedup; `crawler-dedup demo --out D` writes D/droplog.jsonl and
    D/index."""
    from ..config import default_droplog

    if dir_ is None and log is not None:
        here = os.path.dirname(os.path.abspath(log))
        for guess in (here, os.path.join(here, "index")):
            if has_index(guess):
                dir_ = guess
                break
    project = project_settings() if dir_ is None or log is None else {}
    if dir_ is not None:
        dir_ = given_dir(dir_)
    if dir_ is None and project.get("DEDUP_DIR"):
        dir_ = in_data_dir(str(project["DEDUP_DIR"]))
    if dir_ is None:
        dir_ = default_dir()
    if log is None and project.get("DEDUP_DROPLOG"):
        log = in_data_dir(str(project["DEDUP_DROPLOG"]))
    named = {**project, **(settings or {})}
    backend = str(named.get("DEDUP_BACKEND") or "lmdb").strip()
    if log is None and backend == "redis":
        return default_droplog(dir_, backend, str(named.get("DEDUP_REDIS_PREFIX") or "dedup")), dir_
    if log is None:
        log = os.path.join(dir_, "droplog.jsonl")
        if not os.path.exists(log) and os.path.isfile(os.path.join(os.path.dirname(os.path.abspath(dir_)), "droplog.jsonl")):
            log = os.path.join(os.path.dirname(os.path.abspath(dir_)), "droplog.jsonl")  # the demo's layout
    return log, dir_


def has_index(path: str, settings: dict | None = None) -> bool:
    """An LMDB index is there; another backend's is taken as given (opening it will tell)."""
    from ..tools.indexes import is_lmdb

    return not is_lmdb(settings) or os.path.isfile(os.path.join(path, "data.mdb"))


def index_hint(dir_: str | None) -> str:
    """'; DIR/index holds one: ...' when DIR is not an index but its `index` folder is (the demo's layout)."""
    if dir_ and not has_index(dir_) and has_index(os.path.join(dir_, "index")):
        return f"; {os.path.join(dir_, 'index')} holds one: give --dir {os.path.join(dir_, 'index')}"
    return ""


def require_index(path: str, settings: dict | None = None) -> None:
    from ..tools.indexes import is_lmdb

    if is_lmdb(settings) and os.path.isdir(path) and not os.access(path, os.R_OK | os.X_OK):
        raise CliError(f"cannot read {path}: permission denied (run as the user the crawl ran as)")
    if is_lmdb(settings) and os.path.isdir(os.path.join(path, "data.mdb")):
        raise CliError(f"{os.path.join(path, 'data.mdb')} is a folder, not an index file: give another DEDUP_DIR")
    if not has_index(path, settings):
        raise CliError(f"no LMDB index in {path}{index_hint(path)}")


def open_index(path: str, readonly: bool = False, settings: dict | None = None):
    """The index at `path` (LMDB, or the store -s DEDUP_BACKEND names) with its own stored plan
    (tools.indexes.open_index), or a CliError. readonly: nothing is written or migrated."""
    from ..exceptions import DedupError
    from ..tools.indexes import open_index as open_existing

    require_index(path, settings)
    try:
        return open_existing(path, readonly=readonly, settings=settings)
    except DedupError as exc:
        raise CliError(str(exc)) from None
