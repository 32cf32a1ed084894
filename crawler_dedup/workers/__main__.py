"""`python -m crawler_dedup.workers`: one worker process (process.py), as the pool starts it."""

import sys

from .process import main

sys.exit(main())
