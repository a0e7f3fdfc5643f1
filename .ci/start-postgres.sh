#!/usr/bin/env bash
# Start a throw-away PostgreSQL 15 server on a free local port and write its SQLAlchemy URL to
# .ci/.postgres-url and the command that stops it (and removes its files) to .ci/.postgres-stop.
# initdb refuses to run as root, so the server runs as the postgres user.
set -euo pipefail
cd "$(dirname "$0")"
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$bindir" ]; then
  apt-get update -qq && apt-get install -y -qq postgresql >/dev/null
  bindir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
fi
datadir=$(mktemp -d /tmp/perfbot-pg.XXXXXX)
chown postgres "$datadir"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
su postgres -c "$bindir/initdb -D $datadir/data -A trust -U postgres" >/dev/null
su postgres -c "$bindir/pg_ctl -D $datadir/data -o '-p $port -k $datadir -c listen_addresses=127.0.0.1' -l $datadir/log -w start" >/dev/null
echo "postgresql+psycopg://postgres@127.0.0.1:$port/postgres" > .postgres-url
echo "su postgres -c '$bindir/pg_ctl -D $datadir/data -m fast -w stop' >/dev/null; rm -rf $datadir" > .postgres-stop
echo "PostgreSQL running on port $port ($datadir)"
