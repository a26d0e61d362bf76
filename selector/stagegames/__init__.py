"""Stage games of Gold Reef City's "Turn up the heat" (seed 000, issue 19), pure core.

One small state machine per mechanic, fed by host commands, each emitting plain records:
`podium` (the randomiser), `bonus` (the 15:00 twelve boxes), `paddles` (19:00),
`safe` (the 21:00 digit safe), `cars` (qualifying spots and the car final); `ledger`
holds every prize and derives the safe's progressive; `derive` is derivation stage-v1
(every hidden content from the game's committed seed); `verify` re-runs a game from its
records and revealed seed. See docs/stagegames.md and docs/fairness.md.
"""
