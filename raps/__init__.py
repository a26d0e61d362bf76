"""RAPS floor service: the daemon that wires adapters, the selector core, storage and web."""

__version__ = "0.1.0"
