"""Scrapy settings of the crawler-dedup project (scrapy.cfg: default = settings)."""

BOT_NAME = "crawler_dedup"
SPIDER_MODULES = ["spiders"]
NEWSPIDER_MODULE = "spiders"

ADDONS = {"crawler_dedup.addon.DedupAddon": 0}

ROBOTSTXT_OBEY = True
CONCURRENT_REQUESTS_PER_DOMAIN = 8
FEED_EXPORT_ENCODING = "utf-8"

# DEDUP_* settings: see the README's settings table; command line: -s DEDUP_K=3
