"""Which of two URLs of one page to keep (DEDUP_PREFER_CLEAN_URL): the one a reader would cite.

Two URLs are of one page when they differ only in tracking and session parameters (`utm_*`,
`gclid`, `sessionid`, a `;jsessionid=` path parameter, ...) and in how the query is ordered.
Of two such URLs the cleaner has fewer session parameters (a visitor's own session: never a
URL to cite), then is https rather than http, then has fewer tracking parameters, then a shorter
query, then is shorter, then comes first in plain string order: a total order, so the same URL is kept
whatever order the crawl meets the copies in. No store, no Scrapy: rules.clean_url applies it.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote_plus, urlsplit

# parameters that say where a visitor came from or who they are, never what the page is
TRACKING = frozenset("""gclid gclsrc dclid fbclid msclkid yclid twclid ttclid igshid mc_cid mc_eid _ga _gl _hsenc
_hsmi hsctatracking mkt_tok oly_anon_id oly_enc_id vero_id wickedid rb_clickid s_cid cmpid icid ncid ref_src
ref_url spm scid sr_share trk trkcmpgnid __s""".split())
TRACKING_PREFIXES = ("utm_", "pk_", "mtm_", "hsa_", "matomo_")
SESSION = frozenset("sessionid session_id sessid sid phpsessid jsessionid aspsessionid cfid cftoken zenid osCsid"
                    .lower().split())
_PATH_SESSION = re.compile(r";(?:jsessionid|phpsessid|sid|sessionid)=[^/?#]*", re.I)


def _session(name: str) -> bool:
    return name.lower() in SESSION


def _tracking(name: str) -> bool:
    low = name.lower()
    return low in TRACKING or low.startswith(TRACKING_PREFIXES)


def _parts(url: str) -> tuple[str, str, list[tuple[str, str]], tuple[int, int]] | None:
    """(host, path without session parameters, the query's other pairs sorted, how many session
    and tracking parameters it had); None for a URL that cannot be read."""
    try:
        u = urlsplit(url)
        pairs = parse_qsl(u.query, keep_blank_values=True)
    except ValueError:
        return None
    if u.scheme not in ("http", "https") or not u.hostname:
        return None
    path, in_path = _PATH_SESSION.subn("", u.path)
    kept = sorted((k, v) for k, v in pairs if not _session(k) and not _tracking(k))
    sessions = in_path + sum(1 for k, _ in pairs if _session(k))
    return u.hostname.lower(), path or "/", kept, (sessions, sum(1 for k, _ in pairs if _tracking(k)))


def rank(url: str) -> tuple[int, int, int, int, int, str]:
    """The cleaner URL ranks lower: session parameters, then http before https (a secure URL is
    the one to cite, though one letter longer), tracking parameters, query length, length, the URL."""
    parts = _parts(url)
    sessions, tracking = parts[3] if parts is not None else (1_000, 1_000)
    query = url.partition("?")[2].partition("#")[0]
    plain = 0 if url[:6].lower() == "https:" else 1
    return sessions, plain, tracking, len(query), len(url), url


def same_page(a: str, b: str) -> bool:
    """The URLs differ only in tracking and session parameters and the query's order (and in
    http/https)."""
    pa, pb = _parts(a), _parts(b)
    return pa is not None and pb is not None and pa[:3] == pb[:3]


def cleaner(url: str, kept: str) -> bool:
    """`url` is the same page as `kept` under a cleaner URL: it should be the one kept."""
    return url != kept and same_page(url, kept) and rank(url) < rank(kept)


def without_tracking(url: str, extra: tuple[re.Pattern, ...] = ()) -> tuple[str, list[str]] | None:
    """The URL without its tracking parameters (and those whose names match `extra` in full), the
    others as they were written, in their order; (clean URL, the names taken out), or None when
    there are none (or the URL cannot be read). Session parameters stay: a site may need them."""
    head, sep, fragment = url.partition("#")
    base, mark, query = head.partition("?")
    if not mark or not base.lower().startswith(("http://", "https://")):
        return None
    kept, taken = [], []
    for segment in query.split("&"):
        try:
            name = unquote_plus(segment.partition("=")[0])
        except ValueError:
            return None
        if name and (_tracking(name) or any(p.fullmatch(name) for p in extra)):
            taken.append(name)
        else:
            kept.append(segment)
    if not taken:
        return None
    rest = "&".join(seg for seg in kept if seg)
    return base + ("?" + rest if rest else "") + sep + fragment, taken
