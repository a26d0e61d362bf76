"""Floor sources the daemon runs in-process: each feeds FloorEvents to the service."""
