"""The stage games in the daemon (issue 19): the desk that runs them after the ticket
draws (`desk`), what pays their winners (`pay`), what the pages see (`views`),
`raps verify`'s checks of their streams (`audit`) and the reports (`reports`); their
routes are raps/game_routes.py. The rules are selector.stagegames';
docs/stagegames.md describes both.
"""
