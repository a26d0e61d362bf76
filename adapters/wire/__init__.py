"""What every adapter shares, below all of them: the FloorEvent wire codec, the hand-off of
event batches to the daemon, and the strict settings base of every adapter's config.

Adapter packages (sas, modbus, tables) never import each other; what they have in common
lives here (or, for MQTT-borne sources, in `adapters.mqtt`, the shared transport).
"""
