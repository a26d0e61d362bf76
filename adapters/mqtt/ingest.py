"""The MQTT subscriber: floor messages in, FloorEvents to the core, dead letters out.

Delivery (docs/mqtt.md, "Delivery"):

- One fixed client id (`{mqtt.client_id}-in`) and a persistent session (MQTT 3.1.1,
  the default: clean session off; MQTT 5: clean start off and a session expiry),
  subscriptions at QoS 1: what is published while the daemon is down or reconnecting
  waits in the broker and arrives when it is back.
- Acknowledgements are manual: a message is acknowledged (PUBACK) only once its
  event is durable (applied to the core and written to the floor log by `flush`), or
  its dead letter was accepted by the broker.  A message that was received but not
  yet durable when the connection drops, the daemon stops or is killed, is therefore
  delivered again; the core drops the copies it already applied by event id
  (at-least-once delivery + dedupe = applied once).  On a stop, the last
  acknowledgements are confirmed read by the broker before the connection closes
  (the receiver's barrier).  While the floor log cannot be written, nothing is acknowledged
  and nothing new is taken (`room`): the broker holds the rest.
- Messages are handled in batches of whatever has arrived (at most `batch_max`),
  without waiting to fill a batch: under load batches grow, at rest every message
  takes effect at once (an exclusion leaves every pool before the next pick).
- The broker session lives in a receiver process (adapters.mqtt.receiver), which
  retries the connection forever with exponential backoff and jitter; should the
  process end, another is started, with backoff too.

Per message: JSON -> JSON Schema of its `type` -> topic rules -> clock rule ->
FloorEvent (adapters.wire.codec's types) -> ordering guard -> core.  Anything refused on the
way is counted through `reject`; anything the core refuses other than a duplicate is
counted by the core; both are published to `{prefix}/{site}/deadletter` with their
reason.  Nothing here raises on bad input, whatever its bytes (each message is
handled on its own: a failure in a check or in the core costs that message alone, as
a dead letter), and nothing is dropped without a dead letter.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import secrets
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple

import structlog

from adapters.mqtt.config import MqttConfig
from adapters.mqtt.family import PayloadFamily
from adapters.mqtt.gaps import GapSink, SequenceGaps
from adapters.mqtt.link import ReceiverGone, ReceiverLink
from adapters.mqtt.link_wire import BARRIER_SECONDS, LinkSettings, Message
from adapters.mqtt.ordering import OrderGuard
from adapters.mqtt.topics import Kind, TopicRef, Topics
from adapters.mqtt.validate import (
    DEFAULT_MAX_FUTURE_SECONDS,
    DEFAULT_MAX_PAST_SECONDS,
    MAX_PAYLOAD_BYTES,
    RETAINED,
    STALE,
    WRONG_TOPIC,
    PayloadDecoder,
    Rejection,
    SchemaSet,
    clean_text,
)
from selector.events import AnyFloorEvent
from selector.layout import FloorLayout

Apply = Callable[[list[AnyFloorEvent], str], list[str | None]]
Reject = Callable[[str, str], None]
Link = Callable[[bool], None]
Clock = Callable[[], datetime]
Flush = Callable[[], Awaitable[object]]  # raises when the floor log could not be written
Room = Callable[[], int]  # events the service takes before its unwritten backlog is full
Protocol = Literal["5", "3.1.1"]
Settling = tuple[int, list[Message], list[bytes]]  # connection, batch, its dead letters
# a topic parsed, its metrics label, its events' source, what notes its `seq` numbers
_Topic = tuple[TopicRef, str, str, Callable[[dict[str, Any]], object]]

DUPLICATE = "duplicate"  # the core's reason for an event id it applied already
INTERNAL_ERROR = "internal_error"
SESSION_EXPIRY_SECONDS = 7 * 24 * 3600  # how long the broker keeps messages for us
RECEIVE_MAXIMUM = 2_000  # MQTT 5: unacknowledged QoS 1 messages the broker may send
BATCH_MAX = 1000
FINISH_ON_STOP_SECONDS = 5.0
CREDIT = 8  # batches the receiver may forward ahead of the one being handled
SETTLING_MAX = 2  # applied batches that may wait for their flush while more are applied
_TOPIC_CACHE_MAX = 50_000


def source_label(kind: Kind) -> str:
    """The `source` label of the ingest metrics for one kind of topic (bounded set)."""
    return f"mqtt-{kind.value}"


class _Item(NamedTuple):
    """One received message on its way through a batch."""

    topic: str
    payload: bytes
    retained: bool = False


class MqttIngest:
    """Subscribes to the site's inbound topics and feeds the core; see module docstring.

    apply    -- Service.ingest_detailed: per event None (applied) or the core's reason
    reject   -- Service.reject(source, reason): counts an edge rejection
    link     -- called with True when subscribed, False when the connection is lost
    clock    -- the daemon's clock, for the future-timestamp rule and received_at
    port     -- overrides cfg.port (an embedded broker on a free port)
    known    -- the floor layout: unknown machines/tables/seats are refused at the edge
    families -- the payload families of the sources that publish here (CMS_FEEDS, TABLE_FEED)
    flush    -- Service.flush_events: makes every applied event durable; acks wait for it
    room     -- Service.ingest_room: no message is taken while it is 0 (backpressure)
    gap      -- Metrics.count_gap(source, missing): a gap in a publisher's `seq` numbers
    """

    def __init__(
        self,
        cfg: MqttConfig,
        site: str,
        apply: Apply,
        reject: Reject,
        link: Link,
        clock: Clock,
        port: int | None = None,
        known: FloorLayout | None = None,
        *,
        families: Iterable[PayloadFamily],
        protocol: Protocol = "3.1.1",
        max_future_seconds: float = DEFAULT_MAX_FUTURE_SECONDS,
        card_known: Callable[[str], bool] | None = None,
        batch_max: int = BATCH_MAX,
        receive_maximum: int = RECEIVE_MAXIMUM,
        session_expiry_seconds: int = SESSION_EXPIRY_SECONDS,
        backoff_initial: float = 0.5,
        backoff_max: float = 30.0,
        client_id: str | None = None,
        flush: Flush | None = None,
        room: Room | None = None,
        max_past_seconds: float = DEFAULT_MAX_PAST_SECONDS,
        gap: GapSink | None = None,
    ) -> None:
        if protocol not in ("5", "3.1.1"):
            raise ValueError(f"protocol must be '5' or '3.1.1', not {protocol!r}")
        if batch_max < 1 or receive_maximum < 1 or not 0 < backoff_initial <= backoff_max:
            raise ValueError("batch_max, receive_maximum and backoff must be positive")
        self.cfg = cfg
        self.topics = Topics(cfg.topic_prefix, site)
        self.apply = apply
        self.reject = reject
        self.link = link
        self.clock = clock
        self.port = port or cfg.port
        self.protocol: Protocol = protocol
        self.client_id = client_id or f"{cfg.client_id or 'raps-' + site}-in"
        self.batch_max = batch_max
        self.receive_maximum = receive_maximum
        self.session_expiry = session_expiry_seconds
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.flush = flush
        self.room = room
        self.decoder = PayloadDecoder(
            SchemaSet(families), known, max_future_seconds, card_known, max_past_seconds
        )
        self.guard = OrderGuard()
        self.gaps = SequenceGaps(gap)
        if gap is not None:  # every source's series from the start, so increase() sees 1
            for kind in self.decoder.schemas.families:
                gap(source_label(kind), 0)
        self.log = structlog.get_logger("raps").bind(component="mqtt-in")
        self.connected = False
        # counters for tests, the benchmark and the daemon's gauges
        self.received = 0
        self.applied = 0
        self.duplicates = 0
        self.dead_letters: Counter[str] = Counter()
        self.connects = 0
        self.batches = 0
        self.dead_letters_published = 0
        self.flush_failures = 0  # tries to make a batch durable that failed (retried)
        self._topic_cache: dict[str, _Topic | None] = {}
        self.receiver: ReceiverLink | None = None  # the receiver process of the moment

    # ------------------------------------------------------------- connection

    def _settings(self) -> LinkSettings:
        return LinkSettings.of(
            self.cfg, host=self.cfg.host, port=self.port, client_id=self.client_id,
            protocol=self.protocol, subscriptions=self.topics.subscriptions(),
            barrier=self.topics.barrier, deadletter=self.topics.deadletter,
            batch_max=self.batch_max, receive_maximum=self.receive_maximum,
            session_expiry=self.session_expiry, backoff_initial=self.backoff_initial,
            backoff_max=self.backoff_max,
        )  # fmt: skip

    def _set_link(self, up: bool) -> None:
        if up == self.connected:
            return
        self.connected = up
        try:
            self.link(up)
        except Exception:
            self.log.exception("link callback failed")

    def _up(self, _conn: int) -> None:
        self.connects += 1
        self._set_link(True)

    def _down(self, _conn: int) -> None:
        self._set_link(False)

    async def run(self) -> None:
        """Run the receiver process and ingest what it forwards until cancelled.

        The receiver reconnects to the broker by itself (adapters.mqtt.receiver); should
        the process itself end, another is started with backoff, and what the first had
        forwarded but was not acknowledged comes again from the broker.
        """
        backoff = self.backoff_initial
        try:
            while True:
                link = ReceiverLink(self._settings(), self._up, self._down, self.log)
                self.receiver = link
                try:
                    await link.start()
                    await self._consume(link)
                except (ReceiverGone, OSError) as e:
                    self.log.error(
                        "the MQTT receiver process ended; starting another",
                        error=f"{type(e).__name__}: {e}", exit_code=link.returncode,
                    )  # fmt: skip
                finally:
                    await link.close()
                self._set_link(False)
                delay = backoff * (0.75 + secrets.randbelow(500) / 1000)  # jitter
                await asyncio.sleep(delay)
                backoff = min(backoff * 2, self.backoff_max)
        finally:
            self._set_link(False)

    async def _consume(self, link: ReceiverLink) -> None:
        """Apply each batch as it comes; the settler makes them durable and acks them.

        A batch's flush (a commit to the floor log) overlaps the handling of the next
        batches: one flush makes every batch applied before it durable (group commit),
        and the acks still follow in the order received.  On a stop, what was applied
        is settled for a few seconds more (after that it is not acknowledged: it comes
        again, as duplicates), then the receiver makes sure the broker read the acks.
        """
        settling: asyncio.Queue[Settling] = asyncio.Queue(maxsize=SETTLING_MAX)
        settler = asyncio.create_task(self._settler(link, settling))
        try:
            link.credit(CREDIT)
            while True:
                conn, messages = await link.batch()
                link.credit(1)  # the receiver reads on while this batch is handled
                while messages:
                    limit = await self._take_limit()
                    part, messages = messages[:limit], messages[limit:]
                    self.batches += 1
                    dead = self.handle([_item(m) for m in part])
                    await self._hand_over(settling, (conn, part, dead), settler)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(settling.join(), FINISH_ON_STOP_SECONDS)
            raise
        finally:
            settler.cancel()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await settler
            await link.stop(BARRIER_SECONDS + 1.0)

    async def _hand_over(
        self, settling: asyncio.Queue[Settling], batch: Settling, settler: asyncio.Task[None]
    ) -> None:
        """Queue an applied batch for the settler; waits while the flush lags, and raises
        what stopped the settler (its batches are not acknowledged: they come again)."""
        if settling.full():
            put = asyncio.ensure_future(settling.put(batch))
            await asyncio.wait({put, settler}, return_when=asyncio.FIRST_COMPLETED)
            if not put.done():
                put.cancel()
        else:
            settling.put_nowait(batch)
        if settler.done():
            settler.result()
            raise ReceiverGone("the settler ended")
        await asyncio.sleep(0)  # let the event loop breathe between batches

    async def _settler(self, link: ReceiverLink, settling: asyncio.Queue[Settling]) -> None:
        """Publish the dead letters, make the batches durable, then ack them, in order."""
        while True:
            ready = [await settling.get()]
            while not settling.empty():
                ready.append(settling.get_nowait())
            try:
                await self._settle(link, ready)
            except Exception:
                self.log.exception("settling a batch failed; the receiver starts over")
                raise
            finally:
                for _ in ready:
                    settling.task_done()

    async def _settle(self, link: ReceiverLink, ready: list[Settling]) -> None:
        """Without a `flush` and without dead letters a batch is acknowledged at once.
        Otherwise its acks wait until the broker has its dead letters and the floor log
        has its events."""
        sent = len(ready)
        for i, (conn, _batch, dead) in enumerate(ready):
            if dead:
                if not await link.publish(conn, dead):
                    sent = i  # the connection went: this batch and those after come again
                    break
                self.dead_letters_published += len(dead)
        await self._durable()
        for conn, batch, _dead in ready[:sent]:
            link.ack(conn, batch)

    async def _take_limit(self) -> int:
        """How many messages the next batch may take: while the service has no room for
        more unwritten events, wait (flushing) and take none; the broker keeps them."""
        if self.room is None:
            return self.batch_max
        while (free := self.room()) <= 0:
            await self._durable()
        return min(self.batch_max, free)

    async def _durable(self) -> None:
        """Flush until it works (with backoff): an ack for an event the floor log does not
        hold yet would be lost by a kill -9.  The service counts and logs the failures."""
        if self.flush is None:
            return
        delay = self.backoff_initial
        while True:
            try:
                await self.flush()
                return
            except Exception:
                self.flush_failures += 1
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.backoff_max)

    # ---------------------------------------------------------------- a batch

    def _ref(self, topic: str) -> _Topic | None:
        """The topic parsed, its metrics label and its events' source, once per topic."""
        cache = self._topic_cache
        try:
            return cache[topic]
        except KeyError:
            ref = self.topics.parse(topic)
            known = None
            if ref is not None:
                label = source_label(ref.kind)
                observe = self.gaps.observe
                known = (ref, label, _event_source(ref), lambda data: observe(label, topic, data))
            if len(cache) >= _TOPIC_CACHE_MAX:
                cache.clear()
            cache[topic] = known
            return known

    def handle(self, items: Sequence[_Item]) -> list[bytes]:
        """Decode, check and apply a batch in arrival order; returns its dead letters.

        Synchronous on purpose: a batch is applied whole, with nothing interleaved.
        Never raises: each message is decoded and applied on its own account.
        """
        now = self.clock()
        now_epoch = now.timestamp()
        received_at = now.astimezone(UTC).isoformat(timespec="milliseconds")
        dead: list[bytes] = []
        accepted: list[tuple[_Item, str, AnyFloorEvent]] = []
        new_cards: set[str] = set()
        self.received += len(items)
        for item in items:
            label = "mqtt"
            try:
                label, result = self._decode(item, now_epoch, new_cards)
            except Exception as e:  # a bug in a check must cost this message alone
                self.log.exception("the ingest failed on a message; it is a dead letter")
                result = Rejection(INTERNAL_ERROR, f"the ingest failed on it: {type(e).__name__}")
            if isinstance(result, Rejection):
                self._count(label, result.reason, 1)
                dead.append(self._dead_letter(item, result, received_at))
            else:
                accepted.append((item, label, result))
        # apply in arrival order, one call per run of events from the same kind of topic
        start = 0
        while start < len(accepted):
            label = accepted[start][1]
            end = start + 1
            while end < len(accepted) and accepted[end][1] == label:
                end += 1
            run = accepted[start:end]
            reasons = self._apply_run([ev for _, _, ev in run], label)
            for (item, _, ev), reason in zip(run, reasons, strict=True):
                if reason is None:
                    self.applied += 1
                elif reason == DUPLICATE:
                    self.duplicates += 1
                else:  # counted by the core already (or by _apply_run)
                    self.dead_letters[reason] += 1
                    detail = f"refused by the floor: {reason}"
                    dead.append(
                        self._dead_letter(item, Rejection(reason, detail, ev.event_id), received_at)
                    )
            start = end
        return dead

    def _decode(
        self, item: _Item, now_epoch: float, new_cards: set[str]
    ) -> tuple[str, AnyFloorEvent | Rejection]:
        """One message's source label and its event, or why it is refused."""
        known = self._ref(item.topic)
        if known is None:
            return "mqtt", Rejection(WRONG_TOPIC, "the topic is not an inbound topic of this site")
        ref, label, source, numbered = known
        if item.retained:
            return label, Rejection(RETAINED, "a retained copy; inbound events are not retained")
        result = self.decoder.decode(
            ref.kind, ref.ident, item.payload, now_epoch, source, new_cards, numbered
        )
        if not isinstance(result, Rejection):
            stale = self.guard.check(result)
            if stale is not None:
                return label, Rejection(STALE, stale, result.event_id)
        return label, result

    def _apply_run(self, events: list[AnyFloorEvent], label: str) -> list[str | None]:
        """The core's answer per event.  Should the call fail (or answer wrongly) for a
        run, its events are applied again one by one: the core drops the ones it did
        apply as duplicates, so exactly the ones it fails on become dead letters."""
        try:
            reasons = self.apply(events, label)
            if len(reasons) == len(events):
                return reasons
            self.log.error("the core answered for a different number of events",
                           events=len(events), answers=len(reasons))  # fmt: skip
        except Exception:
            self.log.exception("the core failed on a batch; applying it one event at a time")
        out: list[str | None] = []
        for ev in events:
            try:
                (reason,) = self.apply([ev], label)
            except Exception:
                self.log.exception("the core failed on an event; it is a dead letter")
                reason = INTERNAL_ERROR
                self._count(label, INTERNAL_ERROR, 1, tally=False)
            out.append(reason)
        return out

    def _count(self, label: str, reason: str, n: int, tally: bool = True) -> None:
        if tally:
            self.dead_letters[reason] += n
        for _ in range(n):
            try:
                self.reject(label, reason)
            except Exception:
                self.log.exception("reject callback failed")

    def _dead_letter(self, item: _Item, why: Rejection, received_at: str) -> bytes:
        """The dead letter of a message; always encodable, whatever the message held."""
        raw = item.payload
        truncated = len(raw) > MAX_PAYLOAD_BYTES
        if truncated:
            raw = raw[:MAX_PAYLOAD_BYTES]
        try:
            text, encoding = raw.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            text, encoding = base64.b64encode(raw).decode("ascii"), "base64"
        body = {
            "reason": why.reason,
            "detail": _encodable(why.detail),
            "topic": _encodable(item.topic),
            "payload": text,
            "encoding": encoding,
            "truncated": truncated,
            "received_at": received_at,
            "event_id": clean_text(why.event_id),  # a lone surrogate would not encode
        }
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _encodable(text: str) -> str:
    """`text` with anything UTF-8 cannot encode (lone surrogates) as a \\uXXXX escape."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _event_source(ref: TopicRef) -> str:
    """FloorEvent.source when the payload names none: the topic below the site."""
    if ref.ident is None:
        return f"mqtt:{ref.kind.value}"
    return f"mqtt:{ref.kind.value}/{ref.ident}"


def _item(m: Message) -> _Item:
    topic, payload, _mid, _qos, retain = m
    try:
        text = topic.decode("utf-8")
    except UnicodeDecodeError:  # brokers check topics are UTF-8; one that did not
        text = topic.decode("utf-8", "replace")
    return _Item(text, payload, retain)
