"""SAS 6.02 slot telemetry: codec, transports, host poller, EGM simulator (docs/sas.md)."""
