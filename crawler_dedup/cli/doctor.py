"""`crawler-dedup doctor`: is the add-on enabled in this Scrapy project, where are its index and
drop log, and what state are they in."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .common import add_json, add_settings, parse_set
from .out import plural

ADDON = "crawler_dedup.addon.DedupAddon"


def add_parser(sub):
    p = sub.add_parser(
        "doctor", help="check a Scrapy project's set-up: add-on enabled, settings, index, drop log, dependencies",
        description="Run inside a Scrapy project (a folder with scrapy.cfg, or below one). Says whether the add-on "
        "is enabled (and whether a later ADDONS = {...} in settings.py replaces the line enabling it), checks the "
        "DEDUP_ settings, where the index and the drop log are and what state they are in, and the versions of "
        "the libraries it needs. Exit status 0 when nothing needs fixing, 1 when something does.")
    add_settings(p)
    add_json(p)
    return p


@dataclass
class Report:
    checks: list[dict] = field(default_factory=list)
    where: dict = field(default_factory=dict)

    def add(self, status: str, check: str, detail: str, fix: str = "") -> None:
        self.checks.append({"status": status, "check": check, "detail": detail, "fix": fix})

    @property
    def ok(self) -> bool:
        return not any(c["status"] == "fail" for c in self.checks)


def run(args) -> int:
    import json

    report = Report()
    overrides = parse_set(args.set)
    project = _project(report)
    settings = project["settings"] if project else None
    if project is not None and settings is not None:
        _addon(report, settings, project)
        config = _config(report, settings, overrides)
        if config is not None:
            _index(report, config)
            _droplog(report, config)
    _libraries(report, settings, overrides)
    if args.json:
        print(json.dumps({"ok": report.ok, "where": report.where, "checks": report.checks}, indent=1))
    else:
        _print(report)
    return 0 if report.ok else 1


# -- the project -----------------------------------------------------------------------------

def _project(report: Report) -> dict | None:
    """The Scrapy project around the current folder: its settings (all of them) and settings.py."""
    from scrapy.utils.conf import closest_scrapy_cfg

    from .common import load_project

    cfg = closest_scrapy_cfg()
    if not cfg:
        report.add("fail", "Scrapy project", f"no scrapy.cfg in {os.getcwd()} or above",
                   "run doctor in your project's folder (made by `scrapy startproject NAME`)")
        return None
    try:
        loaded = load_project()
    except Exception as exc:  # noqa: BLE001 - a settings.py that does not import: the finding itself
        report.add("fail", "Scrapy project", f"{cfg}: its settings do not load: {type(exc).__name__}: {exc}",
                   "fix settings.py until `scrapy list` runs")
        return None
    if loaded is None:
        report.add("fail", "Scrapy project", f"{cfg}: Scrapy does not take this folder for a project")
        return None
    settings, module_name, source = loaded
    report.where["project"] = os.path.dirname(cfg)
    report.where["settings_module"] = module_name
    report.where["settings_file"] = source
    report.add("ok", "Scrapy project", f"{os.path.dirname(cfg)} (settings: {module_name or 'default'})")
    return {"settings": settings, "cfg": cfg, "source": source}


def _addon_entries(value) -> dict:
    """ADDONS as {dotted path: priority}, class keys named by their path."""
    out = {}
    for key, prio in dict(value or {}).items():
        name = key if isinstance(key, str) else f"{getattr(key, '__module__', '')}.{getattr(key, '__qualname__', key)}"
        out[name] = prio
    return out


def _addon(report: Report, settings, project: dict) -> None:
    from ..scrapy.addon import MIDDLEWARE, PIPELINE

    addons = _addon_entries(settings.getdict("ADDONS"))
    mine = {k: v for k, v in addons.items() if k in (ADDON, "crawler_dedup.DedupAddon") or k.endswith(".DedupAddon")}
    by_hand = [name for setting, name in (("DOWNLOADER_MIDDLEWARES", MIDDLEWARE), ("ITEM_PIPELINES", PIPELINE))
               if settings.getdict(setting).get(name) is not None]
    overridden = _overridden_addons(project.get("source"))
    if mine and all(v is not None for v in mine.values()):
        status, detail = "ok", f"ADDONS holds {', '.join(mine)}"
    elif mine:
        status, detail = "fail", f"ADDONS holds {', '.join(mine)} with priority None, which disables an add-on"
    elif by_hand:
        status, detail = "warn", (f"not in ADDONS, but {', '.join(by_hand)} set by hand; the add-on also sets the "
                                  "spider middleware and the extension that owns the index")
    else:
        status, detail = "fail", "the add-on is not in ADDONS: nothing is deduplicated"
    fix = ""
    if status != "ok":
        fix = f'settings.py: ADDONS = {{"{ADDON}": 0}}'
        if overridden:
            detail += f"; {overridden}"
            fix = "put the add-on into the last ADDONS = {...} of settings.py (a later assignment replaces an earlier one)"
    report.add(status, "add-on enabled", detail, fix)


def _overridden_addons(source: str | None) -> str:
    """'settings.py line 3 enables the add-on, but line 25 assigns ADDONS again': the
    `scrapy startproject` trap (its settings.py ends with ADDONS = {})."""
    import ast

    if not source or not source.endswith(".py") or not os.path.isfile(source):
        return ""
    try:
        tree = ast.parse(open(source, encoding="utf-8").read())
    except (OSError, SyntaxError, ValueError):
        return ""
    assigned = [(node.lineno, ast.unparse(node.value)) for node in tree.body
                if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "ADDONS" for t in node.targets)]
    with_addon = [line for line, value in assigned if "DedupAddon" in value]
    if with_addon and assigned[-1][0] not in with_addon:
        return (f"{os.path.basename(source)} line {with_addon[-1]} enables it, but line {assigned[-1][0]} assigns "
                f"ADDONS again ({assigned[-1][1][:60]}), replacing it")
    return ""


# -- settings, index, drop log ---------------------------------------------------------------

def _config(report: Report, settings, overrides: dict):
    from ..config import DedupConfig, default_droplog
    from ..exceptions import ConfigError
    from .common import default_dir, in_data_dir

    dedup = {name: settings[name] for name in settings if str(name).startswith("DEDUP_")}
    dedup.update(overrides)
    try:
        if dedup.get("DEDUP_ALLOW_FILE"):  # (found as a crawl finds it)
            from ..scrapy.opening import project_file

            dedup["DEDUP_ALLOW_FILE"] = project_file(str(dedup["DEDUP_ALLOW_FILE"]))
        config = DedupConfig.from_settings(dedup)
    except ConfigError as exc:
        report.add("fail", "DEDUP_ settings", str(exc), "a crawl would stop at its start with this message")
        return None
    changed = sorted(dedup)
    report.add("ok", "DEDUP_ settings", f"valid; set here: {', '.join(changed)}" if changed else "valid; all defaults")
    for name in config.idle_settings():  # (the crawl warns of each at its start too)
        report.add("warn", name, f"set, but DEDUP_BACKEND={config.backend} never reads it",
                   "DEDUP_BACKEND = 'redis' to use Redis" if "REDIS" in name else f"remove {name}")
    if not config.enabled:
        report.add("warn", "DEDUP_ENABLED", "False: the add-on is loaded but checks nothing", "DEDUP_ENABLED = True")
    if config.dry_run:
        report.add("warn", "DEDUP_DRY_RUN", "True: duplicates are flagged in the drop log, never dropped",
                   "DEDUP_DRY_RUN = False once the drop log looks right")
    _conditional(report, settings, config)
    updates: dict = {}
    if config.backend == "lmdb":
        updates["dir"] = in_data_dir(str(config.dir)) if config.dir else default_dir()
    if config.droplog is not None:
        updates["droplog"] = in_data_dir(str(config.droplog))
    else:  # where the crawl will write it (a Redis index's is named after its prefix)
        base = updates.get("dir") or config.dir or default_dir()
        updates["droplog"] = default_droplog(str(base), config.backend, config.redis_prefix)
    if updates:
        from dataclasses import replace

        config = replace(config, **updates)
    return config


def _conditional(report: Report, settings, config) -> None:
    """Whether recrawls ask instead of download, and what a 304 can stand for."""
    from ..scrapy.conditional import blocked_by

    if not config.conditional:
        report.add("ok", "conditional requests", "off (DEDUP_CONDITIONAL=False): recrawls download every page")
        return
    blocked = blocked_by(settings)
    if blocked:
        report.add("warn", "conditional requests", f"none in a crawl: {blocked}",
                   "HTTPCACHE_ENABLED = False for the recrawls that should ask the server")
        return
    copies = config.keeps_copies()
    report.add("ok", "conditional requests",
               "on: a recrawl's requests carry the kept pages' validators; " + (
                   "kept copies let a 304 reach the spider (DEDUP_CONDITIONAL_COPY)" if copies else
                   "no copies are kept, so only requests marked dedup_leaf are sent conditional"))


def _index(report: Report, config) -> None:
    from ..exceptions import DedupError
    from ..stores.base import FORMAT_VERSION
    from ..tools.indexes import open_index

    if config.backend == "memory":
        report.add("warn", "index", "DEDUP_BACKEND=memory: the index lives in one process and is gone after the crawl",
                   "DEDUP_BACKEND=lmdb (the default) keeps it for the next crawl")
        return
    settings = {"DEDUP_BACKEND": config.backend}
    if config.backend == "redis":
        where = f"{config.redis_url} (prefix {config.redis_prefix!r})"
        settings.update({"DEDUP_REDIS_URL": config.redis_url, "DEDUP_REDIS_PREFIX": config.redis_prefix})
        path = os.curdir
    elif config.backend == "lmdb":
        path = where = os.path.abspath(str(config.dir))
        report.where["index"] = path
        if not os.path.isfile(os.path.join(path, "data.mdb")):
            parent = _existing_parent(path)
            if not os.access(parent, os.W_OK):
                report.add("fail", "index", f"{path}: not made yet, and {parent} is not writable",
                           "give DEDUP_DIR a folder the crawl's user can write")
            else:
                report.add("ok", "index", f"{path}: not made yet (the first crawl makes it)")
            return
    else:
        report.add("ok", "index", f"DEDUP_BACKEND={config.backend} (not checked here)")
        return
    report.where.setdefault("index", where)
    try:
        index = open_index(path, readonly=True, settings=settings)
    except DedupError as exc:
        report.add("fail", "index", f"{where}: {exc}")
        return
    except Exception as exc:  # noqa: BLE001 - Redis not reachable, a permission: the finding itself
        report.add("fail", "index", f"{where}: cannot be opened: {type(exc).__name__}: {str(exc)[:200]}",
                   "start redis-server / check DEDUP_REDIS_URL" if config.backend == "redis" else "")
        return
    try:
        import json

        pages = index.read(lambda t: t.doc_count())
        params = index.read(lambda t: t.meta_get("params"))
        fixed = json.loads(params) if params else {}
        users = []
        if config.backend == "lmdb":
            from ..stores.lmdb import other_users

            env = getattr(index.store, "env", None)
            users = other_users(env) if env is not None else []
    finally:
        index.store.close()
    size = ""
    if config.backend == "lmdb":
        size = f", {os.path.getsize(os.path.join(path, 'data.mdb')) / 2**20:.1f} MiB"
    busy = f"; open in process {', '.join(map(str, users))} (a crawl running now)" if users else ""
    report.add("ok", "index", f"{where}: {plural(pages, 'page')} kept, plan k={index.plan.k}, format {index.version}{size}{busy}")
    if index.version != FORMAT_VERSION:  # (read-only here: a migratable one is read as it is)
        report.add("warn", "index format", f"{where}: format {index.version}, this crawler-dedup writes "
                   f"{FORMAT_VERSION}; the next crawl migrates it in place, once",
                   f"`crawler-dedup index stats --dir {path}` migrates it now; `index verify` reads it as it is")
    clash = [f"DEDUP_K: index {index.plan.k}, settings {config.k}"] if index.plan.k != config.k else []
    clash += [f"DEDUP_{name.upper()}: index {value}, settings {getattr(config, name)}"
              for name, value in fixed.items() if hasattr(config, name) and getattr(config, name) != value]
    if clash:
        report.add("fail", "index vs settings", "; ".join(clash) + ": a crawl would stop at its start",
                   "set them as the index has them, or give a new DEDUP_DIR")


def _existing_parent(path: str) -> str:
    while path and not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path or os.curdir


def _droplog(report: Report, config) -> None:
    path = os.path.abspath(str(config.droplog))
    report.where["droplog"] = path
    if not os.path.exists(path):
        parent = _existing_parent(os.path.dirname(path))
        if os.access(parent, os.W_OK):
            report.add("ok", "drop log", f"{path}: none yet (a crawl writes it when it drops a page)")
        else:
            report.add("fail", "drop log", f"{path}: none yet, and {parent} is not writable",
                       "give DEDUP_DROPLOG a file the crawl's user can write")
        return
    if not os.path.isfile(path) or not os.access(path, os.R_OK):
        report.add("fail", "drop log", f"{path}: not a readable file")
        return
    count, last, torn = _lines_and_last(path)  # not parsed whole: a drop log of 10^6 lines takes 8 s
    size = os.path.getsize(path) / 2**20
    detail = f"{path}: {plural(count, 'drop')}, {size:.1f} MiB" + (f", the latest at {last}" if last else "")
    if torn:
        report.add("warn", "drop log", f"{detail}; its last line is cut short (a crash while it was written)",
                   "the next crawl starts its first line on a line of its own; `crawler-dedup inspect` counts it")
    else:
        report.add("ok", "drop log", detail)
    if not os.access(path, os.W_OK):
        report.add("fail", "drop log", f"{path} is not writable: a crawl cannot append to it")


def _lines_and_last(path: str) -> tuple[int, str | None, bool]:
    """(complete lines, the `time` of the last one, whether a cut-short line ends the file)."""
    import json

    count, tail = 0, b""
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            count += block.count(b"\n")
            tail = (tail + block)[-65536:]
    torn = bool(tail) and not tail.endswith(b"\n")
    lines = tail.split(b"\n")
    last = lines[-2] if len(lines) > 1 else b""
    try:
        when = json.loads(last).get("time")
    except (ValueError, AttributeError):
        when = None
    return count, when if isinstance(when, str) else None, torn


# -- libraries -------------------------------------------------------------------------------

def _libraries(report: Report, settings, overrides: dict) -> None:
    from importlib import metadata

    needed = ["scrapy", "trafilatura", "lxml", "lxml_html_clean", "numpy", "xxhash", "lmdb", "warcio", "rich"]
    backend = str(overrides.get("DEDUP_BACKEND") or (settings.get("DEDUP_BACKEND") if settings is not None else None)
                  or "lmdb")
    if backend == "redis":
        needed.append("redis")
    found, missing = [], []
    for name in needed:
        try:
            found.append(f"{name} {metadata.version(name.replace('_', '-'))}")
        except metadata.PackageNotFoundError:
            missing.append(name)
    try:
        import trafilatura  # noqa: F401 - it imports lxml_html_clean; a broken pair fails here
    except Exception as exc:  # noqa: BLE001
        missing.append(f"trafilatura ({type(exc).__name__}: {str(exc)[:100]})")
    if missing:
        extra = ' (pip install "crawler-dedup[redis]")' if "redis" in missing else ""
        report.add("fail", "libraries", f"missing or broken: {', '.join(missing)}", f"pip install crawler-dedup{extra}")
    else:
        report.add("ok", "libraries", ", ".join(found))


def _print(report: Report) -> None:
    from .out import fancy, table

    marks = {"ok": "ok", "warn": "warn", "fail": "FIX"}
    rows = []
    for c in report.checks:
        rows.append([marks[c["status"]], c["check"], c["detail"] + (f"\n-> {c['fix']}" if c["fix"] and fancy() else "")])
        if c["fix"] and not fancy():
            rows.append(["", "", f"-> {c['fix']}"])
    table(["", "check", "finding"], rows)
    print("all is well" if report.ok else "something needs fixing (FIX rows)")
