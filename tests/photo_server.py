"""The casino system's photo server for the browser tests: `GET /photos/<card>.png`
answers a small PNG (a colour made from the card number) and keeps who asked (path and
User-Agent), so a test can tell the daemon fetched a photo, not the browser."""

from __future__ import annotations

import hashlib
import struct
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A plain PNG of one colour."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


def photo_of(card: str) -> bytes:
    colour = hashlib.sha256(card.encode()).digest()[:3]
    return png(96, 120, (colour[0], colour[1], colour[2]))


class PhotoServer:
    """A ThreadingHTTPServer on a free port of 127.0.0.1, in a daemon thread."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []  # (path, User-Agent)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.asked.append((self.path, self.headers.get("User-Agent", "")))
                name = self.path.rsplit("/", 1)[-1]
                if not (self.path.startswith("/photos/") and name.endswith(".png")):
                    self.send_error(404)
                    return
                body = photo_of(name.removesuffix(".png"))
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


_shared: list[PhotoServer] = []


def photo_server() -> PhotoServer:
    """The one photo server of this test process (started on first use)."""
    if not _shared:
        _shared.append(PhotoServer())
    return _shared[0]
