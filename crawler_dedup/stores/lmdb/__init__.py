"""The LMDB store (the default): `store.py` the store and its transactions, `file.py` the LMDB
file itself (its checks, who has it open, its leaf pages for a rebuild). Nothing outside this
package imports lmdb."""

from .file import check_file, copy_tables, damaged, leaf_rows, meta_pages, other_users, refuse_if_used
from .store import LmdbStore

__all__ = ["LmdbStore", "check_file", "copy_tables", "damaged", "leaf_rows", "meta_pages", "other_users",
           "refuse_if_used"]
