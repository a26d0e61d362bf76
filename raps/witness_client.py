"""The daemon's side of the witness: register each draw at its open, ask for the signature
of each request (raps/witness/ is the other side; docs/fairness.md "The witness").

The calls have a short timeout (`[witness] timeout_seconds`). A witness that cannot be
reached refuses the draw with a clear message, unless the draw's promotion allows a
fallback (its `witness_fallback`, else the site's `[witness] fallback`, fixed in the draw's
opening record): the pick is then drawn without the signature, journaled as such and
reported by `raps verify` as an anomaly. A witness that answers with a refusal (a request
it signed before with other terms: the journal's tail deleted and drawn again) is never
fallen back from.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import httpx

from raps.config.witness import WitnessConfig
from selector.fairness import DERIVATION_V3
from selector.session import DrawSession, SessionState
from selector.witness import RequestTerms, WitnessAtOpen, WitnessReply


class WitnessUnavailable(RuntimeError):
    """The witness did not answer (in time); nothing was drawn, the request stays open."""


class WitnessDenied(RuntimeError):
    """The witness refused to sign; the message is the witness's reason."""


class Witnessed(Protocol):
    """A draw (RAPS session or ticket draw) as the client needs it."""

    @property
    def witness(self) -> WitnessAtOpen | None: ...

    def needs_witness(self) -> bool: ...

    def witness_terms(self) -> RequestTerms | None: ...


class WitnessClient:
    def __init__(
        self,
        cfg: WitnessConfig,
        site: str,
        transport: httpx.AsyncBaseTransport | None = None,
        policy: Callable[[str], bool | None] = lambda _promotion: None,
    ) -> None:
        self.cfg = cfg
        self.site = site
        self.policy = policy  # a promotion's own witness_fallback (None: the site's)
        try:
            token = Path(cfg.token_file).read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError) as e:
            raise WitnessUnavailable(f"cannot read the witness token file {cfg.token_file}") from e
        self._http = httpx.AsyncClient(
            base_url=cfg.url,
            timeout=cfg.timeout_seconds,
            headers={"Authorization": f"Bearer {token}"},
            transport=transport,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            r = await self._http.post(path, json=body)
        except httpx.HTTPError as e:
            raise WitnessUnavailable(
                f"the witness at {self.cfg.url} did not answer ({type(e).__name__})"
            ) from e
        if r.status_code in (404, 409, 422):
            try:
                why = str(r.json().get("detail"))
            except ValueError:
                why = r.text[:200]
            raise WitnessDenied(f"the witness refused: {why}")
        if r.status_code != 200:
            raise WitnessUnavailable(f"the witness at {self.cfg.url} answered {r.status_code}")
        data: dict[str, Any] = r.json()
        pinned = self.cfg.public_key
        if pinned is not None and data.get("public_key") != pinned:
            raise WitnessDenied(
                f"the witness at {self.cfg.url} signs with key {data.get('key_id')}, not the "
                "pinned one: refused"
            )
        return data

    def fallback(self, promotion_id: str) -> bool:
        """Whether a draw of the promotion may go on without the witness's signature."""
        own = self.policy(promotion_id) if promotion_id else None
        return self.cfg.fallback if own is None else own

    async def register(
        self, session_id: str, commitment: str, derivation: str, promotion_id: str = ""
    ) -> WitnessAtOpen:
        """The draw registered with the witness before it opens: its key and receipt, and
        whether its promotion allows a fallback."""
        data = await self._post(
            "/v1/open",
            {"site": self.site, "session_id": session_id, "commitment": commitment,
             "derivation": derivation},
        )  # fmt: skip
        return WitnessAtOpen(
            self.site, str(data["public_key"]), str(data["receipt"]), self.fallback(promotion_id)
        )

    async def reply(self, draw: Witnessed) -> WitnessReply | None:
        """The signature of the draw's open request (None when it needs none); without the
        witness, a reply saying why when the draw may fall back, else WitnessUnavailable."""
        if not draw.needs_witness():
            return None
        terms = draw.witness_terms()
        if terms is None:
            raise WitnessUnavailable("the request's journal entry is not known yet; try again")
        try:
            data = await self._post("/v1/sign", terms.to_dict())
        except WitnessUnavailable as e:
            if draw.witness is not None and draw.witness.fallback:
                return WitnessReply(terms.seq, terms.entry_hash, None, str(e))
            raise WitnessUnavailable(
                f"{e}: the draw is refused (its pool stays requested; draw again to retry)"
            ) from e
        return WitnessReply(terms.seq, terms.entry_hash, str(data["signature"]))


async def registered(
    client: WitnessClient | None, s: DrawSession, command_id: str, commitment: str
) -> WitnessAtOpen | None:
    """The witness of a RAPS session about to open (derivation v3); None when the daemon
    has none, or when the command is a retry of an open already made."""
    if client is None or s.answered(command_id) or s.state != SessionState.SCHEDULED:
        return None
    return await client.register(s.session_id, commitment, DERIVATION_V3, s.promotion_id)


async def signed(client: WitnessClient | None, draw: Witnessed) -> WitnessReply | None:
    """The witness's signature of a draw's committed request (None: none needed)."""
    return None if client is None else await client.reply(draw)
