"""A crawl spread over many processes and machines: scrapy-redis shares the request queue,
crawler-dedup shares the near-duplicate index, on one Redis (their own keys) or apart.

Every crawler machine runs `scrapy crawl site` with the same REDIS_URL; URLs are fed with
`redis-cli LPUSH site:start_urls URL...` (README: "Many machines, one index"). scrapy-redis needs
one server (its queue's commands span keys a Redis Cluster would put on several nodes); the index
can live on a Redis Cluster: give a node's URL in DEDUP_REDIS_URL (try-cluster.sh runs it).
"""

import os

BOT_NAME = "distributed"
SPIDER_MODULES = ["distributed.spiders"]

REDIS_URL = os.environ.get("REDIS_URL", "redis://localhost:6379/0")

# scrapy-redis: one request queue and one request fingerprint set for every process
SCHEDULER = "scrapy_redis.scheduler.Scheduler"
DUPEFILTER_CLASS = "scrapy_redis.dupefilter.RFPDupeFilter"
SCHEDULER_PERSIST = True  # a process that stops leaves the queue to the others
MAX_IDLE_TIME_BEFORE_CLOSE = int(os.environ.get("MAX_IDLE_TIME_BEFORE_CLOSE", "0"))  # 0: wait for URLs for ever

# crawler-dedup: one near-duplicate index for every process (keys {site-crawl}:..., apart from scrapy-redis's)
ADDONS = {"crawler_dedup.addon.DedupAddon": 0}
DEDUP_BACKEND = "redis"
DEDUP_REDIS_URL = os.environ.get("DEDUP_REDIS_URL", REDIS_URL)  # the index: this server, or a cluster's node
DEDUP_REDIS_PREFIX = "site-crawl"
# each process keeps its own drop log and state directory (on its own machine)
DEDUP_DIR = os.path.abspath(os.environ.get("DEDUP_DIR", ".dedup"))  # (a relative one would be inside .scrapy/)

ROBOTSTXT_OBEY = True
FEED_EXPORT_ENCODING = "utf-8"
