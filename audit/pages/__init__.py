"""The pit boss's pages (server-rendered, htmx refresh). Access: every view is
wrapped in casino.access.route_page, which reads casino.access.ROUTES."""
