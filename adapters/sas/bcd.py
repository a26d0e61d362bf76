"""Packed BCD, the SAS format for meters and amounts: two decimal digits a byte,
most significant byte first (SAS 6.02 §2.2.3).  A nibble above 9 is a corrupt
frame, reported with the byte offset so a technician can find it in a trace.
"""

from __future__ import annotations


class BcdError(ValueError):
    """A byte that is not two decimal digits; `offset` is its position in the frame."""

    def __init__(self, offset: int, byte: int) -> None:
        super().__init__(f"invalid BCD byte 0x{byte:02X} at offset {offset}")
        self.offset = offset
        self.byte = byte


def encode_bcd(value: int, length: int) -> bytes:
    """`value` as `length` bytes of packed BCD; refuses what does not fit."""
    if value < 0:
        raise ValueError(f"BCD value must be >= 0, got {value}")
    digits = f"{value:0{length * 2}d}"
    if len(digits) > length * 2:
        raise ValueError(f"{value} does not fit in {length} BCD bytes")
    return bytes.fromhex(digits)


def decode_bcd(data: bytes | bytearray | memoryview, offset: int = 0) -> int:
    """The integer in `data`; `offset` is where `data` starts in its frame (for errors)."""
    text = bytes(data).hex()
    if text.isdigit():
        return int(text)
    if not text:
        return 0
    for i, b in enumerate(bytes(data)):
        if (b >> 4) > 9 or (b & 0x0F) > 9:
            raise BcdError(offset + i, b)
    raise AssertionError("unreachable")  # pragma: no cover
