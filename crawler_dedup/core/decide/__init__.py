"""Steps 6-7: is the page a duplicate of a kept one? The verifiers, the measurements of a (page,
kept page) pair (`measures`) and the score that weighs them (`model`), the candidates weighed
(`matching`), the knowledge of sites (their boilerplate lines and title parts, churn), the chain
of named rules (`rules`), the claims that keep a duplicate group once on a store without
transactions, and the keep-best policies of a finished collection."""
