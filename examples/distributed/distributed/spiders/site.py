from scrapy_redis.spiders import RedisSpider


class SiteSpider(RedisSpider):
    """Takes its start URLs from the Redis list `site:start_urls`; every process shares it."""

    name = "site"

    def parse(self, response):
        yield {"url": response.url, "title": response.css("title::text").get(default="").strip()}
