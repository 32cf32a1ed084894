"""After-crawl tools behind the `crawler-dedup` commands: reading a drop log, explaining a drop,
the HTML report, restoring dropped items, scoring labelled pairs."""
