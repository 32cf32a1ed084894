"""Where scans read and write: a local path, or a URL of a filesystem pyarrow reaches (`s3://`
and `s3a://`, `gs://`, `hdfs://`, `file://`). Object stores take their credentials and endpoint
from the standard environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL,
AWS_DEFAULT_REGION). The scans' readers and writers go through these few calls, in the driver and
in Spark's executors alike.
"""

from __future__ import annotations

import functools
import io
import os
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
        region = os.environ.get("AWS_DEFAULT_REGION") or os.environ.get("AWS_REGION") or "us-east-1"
        if endpoint:
            parts = urlsplit(endpoint)
            return fs.S3FileSystem(endpoint_override=parts.netloc or endpoint, scheme=parts.scheme or "https",
                                   region=region)
        return fs.S3FileSystem(region=region)
    if scheme in ("gs", "gcs"):
        return fs.GcsFileSystem()
    filesystem, _ = fs.FileSystem.from_uri(f"{scheme}://{netloc}/")
    return filesystem


def _where(path: str):
    """(pyarrow filesystem, its path) for a URL."""
    parts = urlsplit(path)
    scheme = parts.scheme.lower()
    filesystem = _fs(scheme, parts.netloc if scheme not in ("s3", "s3a", "s3n", "gs", "gcs") else "")
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


def info(path: str) -> tuple[str, int, float]:
    """('file' | 'dir' | 'none', size, mtime) of a path."""
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
