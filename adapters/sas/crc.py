"""CRC-16/KERMIT, the SAS message check.

SAS 6.02 §5: CCITT polynomial x^16+x^12+x^5+1, processed least significant bit
first (reflected, 0x8408), seed 0, no final xor, computed over the whole message
including the address byte, and sent least significant byte first.  A 256-entry
table keeps the per-byte cost to one lookup: the codec runs for every reply.
"""

from __future__ import annotations

_POLY = 0x8408  # 0x1021 reflected


def _table() -> tuple[int, ...]:
    out = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _POLY if crc & 1 else crc >> 1
        out.append(crc)
    return tuple(out)


_TABLE = _table()


def crc16_kermit(data: bytes | bytearray | memoryview, seed: int = 0) -> int:
    """The CRC of `data` as an integer (0x2189 for b"123456789")."""
    crc = seed
    table = _TABLE
    for b in data:
        crc = (crc >> 8) ^ table[(crc ^ b) & 0xFF]
    return crc


def with_crc(body: bytes) -> bytes:
    """`body` followed by its CRC, least significant byte first, as sent on the wire."""
    crc = crc16_kermit(body)
    return body + bytes((crc & 0xFF, crc >> 8))


def crc_ok(frame: bytes | bytearray | memoryview) -> bool:
    """True when the last two bytes are the CRC of the rest (LSB first)."""
    if len(frame) < 3:
        return False
    # the CRC of a message followed by its own CRC (LSB first) is zero for this family
    return crc16_kermit(frame) == 0
