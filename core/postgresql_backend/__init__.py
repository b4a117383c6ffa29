"""Django's PostgreSQL backend with a health check that needs no round trip (see ``base``)."""
