"""The script spark-submit runs: `spark-submit [options] submit.py scan INPUT... --out DIR --engine spark`
(spark-submit runs a file, not `-m`); its arguments are the crawler-dedup command line."""

import sys

from crawler_dedup.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
