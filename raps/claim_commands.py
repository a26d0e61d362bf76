"""The claim's steps as the daemon runs them: security en route, the winner absent, a
supervisor's extension (selector.claims), and its two ends, the winner verified or a
staff no-show.  Each is a command like verify or void: one
at a time under the service's lock, journaled before it is answered, and a retry with
the same command id answers with the first outcome."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from selector.claims import EXTENDING_ROLES  # raps.auth.EXTENDERS: the route's same roles
from selector.records import Actor
from selector.session import Command, DrawSession, Outcome, SessionError

Result = TypeVar("Result")  # raps.service.CommandResult


class ClaimCommands(Generic[Result]):
    """Mixed into raps.service.Service, whose `_command` runs and journals a step."""

    async def _command(
        self,
        session_id: str,
        actor: Actor,
        command_id: str,
        action: Callable[[DrawSession, Command, Any], tuple[Outcome, Any]],
        then: Callable[[DrawSession, Command, Any], tuple[Outcome, Any]] | None = None,
        before: Callable[[DrawSession], Awaitable[Any]] | None = None,
    ) -> Result:
        raise NotImplementedError

    async def verify(self, session_id: str, actor: Actor, command_id: str, pick: int) -> Result:
        """The winner presented with ID inside the claim window."""
        return await self._command(
            session_id, actor, command_id, lambda s, cmd, _: (s.verify(cmd, pick), None)
        )

    async def no_show(self, session_id: str, actor: Actor, command_id: str, pick: int) -> Result:
        """Staff mark a winner who will not present; the slot is redrawn next."""
        return await self._command(
            session_id, actor, command_id, lambda s, cmd, _: (s.no_show(cmd, pick), None)
        )

    async def en_route(
        self, session_id: str, actor: Actor, command_id: str, pick: int, officer: str
    ) -> Result:
        """Security acknowledges a winner: `officer` is on the way."""
        return await self._command(
            session_id, actor, command_id, lambda s, cmd, _: (s.en_route(cmd, pick, officer), None)
        )

    async def absent(self, session_id: str, actor: Actor, command_id: str, pick: int) -> Result:
        """Arrived, the winner is not there: the PA line, and the countdown if it waits."""
        return await self._command(
            session_id, actor, command_id, lambda s, cmd, _: (s.absent(cmd, pick), None)
        )

    async def extend(
        self,
        session_id: str,
        actor: Actor,
        command_id: str,
        pick: int,
        seconds: float,
        reason: str,
    ) -> Result:
        """An admin's one extension of a pick's running countdown, with the reason."""
        if actor.role not in EXTENDING_ROLES:
            raise SessionError("only an admin may extend a claim countdown")
        return await self._command(
            session_id,
            actor,
            command_id,
            lambda s, cmd, _: (s.extend(cmd, pick, seconds, reason), None),
        )
