"""The detection core: plain Python, no Scrapy. Steps 1-8 in data-flow order: extract, tokens,
features, simhash, sketch, tables, index, verify, decide; dedup.Deduplicator runs them."""
