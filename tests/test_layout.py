"""The layout is the data flow, and stays so: the core runs without Scrapy and without a concrete
store, in folders a reader can take in at a glance that import one way (page, then index, then
decide, then the orchestrator), Scrapy is the shell's alone, the package's top is small, lmdb is
imported only by the LMDB store, no module imports itself round a circle, every module is small,
and docs/internals.md names every module there is."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "crawler_dedup"
MAX_LINES = 450
MAX_MODULES = 12  # a folder of the core a reader takes in at a glance


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py"))


def imports(path: Path) -> list[str]:
    """Absolute names of the modules `path` imports (relative imports resolved), anywhere in it."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            out.append(base)
            out += [f"{base}.{a.name}" for a in node.names]
    return out


def test_no_package_module_is_over_450_lines():
    long = {str(p.relative_to(ROOT)): n for p in modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"split these modules (one job each, under {MAX_LINES} lines): {long}"


def test_lmdb_is_imported_only_under_stores_lmdb():
    outside = [str(p.relative_to(ROOT)) for p in modules()
               if "lmdb" in {name.split(".")[0] for name in imports(p)}
               and p.parent != PACKAGE / "stores" / "lmdb"]
    assert not outside


def test_the_core_imports_no_concrete_store_and_no_tool():
    bad = {}
    for path in (PACKAGE / "core").rglob("*.py"):
        wrong = [n for n in imports(path) if n.startswith("crawler_dedup.")
                 and not n.startswith(("crawler_dedup.core", "crawler_dedup.config", "crawler_dedup.exceptions",
                                       "crawler_dedup.stores.base"))]
        if wrong:
            bad[str(path.relative_to(PACKAGE))] = wrong
    assert not bad, f"the core may import only itself, config, exceptions and the store contract: {bad}"


def test_the_core_imports_without_scrapy():
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'scrapy' or name.startswith('scrapy.'):\n"
        "            raise ImportError('scrapy is blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import pkgutil, importlib, crawler_dedup.core as core\n"
        "names = [m.name for m in pkgutil.walk_packages(core.__path__, 'crawler_dedup.core.') if not m.ispkg]\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "import crawler_dedup.stores, crawler_dedup.exceptions, crawler_dedup.config\n"
        "from crawler_dedup import Deduplicator, DedupError\n"
        "assert 'scrapy' not in sys.modules\n"
        "print(len(names))\n"
    )
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert got.returncode == 0, got.stderr
    assert int(got.stdout) >= 30


def test_the_core_reads_as_the_flow():
    """core/ is the orchestrator over a folder a stage (page, index, decide), each small enough to
    read at a glance: at most 12 modules at its top and in each folder."""
    core = PACKAGE / "core"
    folders = sorted(p for p in core.rglob("*") if p.is_dir() and p.name != "__pycache__")
    assert {f.name for f in folders} == {"page", "index", "decide"}, folders
    crowded = {str(f.relative_to(PACKAGE)): n for f in [core, *folders]
               if (n := len(list(f.glob("*.py")))) > MAX_MODULES}
    assert not crowded, f"at most {MAX_MODULES} modules a folder of the core: {crowded}"
    assert all((f / "__init__.py").exists() for f in folders)


def module_graph() -> dict[str, set[str]]:
    """Each package module -> the package modules it imports (TYPE_CHECKING imports included; a
    name imported from a package resolves to the module it names, else to the package)."""
    names = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p for p in modules()}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        deps = set()
        for imported in imports(path):
            while imported and imported not in names:
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                deps.add(imported)
        graph[name] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: strongly connected groups of two or more modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle_in_the_package():
    found = cycles(module_graph())
    assert not found, f"modules that import each other round a circle (hand state in instead): {found}"


def test_the_circle_finder_finds_circles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    graph = module_graph()
    assert "crawler_dedup.core.page.tokens" in graph["crawler_dedup.core.page.fingerprint"]
    # a TYPE_CHECKING import counts: the Redis store's parts name the store through a protocol below it
    assert "crawler_dedup.stores.redis.handle" in graph["crawler_dedup.stores.redis.txn"]
    assert "crawler_dedup.stores.redis.store" not in graph["crawler_dedup.stores.redis.txn"]


def test_every_error_is_under_one_tree_and_exported():
    import crawler_dedup
    from crawler_dedup import exceptions

    classes = [c for c in vars(exceptions).values() if isinstance(c, type) and issubclass(c, BaseException)]
    assert all(issubclass(c, crawler_dedup.DedupError) for c in classes)
    assert {c.__name__ for c in classes} <= set(crawler_dedup.__all__)
    for c in classes:  # the drawn tree in the module's docstring names each one
        assert re.search(rf"\b{c.__name__}\b", exceptions.__doc__ or ""), c.__name__
    # no public error class of our own elsewhere in the package outside that tree (a private one
    # that never leaves its module, such as a worker's internal signal, may)
    stray = []
    for path in modules():
        if path.name == "exceptions.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_") and any(
                    isinstance(b, ast.Name) and b.id in ("Exception", "RuntimeError", "ValueError") for b in node.bases):
                stray.append(f"{path.relative_to(ROOT)}:{node.name}")
    assert not stray, stray


def test_internals_names_every_module():
    page = (ROOT / "docs" / "internals.md").read_text(encoding="utf-8")
    missing = []
    for path in modules():
        rel = path.relative_to(PACKAGE)
        if rel.name == "__init__.py" and len(rel.parts) > 1:
            continue  # a package's face: its folder is named
        name = rel.name if len(rel.parts) == 1 else "/".join(rel.parts[-2:])
        if not (re.search(rf"(?<![\w/]){re.escape(rel.name)}\b", page) or name in page):
            missing.append(str(rel))
    assert not missing, f"docs/internals.md does not name: {missing}"


# The core's layers, lowest first: a module may import its own layer and those below it, never one
# above. `verdict` is the vocabulary every layer speaks (it imports nothing of the core); `dedup`
# is the orchestrator on top.
LAYERS = {"crawler_dedup.core.verdict": 0, "crawler_dedup.core.page": 1, "crawler_dedup.core.index": 2,
          "crawler_dedup.core.decide": 3, "crawler_dedup.core.dedup": 4, "crawler_dedup.core": 4}


def layer_of(module: str) -> tuple[str, int] | None:
    for prefix in sorted(LAYERS, key=len, reverse=True):
        if module == prefix or module.startswith(prefix + "."):
            return prefix, LAYERS[prefix]
    return None


def upward(graph: dict[str, set[str]]) -> list[str]:
    """The imports of a core module from a layer above its own."""
    out = []
    for module, deps in sorted(graph.items()):
        mine = layer_of(module)
        for dep in sorted(deps):
            theirs = layer_of(dep)
            if mine and theirs and theirs[1] > mine[1]:
                out.append(f"{module} -> {dep}")
    return out


def test_the_core_layers_import_downward():
    """page/ imports nothing from index/ or decide/, index/ nothing from decide/, and no folder the
    orchestrator (TYPE_CHECKING and function-level imports included): what a lower layer needs from
    a higher one is handed down to it."""
    found = upward(module_graph())
    assert not found, f"a layer of the core imports one above it (move the fact down, or hand it in): {found}"


def test_the_layer_check_finds_an_upward_import():
    graph = {"crawler_dedup.core.page.fingerprint": {"crawler_dedup.core.decide.verify",
                                                    "crawler_dedup.core.page.tokens"},
             "crawler_dedup.core.index.neardup": {"crawler_dedup.core.page.site", "crawler_dedup.core.verdict"},
             "crawler_dedup.core.decide.rules": {"crawler_dedup.core.index.records", "crawler_dedup.core.dedup"}}
    assert upward(graph) == ["crawler_dedup.core.decide.rules -> crawler_dedup.core.dedup",
                             "crawler_dedup.core.page.fingerprint -> crawler_dedup.core.decide.verify"]
    # every module of the core has a layer
    assert all(layer_of(m) for m in module_graph() if m.startswith("crawler_dedup.core"))


def test_the_package_top_is_small_and_scrapy_is_the_shells():
    """At most 12 modules at the package's top (its face, the public paths users write, settings and
    errors); Scrapy imported only by the shell (scrapy/), and by the commands and the demo, which
    read a project's settings or run a crawl."""
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_MODULES, top
    allowed = ("scrapy", "cli", "demo")
    outside = [str(p.relative_to(PACKAGE)) for p in modules()
               if {"scrapy", "itemadapter"} & {n.split(".")[0] for n in imports(p)}
               and p.relative_to(PACKAGE).parts[0] not in allowed]
    assert not outside, f"Scrapy belongs to the shell (crawler_dedup/scrapy/): {outside}"


def test_the_public_paths_users_write_still_work():
    from crawler_dedup import Deduplicator, addon, middleware, pipeline, spider
    from crawler_dedup.scrapy import addon as shell_addon, middleware as shell_middleware

    assert addon.DedupAddon is shell_addon.DedupAddon
    assert middleware.DedupMiddleware is shell_middleware.DedupMiddleware
    assert {"DedupSpiderMiddleware", "DuplicateResponse"} <= set(vars(middleware))
    assert {"DedupPipeline", "DuplicateItem"} <= set(vars(pipeline)) and hasattr(spider, "PagesSpider")
    assert Deduplicator.__module__ == "crawler_dedup.deduplicator"
    # the add-on names the parts by those paths, so a project that placed one itself names the same one
    assert shell_addon.MIDDLEWARE == "crawler_dedup.middleware.DedupMiddleware"
    assert shell_addon.PIPELINE == "crawler_dedup.pipeline.DedupPipeline"
