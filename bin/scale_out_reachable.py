"""Exit 0 when PostgreSQL and Redis answer at the given URLs; else print why and exit 1."""

from __future__ import annotations

import sys

import dj_database_url


def main(postgres_url: str, redis_url: str) -> int:
    try:
        import psycopg

        db = dj_database_url.parse(postgres_url)
        psycopg.connect(
            host=db["HOST"] or None,
            port=db["PORT"] or None,
            user=db["USER"] or None,
            password=db["PASSWORD"] or None,
            dbname="postgres",
            connect_timeout=3,
        ).close()
    except Exception as exc:  # any failure means: no PostgreSQL pass, and say why
        print(f"PostgreSQL at {postgres_url} does not answer ({str(exc).strip()[:200]})")
        return 1
    try:
        import redis

        redis.Redis.from_url(redis_url, socket_connect_timeout=3).ping()
    except Exception as exc:
        print(f"Redis at {redis_url} does not answer ({str(exc).strip()[:200]})")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
