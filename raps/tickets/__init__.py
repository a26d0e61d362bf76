"""Draw tickets in the daemon: the core's ticket ledger made durable and served.

`desk` journals every credit and entry and restores them after a restart;
raps.ticket_routes serves kiosks, the casino app and the staff pages.
See docs/tickets.md.
"""
