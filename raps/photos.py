"""Player photos for the handheld's ID check, fetched by the daemon.

The directory (player_upserted `photo_url`) names where the casino system keeps a
player's photo.  The handheld never loads it from there: the page's Content-Security-
Policy allows images from the daemon only (`img-src 'self'`), the phone may not reach
the casino system's network, and a photo is personal data for the roles that verify a
winner alone.  So the daemon fetches it, only from an origin listed in `[directory]
photo_origins` (never an arbitrary address a feed names: no request forgery), without
following redirects, within a time and size limit, and answers it to the ID check with
`Cache-Control: no-store`.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from raps.config.site import DirectoryConfig

IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/webp", "image/gif"})


class PhotoUnavailable(Exception):
    """Why there is no photo to show (said to the person at the handheld)."""


@dataclass(frozen=True, slots=True)
class Photo:
    body: bytes
    media_type: str


def origin(url: str) -> str | None:
    """`scheme://host[:port]` of an http(s) URL, lowercased; None for anything else."""
    try:
        parts = urlsplit(url)
        port = parts.port  # raises on a bad port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username:
        return None
    host = parts.hostname.lower()
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")


def photo_problem(url: str | None, cfg: DirectoryConfig) -> str | None:
    """Why the photo at `url` may not be shown, or None when it may be fetched."""
    if not url:
        return "the directory does not provide one"
    if origin(url) not in cfg.photo_origins:
        return "its address is not an allowed photo origin ([directory] photo_origins)"
    return None


async def fetch_photo(url: str, cfg: DirectoryConfig) -> Photo:
    """The image at `url` (an allowed origin), or PhotoUnavailable with the reason."""
    problem = photo_problem(url, cfg)
    if problem is not None:
        raise PhotoUnavailable(problem)
    try:
        async with (
            httpx.AsyncClient(timeout=cfg.photo_timeout_seconds, follow_redirects=False) as client,
            client.stream("GET", url, headers={"Accept": ", ".join(sorted(IMAGE_TYPES))}) as r,
        ):
            if r.status_code != 200:
                raise PhotoUnavailable(f"the directory's photo server answered {r.status_code}")
            media_type = r.headers.get("content-type", "").split(";")[0].strip().lower()
            if media_type not in IMAGE_TYPES:
                raise PhotoUnavailable(f"the photo server sent {media_type or 'no type'}, no image")
            body = bytearray()
            async for chunk in r.aiter_bytes():
                body += chunk
                if len(body) > cfg.photo_max_bytes:
                    raise PhotoUnavailable("the photo is larger than [directory] photo_max_bytes")
    except httpx.HTTPError as e:
        raise PhotoUnavailable(f"the photo server did not answer ({type(e).__name__})") from e
    return Photo(bytes(body), media_type)
