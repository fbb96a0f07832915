#!/bin/sh
# Run by test_packages.py inside a fresh Debian 12 container, with the amd64 packages in /debs:
# installs them with apt (their dependencies from the Debian mirror), checks what the maintainer
# scripts did, starts the collector the way its installed unit says, creates a token, uploads a
# run with the installed agent and asks the gate with the installed atomwatch-ci.
# Every failed check prints "FAIL: what" and exits 1; the last line of a good run is "PASS".
set -eu
export DEBIAN_FRONTEND=noninteractive

fail() {
	echo "FAIL: $*"
	[ -f /tmp/collector.log ] && sed 's/^/collector: /' /tmp/collector.log
	exit 1
}

# A request to the collector on 127.0.0.1:8080 with bash's /dev/tcp (no HTTP client in the
# image); prints the reply, headers included.
http_get() {
	bash -c 'exec 3<>/dev/tcp/127.0.0.1/8080 &&
		printf "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" "$1" >&3 && cat <&3' _ "$1"
}

apt-get update -q >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; fail "apt-get update"; }
apt-get install -y -q --no-install-recommends /debs/*.deb pkgconf man-db >>/tmp/apt.log 2>&1 ||
	{ tail -40 /tmp/apt.log; fail "apt-get install of the packages"; }
echo "installed: $(dpkg-query -W -f='${Package} ${Version}, ' 'atomwatch-*')"

# maintainer scripts: the system user, its state directory, the units enabled (no systemd runs
# here, so nothing can have been started)
getent passwd atomwatch >/dev/null || fail "no atomwatch user"
[ "$(getent passwd atomwatch | cut -d: -f7)" = /usr/sbin/nologin ] || fail "atomwatch has a shell"
[ "$(id -u atomwatch)" -lt 1000 ] || fail "atomwatch is not a system user"
[ "$(stat -c '%U:%G %a' /var/lib/atomwatch)" = "atomwatch:atomwatch 750" ] ||
	fail "/var/lib/atomwatch is $(stat -c '%U:%G %a' /var/lib/atomwatch)"
for unit in atomwatch-agent atomwatch-collector; do
	[ -f /lib/systemd/system/$unit.service ] || fail "no $unit.service"
	[ -L /etc/systemd/system/multi-user.target.wants/$unit.service ] || fail "$unit not enabled"
done
for f in agent.yaml collector.yaml thresholds.yaml; do
	[ -f /etc/atomwatch/$f ] || fail "no /etc/atomwatch/$f"
	grep -qx "/etc/atomwatch/$f" /var/lib/dpkg/info/atomwatch-*.conffiles || fail "$f is no conffile"
done
for page in atomwatch-run.1 atomwatch-agent.1 atomwatch-ci.1 atomwatch-collector.8; do
	section=${page##*.}
	out=$(man --warnings -l /usr/share/man/man$section/$page.gz 2>&1 >/dev/null) ||
		fail "man $page"
	[ -z "$out" ] || fail "man --warnings $page: $out"
done
[ "$(pkg-config --modversion atomwatch-subject)" = 0.1.0 ] || fail "pkg-config --modversion"
pkg-config --cflags atomwatch-subject >/dev/null || fail "pkg-config --cflags"
[ -f /usr/include/atomwatch/subject.h ] || fail "no subject.h"
atomwatch-run --profile quick --list >/tmp/list.txt || fail "atomwatch-run --list"
grep -q "op=plain cpu=0" /tmp/list.txt || fail "atomwatch-run --list: $(head -5 /tmp/list.txt)"

# the collector, as its unit runs it
unit=/lib/systemd/system/atomwatch-collector.service
exec_start=$(sed -n 's/^ExecStart=//p' $unit)
user=$(sed -n 's/^User=//p' $unit)
cd "$(sed -n 's/^WorkingDirectory=//p' $unit)"
# shellcheck disable=SC2086
setpriv --reuid="$user" --regid="$user" --init-groups $exec_start >/tmp/collector.log 2>&1 &
collector=$!
cd /
tries=0
until http_get /healthz 2>/dev/null | head -n 1 | grep -q ' 200 '; do
	tries=$((tries + 1))
	[ $tries -lt 100 ] || fail "no /healthz after 10 s"
	kill -0 $collector 2>/dev/null || fail "the collector exited"
	sleep 0.1
done
echo "collector: $(head -n 2 /tmp/collector.log | tr '\n' ' ')"

token=$(setpriv --reuid="$user" --regid="$user" --init-groups atomwatch-collector token create \
	--db sqlite:/var/lib/atomwatch/atomwatch.db --role agent --host pkg-test | tail -n 1)
[ -n "$token" ] || fail "token create"
(umask 077 && echo "$token" >/etc/atomwatch/agent.token)

# the agent, with the installed example configuration pointed at this collector
sed -e 's|^  url: .*|  url: http://127.0.0.1:8080|' -e 's|^  name: graviton4-a .*|  name: pkg-test|' \
	-e 's|^  profile: default .*|  profile: quick\n  cpus: "0"\n  ops: [plain, c11_relaxed]\n  samples: 20|' \
	-e '/^subjects:/,$d' /etc/atomwatch/agent.yaml >/tmp/agent.yaml
run_id=$(atomwatch-agent run --config /tmp/agent.yaml --project pkgtest --commit 0123abcd \
	--ref main --quiet) || fail "atomwatch-agent run: $run_id"
echo "run: $run_id"
reply=$(http_get "/api/v1/runs/$run_id")
echo "$reply" | head -n 1 | grep -q ' 200 ' || fail "GET /api/v1/runs/$run_id: $reply"
echo "$reply" | grep -q '"pkg-test"' || fail "the run is not of host pkg-test: $reply"
[ -z "$(ls /var/lib/atomwatch/spool/*.json 2>/dev/null | grep -v state.json)" ] ||
	fail "the result is still in the spool"

gate=$(atomwatch-ci gate --collector http://127.0.0.1:8080 --project pkgtest --commit 0123abcd \
	--hosts pkg-test --quiet 2>&1) || fail "atomwatch-ci gate ($?): $gate"
echo "gate: $gate" | head -n 1

kill -TERM $collector
wait $collector || fail "the collector's exit status after SIGTERM: $?"
grep -q stopped /tmp/collector.log || fail "no clean stop"
echo PASS
