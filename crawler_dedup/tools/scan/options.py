"""What a scan is given (Options) and how it answers along the way (Progress, ScanError).

Every pass takes these, so they sit apart from the passes (no pass imports another).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ...core.decide.policy import DEFAULT_POLICY
from ...exceptions import ScanError
from ..sources import Fields

__all__ = ["Options", "Progress", "ScanError", "checked_inputs"]


@dataclass
class Options:
    inputs: list[str]
    out: str
    policy: str = DEFAULT_POLICY
    jobs: int = 1
    fields: Fields = field(default_factory=Fields)
    settings: dict = field(default_factory=dict)  # DEDUP_* (from -s and the project)
    restart: bool = False


def checked_inputs(opts: Options) -> list[str]:
    """The format of each input, and --out not a file; else a ScanError saying what is wrong
    (both engines start so)."""
    from concurrent.futures import ThreadPoolExecutor

    from .. import files, sources

    def check(path: str) -> str:
        if files.is_url(path):  # what a store said is kept for the run (files.info): no second call a file
            files.remember(path)
        return sources.input_format(path)

    # many inputs on a store: their first bytes asked 32 at a time (one by one, 10^5 objects take hours)
    with ThreadPoolExecutor(max_workers=max(1, min(32, len(opts.inputs)))) as pool:
        try:
            formats = list(pool.map(check, opts.inputs))
        except sources.SourceError as exc:
            raise ScanError(str(exc)) from None
    if files.info(opts.out)[0] == "file":
        raise ScanError(f"--out {opts.out} is a file: give a folder (it is made if missing)")
    if not files.is_url(opts.out):  # made now: a folder that cannot be made stops the scan before any work
        import os

        try:
            os.makedirs(files.local(opts.out), exist_ok=True)
        except OSError as exc:
            raise ScanError(f"--out {opts.out} cannot be made: {exc.strerror or exc}") from None
    return formats


Progress = Callable[[str, int, int, int], None]  # (pass, done, total, pages)


def _quiet(phase: str, done: int, total: int, pages: int) -> None:
    pass
