"""The player directory's photos for the ID check, without a browser: the feed's
photo_url (schema, event, the floor's profile and its snapshot), [directory]
photo_origins, and raps.photos fetching only what it may (allowed origin, no redirect,
an image, within size) from a real HTTP server."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from pydantic import ValidationError

from adapters.mqtt.validate import Rejection
from raps.config.site import DirectoryConfig
from raps.photos import PhotoUnavailable, fetch_photo, origin, photo_problem
from selector.events import Tier
from tests.builders import Events, raps_floor
from tests.photo_server import png
from tests.test_mqtt_validate import decode, example

IMAGE = png(8, 8, (200, 40, 40))


class Photos:
    """An HTTP server with one answer per path: a photo, a redirect, HTML, a huge image."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                answers = {
                    "/p/ok.png": (200, "image/png", IMAGE),
                    "/p/moved.png": (302, "image/png", b""),
                    "/p/page.html": (200, "text/html; charset=utf-8", b"<p>hello</p>"),
                    "/p/huge.png": (200, "image/png", IMAGE + b"\0" * 5000),
                }
                status, kind, body = answers.get(self.path, (404, "text/plain", b"no"))
                self.send_response(status)
                self.send_header("Content-Type", kind)
                if status == 302:
                    self.send_header("Location", "/p/ok.png")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def photos() -> Iterator[Photos]:
    p = Photos()
    yield p
    p.server.shutdown()


def test_origin_is_scheme_host_and_port_or_nothing() -> None:
    assert origin("https://Photos.Example:8443/a/b.jpg?x=1") == "https://photos.example:8443"
    assert origin("http://10.0.0.5/p.png") == "http://10.0.0.5"
    assert origin("http://[::1]:81/p.png") == "http://[::1]:81"
    for bad in ("ftp://photos.example/p.png", "photos.example/p.png", "http:///p.png",
                "https://user:pw@photos.example/p.png", "http://h:99999/p.png"):  # fmt: skip
        assert origin(bad) is None, bad


def test_directory_config_takes_origins_only() -> None:
    cfg = DirectoryConfig(photo_origins=("https://Photos.Example/", "http://10.0.0.5:8080"))
    assert cfg.photo_origins == ("https://photos.example", "http://10.0.0.5:8080")
    for bad in ("photos.example", "https://photos.example/players", "ftp://x",
                "https://photos.example/?a=1"):  # fmt: skip
        with pytest.raises(ValidationError):
            DirectoryConfig(photo_origins=(bad,))
    assert DirectoryConfig().photo_origins == ()  # none by default: no photo ever fetched


def test_a_photo_is_fetched_only_from_an_allowed_origin() -> None:
    cfg = DirectoryConfig(photo_origins=("https://photos.example",))
    assert photo_problem(None, cfg) == "the directory does not provide one"
    assert photo_problem("https://photos.example/a.jpg", cfg) is None
    for elsewhere in ("https://photos.example.evil/a.jpg", "http://photos.example/a.jpg",
                      "https://169.254.169.254/latest/meta-data"):  # fmt: skip
        assert "not an allowed photo origin" in (photo_problem(elsewhere, cfg) or ""), elsewhere


@pytest.mark.asyncio
async def test_fetch_photo_answers_an_image_and_refuses_the_rest(photos: Photos) -> None:
    cfg = DirectoryConfig(photo_origins=(photos.origin,), photo_max_bytes=1024)
    got = await fetch_photo(f"{photos.origin}/p/ok.png", cfg)
    assert (got.body, got.media_type) == (IMAGE, "image/png")
    refusals = {
        "/p/moved.png": "answered 302",  # a redirect is never followed
        "/p/page.html": "sent text/html, no image",
        "/p/huge.png": "larger than [directory] photo_max_bytes",
        "/p/missing.png": "answered 404",
    }
    for path, why in refusals.items():
        with pytest.raises(PhotoUnavailable, match=why.replace("[", r"\[").replace("]", r"\]")):
            await fetch_photo(f"{photos.origin}{path}", cfg)
    # an origin not listed is never even asked
    with pytest.raises(PhotoUnavailable, match="not an allowed photo origin"):
        await fetch_photo(f"{photos.origin}/p/ok.png", DirectoryConfig())
    # a server that is not there
    closed = DirectoryConfig(photo_origins=("http://127.0.0.1:9",), photo_timeout_seconds=2)
    with pytest.raises(PhotoUnavailable, match="did not answer"):
        await fetch_photo("http://127.0.0.1:9/p/ok.png", closed)


def test_the_feed_carries_an_optional_photo_url() -> None:
    ex = example("player_upserted")
    event = decode(ex)
    assert not isinstance(event, Rejection), event
    assert event.photo_url == "https://photos.cms.example/players/6000012345.jpg"
    assert decode({**ex, "photo_url": None}).photo_url is None
    without = {k: v for k, v in ex.items() if k != "photo_url"}
    assert decode(without).photo_url is None
    for bad in ("ftp://photos.example/a.jpg", "https://photos.example/a b.jpg", "", 12):
        got = decode({**ex, "photo_url": bad})
        assert isinstance(got, Rejection) and got.reason == "schema_violation", (bad, got)


def test_the_floor_keeps_the_photo_with_the_profile_and_in_its_snapshot() -> None:
    floor, ev = raps_floor(), Events()
    floor.apply(ev.player("C1", tier=Tier.QUEEN, photo_url="https://photos.example/C1.jpg"))
    floor.apply(ev.player("C2", tier=Tier.KING))
    snap = floor.snapshot()
    rows = {p[0]: p[1] for p in snap["players"]}
    assert rows["C1"][5:] == ["https://photos.example/C1.jpg"]
    assert len(rows["C2"]) == 5  # no photo: the profile as before (older daemons read it)
    again = raps_floor()
    again.restore(snap)
    one, two = again.profile("C1"), again.profile("C2")
    assert one is not None and one.photo_url == "https://photos.example/C1.jpg"
    assert two is not None and two.photo_url is None and two.tier == Tier.KING
