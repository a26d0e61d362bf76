"""Table games: rating sessions from the pit's terminals, over MQTT.

`payloads` is the family of table-rating payloads (schemas, edge checks) that the shared
MQTT transport (adapters.mqtt) validates; `simulator` publishes realistic rating sessions
for the demo and the tests.
"""
