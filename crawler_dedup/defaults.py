"""Every DEDUP_* setting with its default (ENABLED first, the rest alphabetical)."""

DEDUP_ENABLED = True
DEDUP_ALLOW: list[str] = []  # URL regexes that are never checked nor dropped
DEDUP_BACKEND = "lmdb"  # lmdb | memory | a dotted path to a Store class
DEDUP_CANONICAL = True  # a page named by a kept copy's rel=canonical/og:url replaces that copy (superseded)
DEDUP_COMMIT_BATCH = 64  # pages decided in one durable commit at most (1 = a commit per page)
DEDUP_COMMIT_DELAY = 0.02  # seconds a decided page may wait for others to share its commit (0 = the next reactor turn)
DEDUP_CONCEPTUAL = "off"  # off | flag | drop: LSI conceptual duplicates (seed 000)
DEDUP_CONCEPTUAL_THRESHOLD = 0.9  # LSI cosine for a conceptual duplicate
DEDUP_CONTAINMENT = 0.9  # also drop when this share of the new page's shingles is found in the kept page (0 = off)
DEDUP_DEBUG = False  # log every verdict, not only drops
DEDUP_DIR = None  # LMDB directory; None = <scrapy data dir>/dedup
DEDUP_DROPLOG = None  # JSONL drop log; None = <DEDUP_DIR>/droplog.jsonl
DEDUP_DROPLOG_ITEMS = True  # write the whole dropped item into its drop-log line
DEDUP_DRY_RUN = False  # flag duplicates in the drop log, never drop
DEDUP_EXPECTED_PAGES = 1_000_000  # sizes the permuted tables when an index is created
DEDUP_EXTRACT_MODE = "thorough"  # thorough | fast (no trafilatura fallback extractors)
DEDUP_FEATURES = "shingles"  # shingles (word w-shingles) | docimage (seed 001: top TF-IDF words per part)
DEDUP_ITEM_HTML_FIELD = "html"
DEDUP_ITEM_TEXT_FIELD = "text"
DEDUP_ITEM_URL_FIELD = "url"
DEDUP_K = 3  # Hamming distance (bits) within which two simhashes are candidates
DEDUP_LMDB_MAP_SIZE = 256 * 1024**2  # initial LMDB map; doubles on MapFullError
DEDUP_LMDB_SYNC = True  # fsync each commit (a kill never loses a kept page)
DEDUP_LOGSTATS_INTERVAL = 60  # seconds between "Dedup: checked N pages ..." crawl-log lines (0 = off)
DEDUP_LSI_DIMS = 64  # concepts of the LSI model
DEDUP_LSI_TRAIN = 300  # kept pages the LSI model is fitted on, once
DEDUP_MAX_BYTES = 5 * 1024**2  # larger bodies are skipped (counted), not extracted
DEDUP_MIN_RESEMBLANCE = 0.2  # a containment match needs at least this resemblance too
DEDUP_MIN_TOKENS = 15  # shorter texts are kept without a near-duplicate check
DEDUP_RESET = False  # start from an empty index; the old DEDUP_DIR is moved aside (also -a dedup_reset=1)
DEDUP_REVISIT = "update"  # a page whose URL is in the index: update | keep (never drop a revisit) | drop (no URL check)
DEDUP_SHINGLE = 3  # words per shingle
DEDUP_SKETCH_PROBES = 8  # smallest shingle hashes filed per page: candidates beyond k bits
DEDUP_STORE_TEXT = True  # kept pages' text (zlib) in the index, dropped text in the drop log: for `show`
DEDUP_THRESHOLD = 0.5  # minimum verifier score to drop a candidate
DEDUP_UNCHANGED = "drop"  # a revisit with the same text (dates, counters aside): drop (items only; links followed) | keep
DEDUP_VERIFIER = "resemblance"  # resemblance (seed 003) | qgram (seed 004) | swlr (seed 002)
DEDUP_WEIGHTING = "none"  # none | tfidf (seed 000: shingles weighted by TF-IDF in the simhash)
DEDUP_WINDOW = 0  # seconds a kept page matches (0 = forever); older pages are removed as new ones come
DEDUP_WORKERS = 0  # worker processes for extraction; 0 = in the crawler's thread
