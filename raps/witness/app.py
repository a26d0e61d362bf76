"""The witness's HTTP API (FastAPI): a bearer token per daemon, three calls.

    GET  /v1/key       -> {public_key, key_id}
    POST /v1/open      {site, session_id, commitment, derivation}
                       -> {public_key, key_id, receipt}
    POST /v1/sign      {site, session_id, request, pick, attempt, kind, derivation, digest,
                        commitment, seq, entry_hash} -> {signature, public_key, key_id}
    GET  /healthz

A refusal is 404 (a draw the witness never saw opened) or 409 (a request signed before
with other terms, or behind one already signed) with {"detail", "code"}; 401 without a
valid token. The endpoints are plain functions (FastAPI runs them in its thread pool):
each is one SQLite transaction, fsynced before the answer.

A body over MAX_BODY_BYTES is refused with 413 before the token is checked or a byte of it
parsed (raps.body_limit, as the daemon's); `raps witness run` believes no forwarded
headers (raps.witness.run).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from raps.body_limit import BodyLimits
from raps.witness.log import WitnessLog, WitnessRefusal
from selector.witness import RequestTerms

_HEX64 = r"^[0-9a-f]{64}$"
MAX_BODY_BYTES = 16_384  # a sign request is under 1 KB


class OpenBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    site: str = Field(min_length=1, max_length=200)
    session_id: str = Field(min_length=1, max_length=500)
    commitment: str = Field(pattern=_HEX64)
    derivation: str = Field(min_length=1, max_length=100)


class SignBody(OpenBody):
    request: int = Field(ge=1, lt=2**32)
    pick: int = Field(ge=1, lt=2**32)
    attempt: int = Field(ge=0, lt=2**32)
    kind: str = Field(min_length=1, max_length=100)
    digest: str = Field(pattern=_HEX64)
    seq: int = Field(ge=1, lt=2**63)
    entry_hash: str = Field(pattern=_HEX64)


def create_witness_app(log: WitnessLog, token_hashes: tuple[str, ...]) -> FastAPI:
    app = FastAPI(title="RAPS witness", version="1", docs_url=None, redoc_url=None)
    hashes = tuple(bytes.fromhex(h) for h in token_hashes)

    def authorized(authorization: Annotated[str | None, Header()] = None) -> None:
        scheme, _, token = (authorization or "").partition(" ")
        digest = hashlib.sha256(token.strip().encode()).digest()
        ok = scheme.lower() == "bearer" and token.strip() != ""
        if not (ok and any(hmac.compare_digest(digest, h) for h in hashes)):
            raise HTTPException(401, "a valid bearer token is required")

    auth = [Depends(authorized)]

    @app.exception_handler(WitnessRefusal)
    async def _refused(_r: Request, e: WitnessRefusal) -> JSONResponse:
        return JSONResponse({"detail": str(e), "code": e.code}, e.status)

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/key", dependencies=auth)
    def key() -> dict[str, Any]:
        return log.describe()

    @app.post("/v1/open", dependencies=auth)
    def open_(body: OpenBody) -> dict[str, Any]:
        return log.open_session(body.site, body.session_id, body.commitment, body.derivation)

    @app.post("/v1/sign", dependencies=auth)
    def sign(body: SignBody) -> dict[str, Any]:
        terms = RequestTerms.from_dict(body.model_dump())
        return {"signature": log.sign(terms), **log.describe()}

    # outermost: an oversized body is refused before routing, the token check or parsing
    app.add_middleware(BodyLimits, routes=app.router.routes, max_body_bytes=MAX_BODY_BYTES,
                       max_upload_bytes=MAX_BODY_BYTES, uploads=frozenset())  # fmt: skip
    return app
