#!/usr/bin/python3
"""Runs a command (a unit test binary) beside a throw-away PostgreSQL of its own, started the way
the end-to-end harness starts one (initdb and pg_ctl as the postgres user in a temp dir, a free
port, a unix socket only). The command finds it through AW_TEST_PG_HOST (the socket's
directory), AW_TEST_PG_PORT and AW_TEST_PSQL (the psql client). The server is stopped and its
files removed when the command ends, fails or is interrupted.

usage: with_postgres.py COMMAND [ARG...]"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import harness as h  # noqa: E402


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    pg = h.Postgres().start()
    psql = os.path.join(h.PG_BIN, "psql")
    env = dict(os.environ, AW_TEST_PG_HOST=pg.dir, AW_TEST_PG_PORT=str(pg.port),
               AW_TEST_PSQL=psql if os.path.exists(psql) else "psql")
    proc = h._track(subprocess.Popen(sys.argv[1:], env=env))
    rc = proc.wait()
    h._cleanup_all()
    sys.exit(rc if rc >= 0 else 128 - rc)


if __name__ == "__main__":
    main()
