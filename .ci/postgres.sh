# shellcheck shell=bash
#
# .ci/postgres.sh starts a throwaway PostgreSQL server for the tests of
# checkpoint/postgres. It is meant to be sourced, not run:
#
#     set -euo pipefail
#     trap 'stop_postgres' EXIT    # or call stop_postgres from the EXIT trap you already have
#     source .ci/postgres.sh
#
# What it does:
#   1. finds initdb and pg_ctl (on PATH, else under /usr/lib/postgresql/*/bin);
#      if there are none it installs Debian's postgresql package
#      (apt-get update && apt-get install -y postgresql; needs root or sudo);
#   2. creates a cluster with initdb in a fresh temporary directory, owned by an
#      unprivileged user when run as root (initdb refuses root): the postgres
#      user if it exists, else nobody;
#   3. starts it with pg_ctl on a free 127.0.0.1 port (unix socket in the temp
#      directory, password authentication over TCP) and waits until it answers.
#
# It exports:
#   LITE_AGENT_TEST_POSTGRES  postgres://postgres:PASSWORD@127.0.0.1:PORT/postgres?sslmode=disable
#                             (a superuser; the tests create and drop their own schemas)
#   LITE_AGENT_TEST_PGCTL     a command line that runs pg_ctl as the cluster's owner,
#                             e.g. "runuser -u postgres -- /usr/lib/postgresql/15/bin/pg_ctl";
#                             split it on spaces and append pg_ctl's arguments
#   LITE_AGENT_TEST_PGDATA    the cluster's data directory (for pg_ctl -D)
#
# and defines stop_postgres, which stops the server and removes the temporary
# directory. Call it from the EXIT trap of the sourcing script; it is safe to
# call more than once and never fails. Sourcing returns non-zero (after
# cleaning up and printing the server log) if the server cannot be started,
# so under set -e the sourcing script stops there; write
# `source .ci/postgres.sh || echo "PostgreSQL tests will be skipped"` to go on
# without it (the tests skip when LITE_AGENT_TEST_POSTGRES is unset).
#
# Works under `set -euo pipefail`; every step checks its own errors because
# bash ignores set -e inside a function called from a || list.

if [[ "${BASH_SOURCE[0]}" == "${0}" ]]; then
	echo "postgres.sh: source this file (source .ci/postgres.sh), do not run it" >&2
	exit 1
fi

_lite_pg_log() { echo "postgres.sh: $*" >&2; }

# _lite_pg_bindir prints the directory holding initdb and pg_ctl.
_lite_pg_bindir() {
	local d p
	if p=$(command -v pg_ctl 2>/dev/null) && command -v initdb >/dev/null 2>&1; then
		d=$(dirname "$(readlink -f "$p")") || return 1
		if [[ -x "$d/initdb" && -x "$d/pg_ctl" ]]; then
			echo "$d"
			return 0
		fi
	fi
	while IFS= read -r d; do
		if [[ -n "$d" && -x "$d/initdb" && -x "$d/pg_ctl" ]]; then
			echo "$d"
			return 0
		fi
	done < <(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V -r)
	return 1
}

_lite_pg_install() {
	local sudo=()
	if [[ $EUID -ne 0 ]]; then
		if ! command -v sudo >/dev/null 2>&1; then
			_lite_pg_log "PostgreSQL is not installed and this is not root; install the postgresql package (apt-get install postgresql)"
			return 1
		fi
		sudo=(sudo)
	fi
	_lite_pg_log "installing PostgreSQL from Debian's packages"
	"${sudo[@]}" apt-get update -qq || return 1
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null || return 1
}

# _lite_pg_port_free reports whether nothing listens on 127.0.0.1:$1.
_lite_pg_port_free() {
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

_lite_pg_start() {
	local bindir user dir pw port try started=0
	_LITE_PG_RUN=()
	if ! bindir=$(_lite_pg_bindir); then
		_lite_pg_install || { _lite_pg_log "could not install PostgreSQL"; return 1; }
		bindir=$(_lite_pg_bindir) || { _lite_pg_log "PostgreSQL installed but initdb/pg_ctl not found under /usr/lib/postgresql/*/bin"; return 1; }
	fi

	if [[ $EUID -eq 0 ]]; then
		if id -u postgres >/dev/null 2>&1; then
			user=postgres
		else
			user=nobody
		fi
		if command -v runuser >/dev/null 2>&1; then
			_LITE_PG_RUN=(runuser -u "$user" --)
		else
			_LITE_PG_RUN=(setpriv "--reuid=$user" "--regid=$(id -g "$user")" --init-groups)
		fi
	fi

	dir=$(mktemp -d "${TMPDIR:-/tmp}/lite-agent-pg.XXXXXX" 2>/dev/null || mktemp -d /tmp/lite-agent-pg.XXXXXX) || return 1
	_LITE_PG_DIR=$dir
	if [[ $EUID -eq 0 ]]; then
		chown "$user:" "$dir" || return 1
		if ! "${_LITE_PG_RUN[@]}" test -w "$dir"; then
			# TMPDIR is not reachable by $user (e.g. under /root): use /tmp.
			rm -rf "$dir"
			dir=$(mktemp -d /tmp/lite-agent-pg.XXXXXX) || return 1
			_LITE_PG_DIR=$dir
			chown "$user:" "$dir" || return 1
		fi
	fi

	pw=$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n') || return 1
	(umask 077 && printf '%s\n' "$pw" >"$dir/pwfile") || return 1
	if [[ $EUID -eq 0 ]]; then chown "$user:" "$dir/pwfile" || return 1; fi

	if ! "${_LITE_PG_RUN[@]}" "$bindir/initdb" -D "$dir/data" -U postgres --pwfile="$dir/pwfile" \
		--auth-local=trust --auth-host=scram-sha-256 -E UTF8 --no-locale --no-sync \
		>"$dir/initdb.log" 2>&1; then
		_lite_pg_log "initdb failed:"
		cat "$dir/initdb.log" >&2
		return 1
	fi
	rm -f "$dir/pwfile"

	for try in 1 2 3 4 5 6 7 8 9 10; do
		port=$((20000 + RANDOM % 40000))
		_lite_pg_port_free "$port" || continue
		{
			echo "# added by .ci/postgres.sh"
			echo "listen_addresses = '127.0.0.1'"
			echo "port = $port"
			echo "unix_socket_directories = '$dir'"
			echo "max_connections = 300"
			echo "fsync = on"
			echo "synchronous_commit = on"
		} >"$dir/data/postgresql.auto.conf" || return 1
		if "${_LITE_PG_RUN[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 start >/dev/null 2>&1; then
			started=1
			break
		fi
		if ! grep -q "could not bind\|could not create listen socket\|Address already in use" "$dir/postgres.log" 2>/dev/null; then
			break
		fi
		_lite_pg_log "port $port was taken (try $try); trying another"
	done
	if [[ $started -ne 1 ]]; then
		_lite_pg_log "pg_ctl start failed; server log:"
		cat "$dir/postgres.log" >&2 2>/dev/null || true
		return 1
	fi

	export LITE_AGENT_TEST_POSTGRES="postgres://postgres:$pw@127.0.0.1:$port/postgres?sslmode=disable"
	export LITE_AGENT_TEST_PGCTL="${_LITE_PG_RUN[*]}${_LITE_PG_RUN[*]:+ }$bindir/pg_ctl"
	export LITE_AGENT_TEST_PGDATA="$dir/data"

	# pg_ctl -w waited for the socket; make sure a password login over TCP works too.
	if [[ -x "$bindir/psql" ]]; then
		for try in 1 2 3 4 5 6 7 8 9 10; do
			if PGPASSWORD=$pw PGCONNECT_TIMEOUT=5 "$bindir/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -Atc 'select 1' >/dev/null 2>&1; then
				break
			fi
			if [[ $try -eq 10 ]]; then
				_lite_pg_log "the server started but a password login over TCP fails; server log:"
				cat "$dir/postgres.log" >&2 2>/dev/null || true
				return 1
			fi
			sleep 0.5
		done
	fi
	_lite_pg_log "PostgreSQL $("$bindir/pg_ctl" --version | awk '{print $3}') running on 127.0.0.1:$port, data in $dir/data (stop it with stop_postgres)"
}

# stop_postgres stops the server started by this file and removes its
# temporary directory. Safe to call more than once; always returns 0.
stop_postgres() {
	local dir=${_LITE_PG_DIR:-}
	_LITE_PG_DIR=
	if [[ -n "$dir" && -d "$dir" ]]; then
		local pgctl=()
		# shellcheck disable=SC2206 # a command line split on spaces, by contract
		[[ -n "${LITE_AGENT_TEST_PGCTL:-}" ]] && pgctl=($LITE_AGENT_TEST_PGCTL)
		if [[ ${#pgctl[@]} -gt 0 && -f "$dir/data/postmaster.pid" ]]; then
			"${pgctl[@]}" -D "$dir/data" -m fast -w -t 30 stop >/dev/null 2>&1 ||
				"${pgctl[@]}" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
		fi
		rm -rf "$dir" || true
	fi
	unset LITE_AGENT_TEST_POSTGRES LITE_AGENT_TEST_PGCTL LITE_AGENT_TEST_PGDATA
	return 0
}

if ! _lite_pg_start; then
	stop_postgres
	return 1
fi
