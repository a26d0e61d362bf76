"""Modbus slot telemetry: register profile, gateway poller, simulator (docs/modbus.md)."""
