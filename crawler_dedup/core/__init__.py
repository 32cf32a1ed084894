"""The detection core: plain Python, no Scrapy, no concrete store. In data-flow order: `page/`
(steps 1-4: markup to text, tokens, features, fingerprint), `index/` (step 5 and filing: the
index of kept pages over a store), `decide/` (steps 6-7: verification and the rule chain), and on
top `dedup.Deduplicator`, which runs them for each page in one write transaction (step 8);
`verdict.py` is what a decision says, the vocabulary every stage speaks."""
