"""The pure core of RAPS: floor state, points, pools, draw sessions and fairness proofs.

Nothing in this package does I/O, reads a clock or keeps global state: time, events,
commands and seeds come in as arguments, so the same inputs give the same draws.
"""
