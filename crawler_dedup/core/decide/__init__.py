"""Steps 6-7: is the page a duplicate of a kept one? The verifiers, the matching functions
(`matching`), the guards (titles, notices), the knowledge of sites (their boilerplate lines and
headlines, churn), the chain of named rules (`rules`), the claims that keep a duplicate group once
on a store without transactions, and the keep-best policies of a finished collection."""
