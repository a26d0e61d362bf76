"""The gateway register profile: where a machine's status, card and meters sit.

No industry register map exists for slot machines on Modbus, so RAPS defines a
default one (docs/modbus.md has the table) and lets every field be moved,
resized and re-encoded per gateway in config (`RegisterMap`).  Each machine is
one block of holding registers; the poller reads the block, `decode_block`
turns it into a `Reading`, and a field that does not decode is reported by name
instead of taking the machine (or the loop) down.

Encodings, all unsigned:

- `uint16`, `uint32`, `uint64`: binary, 1, 2 or 4 registers.  `word_order`
  "big" puts the most significant register first (Modbus's usual "ABCD");
  `byte_order` "little" swaps the two bytes inside each register ("BADC").
- `bcd`: packed BCD, four decimal digits a register, most significant digit
  first in the same word order; a nibble above 9 is a decode error.
- `ascii`: two characters a register (first character in the high byte unless
  `byte_order` is "little"), padded with NUL or spaces; only for the card.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Encoding = Literal["uint16", "uint32", "uint64", "bcd", "ascii"]
FieldName = Literal["status", "card", "coin_in", "games_played", "last_wager", "win"]
OptionalField = Literal["status", "card", "last_wager", "win"]

FIELDS: tuple[FieldName, ...] = ("status", "card", "coin_in", "games_played", "last_wager", "win")
_WIDTH = {"uint16": 1, "uint32": 2, "uint64": 4}
MAX_READ = 125  # registers in one read holding registers request (Modbus spec)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class DecodeError(ValueError):
    """A field whose registers do not hold a value of its encoding."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(f"{field}: {detail}")
        self.field = field
        self.detail = detail


class RegisterField(_Model):
    """One value in a machine's block: where it starts, how it is encoded."""

    offset: int = Field(ge=0, lt=MAX_READ, description="registers from the block start")
    encoding: Encoding
    length: int | None = Field(
        default=None, ge=1, le=16, description="registers; fixed for uintN, needed for bcd/ascii"
    )
    rollover: int | None = Field(
        default=None,
        ge=2,
        description="a meter's roll-over modulus when the gateway's source counter wraps "
        "before the register does (SAS 8-digit BCD copied into a uint32: 100000000)",
    )

    @model_validator(mode="after")
    def _length(self) -> RegisterField:
        width = _WIDTH.get(self.encoding)
        if width is not None and self.length not in (None, width):
            raise ValueError(f"length: {self.encoding} is {width} register(s), not {self.length}")
        if width is None and self.length is None:
            raise ValueError(f"length: {self.encoding} needs its number of registers")
        if self.rollover is not None:
            if self.encoding == "ascii":
                raise ValueError("rollover: only for a numeric meter")
            if self.rollover > self.native_modulus:
                raise ValueError(
                    f"rollover: {self.rollover} exceeds what {self.encoding} x{self.size} "
                    f"holds ({self.native_modulus})"
                )
        return self

    @property
    def size(self) -> int:
        """Registers the field occupies."""
        return _WIDTH.get(self.encoding) or self.length or 1

    @property
    def native_modulus(self) -> int:
        """Where a counter in this encoding's registers rolls over to 0."""
        digits: int = 4 * self.size
        return 10**digits if self.encoding == "bcd" else 1 << (4 * digits)

    @property
    def modulus(self) -> int:
        """Where the counter rolls over: the configured `rollover`, else the registers' own.

        A gateway that copies a SAS 8-digit BCD meter into a uint32 register wraps at
        10^8, far below 2^32: without the modulus that wrap reads as a RAM clear.
        """
        return self.rollover if self.rollover is not None else self.native_modulus


class StatusBits(_Model):
    """Bit numbers (0 = least significant) in the status register; -1: not reported."""

    online: int = Field(default=0, ge=-1, le=15)
    door_open: int = Field(default=1, ge=-1, le=15)
    out_of_service: int = Field(default=2, ge=-1, le=15)
    tilt: int = Field(default=3, ge=-1, le=15)
    handpay: int = Field(default=4, ge=-1, le=15)

    @model_validator(mode="after")
    def _distinct(self) -> StatusBits:
        used = [b for b in self.model_dump().values() if b >= 0]
        if len(used) != len(set(used)):
            raise ValueError("two status flags share one bit")
        return self


class RegisterMap(_Model):
    """A gateway's register layout; the defaults are the RAPS default profile."""

    stride: int = Field(default=16, ge=1, le=MAX_READ, description="registers between blocks")
    word_order: Literal["big", "little"] = "big"
    byte_order: Literal["big", "little"] = "big"
    meter_units: Literal["credits", "minor"] = Field(
        default="credits", description="credits are multiplied by the machine's denomination"
    )
    card_width: int = Field(default=0, ge=0, le=32, description="zero-pad numeric cards to this")
    status: RegisterField = RegisterField(offset=0, encoding="uint16")
    status_bits: StatusBits = StatusBits()
    card: RegisterField = RegisterField(offset=1, encoding="uint64")
    coin_in: RegisterField = RegisterField(offset=5, encoding="uint32")
    games_played: RegisterField = RegisterField(offset=7, encoding="uint32")
    last_wager: RegisterField = RegisterField(offset=9, encoding="uint32")
    win: RegisterField = RegisterField(offset=11, encoding="uint32")
    absent: list[OptionalField] = Field(
        default_factory=list, description="optional fields this gateway does not provide"
    )

    @model_validator(mode="after")
    def _layout(self) -> RegisterMap:
        problems: list[str] = []
        present = self.fields()
        if "status" in present and self.status.encoding != "uint16":
            problems.append("status: must be uint16 (a bit field)")
        for name in ("coin_in", "games_played", "last_wager", "win"):
            f = present.get(name)
            if f is not None and f.encoding == "ascii":
                problems.append(f"{name}: a meter cannot be ascii")
        not_meters: tuple[FieldName, ...] = ("status", "card", "last_wager")
        for name in not_meters:
            f = present.get(name)
            if f is not None and f.rollover is not None:
                problems.append(f"{name}: rollover is for the meters coin_in, games_played, win")
        taken: dict[int, str] = {}
        for name, f in present.items():
            for r in range(f.offset, f.offset + f.size):
                if r in taken:
                    problems.append(f"{name}: register {r} is also {taken[r]}")
                    break
                taken[r] = name
        if self.span > self.stride:
            problems.append(f"stride: {self.stride} is shorter than the block ({self.span})")
        if self.span > MAX_READ:
            problems.append(f"block of {self.span} registers exceeds one read ({MAX_READ})")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def fields(self) -> dict[FieldName, RegisterField]:
        """The fields this gateway provides, by name."""
        skip = set(self.absent)
        return {n: getattr(self, n) for n in FIELDS if n not in skip}

    @property
    def span(self) -> int:
        """Registers to read per machine: from the block start to the last field's end."""
        return max(f.offset + f.size for f in self.fields().values())


DEFAULT_MAP = RegisterMap()


@dataclass(frozen=True, slots=True)
class StatusFlags:
    online: bool = True
    door_open: bool = False
    out_of_service: bool = False
    tilt: bool = False
    handpay: bool = False


@dataclass(frozen=True, slots=True)
class Reading:
    """One machine block, decoded.  None: not provided or not decodable (see `errors`).

    `card` is "" when no card is in.  Meters are raw counter values in the
    register's units (credits or minor units, per `meter_units`).
    """

    status: int | None = None
    card: str | None = None
    coin_in: int | None = None
    games_played: int | None = None
    last_wager: int | None = None
    win: int | None = None
    errors: tuple[DecodeError, ...] = ()


# --------------------------------------------------------------------- codecs


def _swapped(words: Sequence[int], rmap: RegisterMap) -> list[int]:
    """Each register with its bytes in big-endian order (its own inverse)."""
    out = [w & 0xFFFF for w in words]
    if rmap.byte_order == "little":
        out = [((w & 0xFF) << 8) | (w >> 8) for w in out]
    return out


def _ordered(words: Sequence[int], rmap: RegisterMap) -> list[int]:
    """A number's registers most significant first, bytes big-endian (strings: no reorder)."""
    out = _swapped(words, rmap)
    if rmap.word_order == "little":
        out.reverse()
    return out


def _as_wire(words: list[int], rmap: RegisterMap) -> list[int]:
    """The inverse of `_ordered`: the registers a gateway would hold."""
    return _swapped(words[::-1] if rmap.word_order == "little" else words, rmap)


def decode_value(name: str, f: RegisterField, regs: Sequence[int], rmap: RegisterMap) -> int | str:
    """The field's value from a block's registers (an int, or a str for ascii)."""
    raw = regs[f.offset : f.offset + f.size]
    if len(raw) < f.size:
        raise DecodeError(
            name, f"block has {len(regs)} registers, field ends at {f.offset + f.size}"
        )
    if f.encoding == "ascii":
        data = b"".join(w.to_bytes(2, "big") for w in _swapped(raw, rmap))
        text = data.rstrip(b"\x00 ").lstrip(b" ")
        try:
            s = text.decode("ascii")
        except UnicodeDecodeError:
            raise DecodeError(name, f"not ASCII: {data.hex()}") from None
        if not s.isprintable() or any(c.isspace() for c in s):
            raise DecodeError(name, f"not a printable word: {data.hex()}")
        return s
    words = _ordered(raw, rmap)
    if f.encoding == "bcd":
        digits = "".join(f"{w:04x}" for w in words)
        if not digits.isdigit():
            raise DecodeError(name, f"not BCD: {digits}")
        return int(digits)
    value = 0
    for w in words:
        value = (value << 16) | w
    return value


def encode_value(name: str, f: RegisterField, value: int | str, rmap: RegisterMap) -> list[int]:
    """Registers holding `value` in the field's encoding (for simulators and tests)."""
    if f.encoding == "ascii":
        data = str(value).encode("ascii")
        if len(data) > 2 * f.size:
            raise ValueError(f"{name}: {value!r} does not fit in {f.size} registers")
        data = data.ljust(2 * f.size, b"\x00")
        words = [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]
        return _swapped(words, rmap)
    n = int(value)
    if not 0 <= n < f.modulus:
        raise ValueError(f"{name}: {n} does not fit in {f.encoding} x{f.size}")
    if f.encoding == "bcd":
        digits = f"{n:0{4 * f.size}d}"
        words = [int(digits[i : i + 4], 16) for i in range(0, len(digits), 4)]
    else:
        words = [(n >> (16 * (f.size - 1 - i))) & 0xFFFF for i in range(f.size)]
    return _as_wire(words, rmap)


def card_text(value: int | str, rmap: RegisterMap) -> str:
    """The card id as the CMS spells it; "" for no card (0, or an empty string)."""
    if isinstance(value, str):
        return value
    if value == 0:
        return ""
    return f"{value:0{rmap.card_width}d}"


def decode_block(rmap: RegisterMap, regs: Sequence[int]) -> Reading:
    """Decode every provided field; a field that fails is None and listed in `errors`."""
    values: dict[str, int | str | None] = {}
    errors: list[DecodeError] = []
    for name, f in rmap.fields().items():
        try:
            v = decode_value(name, f, regs, rmap)
        except DecodeError as e:
            errors.append(e)
            continue
        if name == "card":
            v = card_text(v, rmap)
        elif isinstance(v, str):  # pragma: no cover - the map forbids ascii meters
            errors.append(DecodeError(name, "text in a numeric field"))
            continue
        values[name] = v
    card = values.get("card")
    return Reading(
        status=_int(values.get("status")),
        card=card if isinstance(card, str) else None,
        coin_in=_int(values.get("coin_in")),
        games_played=_int(values.get("games_played")),
        last_wager=_int(values.get("last_wager")),
        win=_int(values.get("win")),
        errors=tuple(errors),
    )


def _int(v: int | str | None) -> int | None:
    return v if isinstance(v, int) else None


def status_flags(rmap: RegisterMap, word: int | None) -> StatusFlags:
    """The flags in a status register; no status register means online, nothing set."""
    if word is None:
        return StatusFlags()
    bits = rmap.status_bits

    def bit(n: int, default: bool = False) -> bool:
        return default if n < 0 else bool((word >> n) & 1)

    return StatusFlags(
        online=bit(bits.online, default=True),
        door_open=bit(bits.door_open),
        out_of_service=bit(bits.out_of_service),
        tilt=bit(bits.tilt),
        handpay=bit(bits.handpay),
    )


def status_word(rmap: RegisterMap, flags: StatusFlags) -> int:
    """The status register for `flags` (bits the map does not report stay 0)."""
    bits = rmap.status_bits
    word = 0
    for name in ("online", "door_open", "out_of_service", "tilt", "handpay"):
        n = getattr(bits, name)
        if n >= 0 and getattr(flags, name):
            word |= 1 << n
    return word


def encode_block(rmap: RegisterMap, values: Mapping[str, int | str]) -> list[int]:
    """A machine block (span registers) holding `values`; fields not given are 0."""
    regs = [0] * rmap.span
    for name, f in rmap.fields().items():
        v = values.get(name)
        if v is None:
            continue
        if name == "card" and v == "":
            v = "" if f.encoding == "ascii" else 0
        regs[f.offset : f.offset + f.size] = encode_value(name, f, v, rmap)
    return regs
