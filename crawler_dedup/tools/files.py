"""Where scans read and write: a local path, or a URL of a filesystem pyarrow reaches (`s3://`
and `s3a://`, `gs://`, `hdfs://`, `file://`). Object stores take their credentials and endpoint
from the standard chain of each machine (environment, ~/.aws, an instance or pod role: refreshed
by the SDK; a cluster's executors are never handed the driver's), the endpoint from AWS_ENDPOINT_URL; the region from
AWS_REGION/AWS_DEFAULT_REGION, else the bucket's own (asked once a bucket). The scans' readers and
writers go through these few calls, in the driver and in Spark's executors alike; `expand`
turns a glob or a list file into the inputs, from the store's listing.
"""

from __future__ import annotations

import functools
import io
import os
import re
from urllib.parse import urlsplit

from ..exceptions import SourceError

SCHEMES = ("s3", "s3a", "s3n", "gs", "gcs", "hdfs", "viewfs", "abfs", "abfss")


def is_url(path: str) -> bool:
    """A path on a filesystem of its own (not this machine's: `file://` is this machine's)."""
    scheme = urlsplit(str(path)).scheme.lower()
    return scheme in SCHEMES or (len(scheme) > 1 and scheme != "file" and "://" in str(path))


def local(path: str) -> str:
    return urlsplit(path).path if str(path).startswith("file://") else str(path)


@functools.lru_cache(maxsize=16)
def _fs(scheme: str, netloc: str):
    try:
        from pyarrow import fs
    except ImportError:
        raise SourceError(f"{scheme}:// paths need pyarrow: pip install 'crawler-dedup[spark]'") from None
    if scheme in ("s3", "s3a", "s3n"):
        endpoint = os.environ.get("AWS_ENDPOINT_URL") or os.environ.get("AWS_ENDPOINT_URL_S3")
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        if endpoint:
            parts = urlsplit(endpoint)
            return fs.S3FileSystem(endpoint_override=parts.netloc or endpoint, scheme=parts.scheme or "https",
                                   region=region or "us-east-1")
        if region is None and netloc:
            try:  # the bucket's own region (a bucket outside the SDK's default is read there)
                region = fs.resolve_s3_region(netloc)
            except Exception:  # noqa: BLE001 - no answer: the SDK's own default chain
                region = None
        return fs.S3FileSystem(region=region) if region else fs.S3FileSystem()
    if scheme in ("gs", "gcs"):
        return fs.GcsFileSystem()
    filesystem, _ = fs.FileSystem.from_uri(f"{scheme}://{netloc}/")
    return filesystem


def _where(path: str):
    """(pyarrow filesystem, its path) for a URL."""
    parts = urlsplit(path)
    scheme = parts.scheme.lower()
    filesystem = _fs(scheme, parts.netloc if scheme not in ("gs", "gcs") else "")
    if scheme in ("s3", "s3a", "s3n", "gs", "gcs"):
        return filesystem, (parts.netloc + parts.path).rstrip("/")
    return filesystem, parts.path.rstrip("/") or "/"


def open_read(path: str):
    """A seekable binary file for reading (lines too: buffered over the store's random access)."""
    if not is_url(path):
        return open(local(path), "rb")
    filesystem, where = _where(path)
    return io.BufferedReader(_Raw(filesystem.open_input_file(where)), buffer_size=1 << 20)


class _Raw(io.RawIOBase):
    """pyarrow's random-access file as a raw file (its own has no readline)."""

    def __init__(self, native):
        self.native = native

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.native.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.native.seek(offset, whence)

    def tell(self) -> int:
        return self.native.tell()

    def close(self) -> None:
        self.native.close()
        super().close()


def open_write(path: str):
    """A binary file for writing (an object is stored whole when it is closed)."""
    if not is_url(path):
        return open(local(path), "wb")
    filesystem, where = _where(path)
    return filesystem.open_output_stream(where)


_LISTED: dict[str, tuple[str, int, float]] = {}  # what this run's listings said (expand): no call a file


def info(path: str) -> tuple[str, int, float]:
    """('file' | 'dir' | 'none', size, mtime) of a path."""
    if path in _LISTED:
        return _LISTED[path]
    if not is_url(path):
        p = local(path)
        if os.path.isdir(p):
            return "dir", 0, 0.0
        if os.path.isfile(p):
            st = os.stat(p)
            return "file", st.st_size, st.st_mtime
        return "none", 0, 0.0
    from pyarrow import fs

    filesystem, where = _where(path)
    got = filesystem.get_file_info(where)
    kind = {fs.FileType.File: "file", fs.FileType.Directory: "dir"}.get(got.type, "none")
    mtime = got.mtime.timestamp() if got.mtime is not None else 0.0
    return kind, int(got.size or 0) if kind == "file" else 0, mtime


def size(path: str) -> int:
    return info(path)[1]


def join(base: str, *parts: str) -> str:
    if not is_url(base):
        return os.path.join(local(base), *parts)
    return "/".join([base.rstrip("/"), *parts])


def makedirs(path: str) -> None:
    if not is_url(path):
        os.makedirs(local(path), exist_ok=True)
        return
    filesystem, where = _where(path)
    filesystem.create_dir(where, recursive=True)


def listdir(path: str) -> list[str]:
    if not is_url(path):
        return os.listdir(local(path))
    from pyarrow import fs

    filesystem, where = _where(path)
    return [os.path.basename(i.path) for i in filesystem.get_file_info(fs.FileSelector(where, allow_not_found=True))]


def sizes(path: str) -> dict[str, int]:
    """{name: size} of the files in a folder, from one listing."""
    if not is_url(path):
        p = local(path)
        return {n: os.path.getsize(os.path.join(p, n)) for n in os.listdir(p) if os.path.isfile(os.path.join(p, n))}
    from pyarrow import fs

    filesystem, where = _where(path)
    return {os.path.basename(i.path): int(i.size or 0)
            for i in filesystem.get_file_info(fs.FileSelector(where, allow_not_found=True)) if i.type == fs.FileType.File}


def write_bytes(path: str, data: bytes) -> None:
    """`data` as the whole file `path`, never half of it (here: a file beside it, renamed)."""
    if is_url(path):
        with open_write(path) as fh:  # (an object is stored whole when closed)
            fh.write(data)
        return
    tmp = local(path) + ".tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, local(path))


def remove(path: str) -> None:
    if not is_url(path):
        p = local(path)
        if os.path.isdir(p):
            import shutil

            shutil.rmtree(p, ignore_errors=True)
        elif os.path.exists(p):
            os.remove(p)
        return
    filesystem, where = _where(path)
    kind = info(path)[0]
    if kind == "dir":
        filesystem.delete_dir(where)
    elif kind == "file":
        filesystem.delete_file(where)


def replace(src: str, dst: str) -> None:
    """`src` as `dst` (a rename here; on an object store, a copy and a delete)."""
    if not is_url(dst):
        os.replace(local(src), local(dst))
        return
    filesystem, a = _where(src)
    _, b = _where(dst)
    filesystem.move(a, b)


def writable(path: str) -> str | None:
    """Why `path` (a folder, made if missing) cannot be written, or None: a small file is
    written there and deleted (a scan says so before any work)."""
    probe = join(path, ".crawler-dedup-write-test")
    try:
        makedirs(path)
        with open_write(probe) as fh:
            fh.write(b"ok")
        remove(probe)
    except Exception as exc:  # noqa: BLE001 - any refusal is the answer, said in one line
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return f"{type(exc).__name__}: {first[:300]}"
    return None


def remember(path: str) -> None:
    """Ask the store about `path` now and keep its answer for this run (the stages ask again)."""
    _LISTED.pop(path, None)
    got = info(path)
    if got[0] == "file":
        _LISTED[path] = got


WILD = frozenset("*?[")


def expand(inputs: list[str], nested: bool = False) -> list[str]:
    """The inputs a user gives, as files: a path or URL as it is; a glob (`s3://crawl/*.warc.gz`,
    `data/**/*.jsonl`) from one listing of the folder before its first wildcard, sorted; `@FILE` a
    list file (a path, URL or glob a line; `#` comments), itself here or on a store. A glob that
    matches nothing is an error (a typo must not scan nothing)."""
    if not nested:
        _LISTED.clear()  # (a listing is this run's: an earlier one in this process may be stale)
    out: list[str] = []
    for arg in inputs:
        if arg.startswith("@"):
            with open_read(arg[1:]) as fh:
                listed = [ln.strip() for ln in fh.read().decode("utf-8").splitlines()]
            named = [ln for ln in listed if ln and not ln.startswith("#")]
            if not named:
                raise SourceError(f"{arg[1:]}: the list names no input")
            out += expand(named, nested=True)
        elif WILD & set(arg) and info(arg)[0] == "none":
            got = _glob(arg)
            if not got:
                raise SourceError(f"{arg}: no file matches")
            out += got
        else:
            out.append(arg)
    return out


def _glob(pattern: str) -> list[str]:
    cut = min(pattern.index(c) for c in WILD if c in pattern)
    base = pattern[:cut].rsplit("/", 1)[0] if "/" in pattern[:cut] else ""
    rest = pattern[len(base) + 1:] if base else pattern
    deep = "**" in rest or "/" in rest
    found: list[tuple[str, tuple[str, int, float]]] = []
    rels: dict[str, str] = {}  # path -> its part under `base`, matched against the pattern's rest
    if not is_url(base or "."):
        top = local(base) or "."
        for root, _, names in os.walk(top):
            for name in names:
                full = os.path.join(root, name)
                path = os.path.relpath(full, top) if not base else full
                rels[path] = os.path.relpath(full, top).replace(os.sep, "/")
                found.append((path, ("file", 0, 0.0)))
            if not deep:
                break
    else:
        from pyarrow import fs

        filesystem, where = _where(base)
        scheme = base.split("://", 1)[0]
        for item in filesystem.get_file_info(fs.FileSelector(where, recursive=deep, allow_not_found=True)):
            if item.type == fs.FileType.File:
                path = f"{scheme}://{item.path}" if scheme in ("s3", "s3a", "s3n", "gs", "gcs") else \
                    base[:len(base) - len(where)] + item.path
                found.append((path, ("file", int(item.size or 0),
                                     item.mtime.timestamp() if item.mtime is not None else 0.0)))
    match = re.compile(_regex(rest) + r"\Z").match
    start = len(base.rstrip("/")) + 1 if base else 0
    got = sorted(p for p, _ in found if match(rels.get(p, p[start:])))
    if not is_url(base or "."):
        _LISTED.update((p, _stat(p)) for p in got)
    else:
        chosen = set(got)
        _LISTED.update((p, i) for p, i in found if p in chosen)
    return got


def _regex(pattern: str) -> str:
    """A glob as a regex: `*` and `?` within a folder's name, `**/` any folders (none too)."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 1:]:
            end = pattern.index("]", i + 1)
            out.append("[" + pattern[i + 1:end].replace("!", "^", 1) + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def _stat(path: str) -> tuple[str, int, float]:
    st = os.stat(path)
    return "file", st.st_size, st.st_mtime
