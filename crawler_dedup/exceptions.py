"""Errors raised by crawler-dedup, one tree (no Scrapy here: the core imports this module).

    DedupError                  every error of crawler-dedup's own
    ├── ConfigError             a DEDUP_* setting has a value that is not allowed
    ├── ModelError              a score model file (DEDUP_MODEL) that cannot be read or used
    ├── StoreError              the index store cannot be opened, read or written
    │   ├── StoreDamaged        its file is damaged or not an index (index verify / rebuild)
    │   ├── StoreFull           it cannot grow any more (LMDB: its map at 1 TiB, or the disk is full)
    │   └── StoreFormat         another format version, plan or fingerprint settings
    ├── InputError              an input that cannot be read at all, named in the message
    │   ├── LogError            a drop log (missing, a folder, unreadable)
    │   └── SourceError         a scan or `index add` input (a WARC, a JSON-lines export)
    ├── ToolError               an after-crawl command cannot go on (`exit_code`)
    │   ├── CliError            a command's usage or its input (exit 2) or what it asked for is not there (1)
    │   ├── ShowError           show, compare, report
    │   ├── ScanError           scan, index add
    │   └── DemoError           the demo
    └── WorkerDied              an extraction worker process died (its page is kept, counted)

The Scrapy shell raises Scrapy's own exceptions for duplicates: `pipeline.DuplicateItem` (a
DropItem) and `middleware.DuplicateResponse` (an IgnoreRequest).
"""


class DedupError(Exception):
    """Base class of crawler-dedup's own errors."""


class ConfigError(DedupError):
    """A DEDUP_* setting has a value that is not allowed."""

    def __init__(self, setting: str, value, allowed: str, unknown: bool = False):
        self.setting, self.value, self.allowed = setting, value, allowed
        super().__init__(f"{setting} is not a known setting: {allowed}" if unknown
                         else f"{setting}={value!r} is not allowed: {allowed}")


class ModelError(DedupError):
    """A score model file (DEDUP_MODEL, `eval --fit`'s) that cannot be read or used."""


class StoreError(DedupError):
    """The index store cannot be opened, read or written."""


class StoreDamaged(StoreError):
    """The store's file is damaged or not an index (`crawler-dedup index verify|rebuild`)."""


class StoreFull(StoreError):
    """The store cannot grow any more: LMDB's map reached its limit, or the disk holding
    DEDUP_DIR is full (the message says which, and what is free)."""


class StoreFormat(StoreError):
    """The store on disk has another format version or another plan."""


class InputError(DedupError):
    """An input that cannot be read at all (a message for the user, naming the file)."""


class LogError(InputError):
    """A drop log that cannot be read at all (missing, a folder, unreadable): exit 2."""


class SourceError(InputError):
    """A scan or `index add` input that cannot be read at all."""


class ToolError(DedupError):
    """An after-crawl command cannot go on: the CLI prints the message and exits with `exit_code`."""

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.message, self.exit_code = message, exit_code


class CliError(ToolError):
    """A command that cannot go on: `main` prints `crawler-dedup COMMAND: message` on stderr and
    exits with `code` (2 for a usage or input error, 1 when what was asked for is not there)."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message, code)

    @property
    def code(self) -> int:
        return self.exit_code


class ShowError(ToolError):
    """show, compare or report cannot go on (no index, no such page, an unreadable source)."""


class ScanError(ToolError):
    """scan or `index add` cannot go on (an output folder of another scan, a policy clash)."""


class DemoError(ToolError):
    """The demo cannot run (no free port, the crawl failed)."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message, exit_code)


class WorkerDied(DedupError):
    """An extraction worker process died or its result did not come back (the page is kept)."""
