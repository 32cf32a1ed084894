"""Which site a page is on: its registered domain (news.example.co.uk and www.example.co.uk are
one site; two blogs on blogspot.com are two), from the public suffix list tldextract ships."""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import urlsplit


@lru_cache(maxsize=1)
def _public_suffixes():
    import tldextract

    # the list shipped with tldextract (no download), private suffixes too: two blogs on
    # blogspot.com are two sites
    return tldextract.TLDExtract(suffix_list_urls=(), include_psl_private_domains=True)


@lru_cache(maxsize=65536)
def _domain_of_host(host: str) -> str:
    return _public_suffixes()(host).top_domain_under_public_suffix or host.removeprefix("www.")  # (no known suffix)


def registered_domain(url: str | None) -> str | None:
    if not url:
        return None
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    return _domain_of_host(host) if host else None


def same_site(url: str | None, other_url: str | None) -> bool:
    """Both URLs under one registered domain."""
    a, b = registered_domain(url), registered_domain(other_url)
    return a is not None and a == b
