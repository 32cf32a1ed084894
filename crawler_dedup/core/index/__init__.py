"""Step 5 and the store side of step 8: the index of kept pages over a store. Its records and
their format, the permuted tables and their plan, the index (`neardup.NearDupIndex`) and its
transaction's view of the tables (`txn.IndexTxn`), what the rules read of it for a page
(`lookups`), what a response leaves for its URL's next request (`fetches`, `revalidation`), the
plugins' saved state, and the checks, repairs and migrations of an index."""
