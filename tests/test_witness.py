"""The witness's rules (raps/witness/): it signs deterministically, gives the same signature
to the same request again, refuses a request it signed with other terms, one behind the
last it signed, a draw it never saw opened and a caller without its token; its log is
durable and exported line by line. Through its HTTP API in-process (the real process:
tests/test_witness_service.py)."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from raps.signing import SigningKey
from raps.witness.app import MAX_BODY_BYTES, create_witness_app
from raps.witness.config import WitnessConfigError, parse_witness_config
from raps.witness.log import WitnessLog
from raps.witness.run import witness_server_config
from selector.fairness import DERIVATION_V3
from selector.signatures import valid
from selector.witness import RequestTerms, open_message

KEY = SigningKey(hashlib.sha256(b"test_witness key").digest())
TOKEN = "witness-token-0123456789abcdef0123456789"
COMMIT = "ab" * 32
TERMS = RequestTerms(
    "site-a", "S1", 1, 1, 0, "slots", DERIVATION_V3, "cd" * 32, COMMIT, 7, "ef" * 32
)


@pytest_asyncio.fixture
async def api(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    log = WitnessLog(tmp_path / "w.db", KEY)
    app = create_witness_app(log, (hashlib.sha256(TOKEN.encode()).hexdigest(),))
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://w", headers=headers
    ) as c:
        yield c
    log.close()


async def open_s1(api: httpx.AsyncClient, commitment: str = COMMIT) -> httpx.Response:
    body = {"site": "site-a", "session_id": "S1", "commitment": commitment,
            "derivation": DERIVATION_V3}  # fmt: skip
    return await api.post("/v1/open", json=body)


async def sign(api: httpx.AsyncClient, terms: RequestTerms) -> httpx.Response:
    return await api.post("/v1/sign", json=terms.to_dict())


@pytest.mark.asyncio
async def test_signatures_are_deterministic_and_a_retry_gets_the_same(
    api: httpx.AsyncClient,
) -> None:
    r = await open_s1(api)
    assert r.status_code == 200
    receipt = r.json()["receipt"]
    assert valid(KEY.public_hex, open_message("site-a", "S1", COMMIT, DERIVATION_V3), receipt)
    first = await sign(api, TERMS)
    assert first.status_code == 200
    signature = first.json()["signature"]
    assert signature == KEY.sign(TERMS.message())  # Ed25519: one signature per message
    assert valid(KEY.public_hex, TERMS.message(), signature)
    again = await sign(api, TERMS)
    assert again.json()["signature"] == signature
    assert (await open_s1(api)).json()["receipt"] == receipt  # an open retried: the same


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"digest": "00" * 32}, "request_conflict"),  # another pool for request 1
        ({"seq": 8, "entry_hash": "11" * 32}, "request_conflict"),  # the tail redone
        ({"commitment": "99" * 32}, "commitment_mismatch"),
        ({"session_id": "S2"}, "unknown_session"),
    ],
)
async def test_a_changed_request_is_refused(
    api: httpx.AsyncClient, change: dict[str, object], code: str
) -> None:
    await open_s1(api)
    assert (await sign(api, TERMS)).status_code == 200
    r = await sign(api, dataclasses.replace(TERMS, **change))  # type: ignore[arg-type]
    assert r.status_code in (404, 409) and r.json()["code"] == code, r.text


@pytest.mark.asyncio
async def test_requests_only_move_forward_and_an_open_is_final_once_signed(
    api: httpx.AsyncClient,
) -> None:
    await open_s1(api)
    assert (await open_s1(api, "12" * 32)).status_code == 200  # nothing signed yet: a new seed
    assert (await open_s1(api)).status_code == 200
    assert (await sign(api, dataclasses.replace(TERMS, request=3, seq=9))).status_code == 200
    behind = await sign(api, dataclasses.replace(TERMS, request=2, seq=8))
    assert behind.status_code == 409 and behind.json()["code"] == "request_behind"
    again = await open_s1(api, "12" * 32)
    assert again.status_code == 409 and again.json()["code"] == "already_open"


@pytest.mark.asyncio
async def test_a_caller_without_the_token_is_refused(api: httpx.AsyncClient) -> None:
    for headers in ({"Authorization": "Bearer nope"}, {"Authorization": ""}):
        r = await api.post("/v1/sign", json=TERMS.to_dict(), headers=headers)
        assert r.status_code == 401
    assert (await api.get("/healthz", headers={"Authorization": ""})).status_code == 200


@pytest.mark.asyncio
async def test_a_body_over_the_limit_is_refused_before_the_token(api: httpx.AsyncClient) -> None:
    """Issue 16's 200 MB /login, at the witness: 413 before the bearer check or any parse,
    for a declared length and for a streamed (chunked) body alike."""
    big = b"{" + b" " * MAX_BODY_BYTES + b"}"
    for headers in ({"Authorization": ""}, {}):  # a stranger, and a caller with the token
        r = await api.post("/v1/sign", content=big, headers=headers)
        assert r.status_code == 413, r.text

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(8):
            yield b" " * (MAX_BODY_BYTES // 4)

    r = await api.post("/v1/open", content=chunks(), headers={"Authorization": ""})
    assert r.status_code == 413, r.text
    r = await api.post("/v1/sign", json=TERMS.to_dict(), headers={"Authorization": ""})
    assert r.status_code == 401  # a body under the limit goes on to the token check


def test_the_witness_server_believes_no_forwarded_headers() -> None:
    w = parse_witness_config(f'[witness]\ntoken_sha256 = ["{"a" * 64}"]\n').witness
    config = witness_server_config(object(), w)
    assert config.proxy_headers is False
    assert (config.host, config.port) == (w.host, w.port)


def test_the_log_survives_a_restart_and_exports_each_signature(tmp_path: Path) -> None:
    log = WitnessLog(tmp_path / "w.db", KEY)
    log.open_session("site-a", "S1", COMMIT, DERIVATION_V3)
    signature = log.sign(TERMS)
    log.close()
    again = WitnessLog(tmp_path / "w.db", KEY)
    assert again.sign(TERMS) == signature  # from the log, not signed anew
    lines = again.export("S1")
    assert [line["log"] for line in lines] == ["open", "signature"]
    assert lines[1]["signature"] == signature and lines[1]["digest"] == TERMS.digest
    assert again.export("S9") == []
    again.close()


def test_the_config_names_what_is_wrong() -> None:
    with pytest.raises(WitnessConfigError, match="token_sha256"):
        parse_witness_config("[witness]\nport = 1\n")
    cfg = parse_witness_config(
        f'[witness]\ntoken_sha256 = ["{"a" * 64}"]\nkey_file = "${{CREDS}}/k"\n',
        env={"CREDS": "/run/c"},
    )
    assert cfg.witness.key_file == "/run/c/k"
