"""`raps witness`: the independent process that signs each draw's frozen request
(docs/fairness.md "The witness", docs/witness.md)."""
