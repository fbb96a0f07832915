#!/bin/sh
# Readies podman to build and run the Dockerfile's images (and the package tests' containers)
# on a Debian 12 machine without a Docker engine and without a reachable container registry.
# Usage, as root:  sh scripts/container-setup.sh
#
# It installs podman, runc and debootstrap where missing; writes podman's settings for such a
# machine to /etc/containers/containers.conf.d/atomwatch.conf (runc, cgroupfs, ulimits no
# higher than this machine allows); and, where no docker.io/library/debian:bookworm image is
# stored, makes one with debootstrap from the Debian mirror apt already uses, so that
# `FROM debian:bookworm` needs no registry. Build with `podman build --pull=never ...`: a pull
# would try the registry. Running it again changes nothing when all is in place.
set -eu

image=docker.io/library/debian:bookworm
conf_dir=/etc/containers/containers.conf.d
conf=$conf_dir/atomwatch.conf
lock=/run/lock/atomwatch-container-setup.lock

say() {
	echo "container-setup: $*"
}

die() {
	echo "container-setup: $*" >&2
	exit 1
}

[ "$(id -u)" -eq 0 ] || die "run as root (it installs packages, writes $conf and stores images)"

# Two test runs at once must not both debootstrap: one waits for the other.
if command -v flock >/dev/null 2>&1; then
	mkdir -p "$(dirname "$lock")"
	exec 9>"$lock"
	flock 9
fi

# -- the programs --
need=""
for prog in podman runc debootstrap; do
	command -v "$prog" >/dev/null 2>&1 || need="$need $prog"
done
if [ -n "$need" ]; then
	say "installing$need"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	# shellcheck disable=SC2086
	apt-get install -y -q --no-install-recommends $need
fi

# -- podman's settings --
# crun does not start containers under this kind of machine's cgroup v1/v2 mix: runc does, with
# the cgroupfs manager (no systemd to ask). podman gives a container nofile and nproc limits of
# 1048576 by default, which fails ("error setting rlimit type 7: operation not permitted") where
# the hard limits are lower and root may not raise them: ask for this machine's hard limits
# instead, nproc no higher than kernel.pid_max (the most podman itself was seen to run with).
hard_limit() { # the hard limit of /proc/self/limits' line $1, empty when unlimited
	awk -v name="$1" 'index($0, name) == 1 {
		v = substr($0, length(name) + 1); split(v, f, " "); if (f[2] != "unlimited") print f[2]
	}' /proc/self/limits
}
ulimits=""
nofile=$(hard_limit "Max open files")
nproc=$(hard_limit "Max processes")
pid_max=$(cat /proc/sys/kernel/pid_max)
if [ -z "$nproc" ] || [ "$nproc" -gt "$pid_max" ]; then
	nproc=$pid_max
fi
[ -z "$nofile" ] || ulimits="\"nofile=$nofile:$nofile\""
ulimits="$ulimits${ulimits:+, }\"nproc=$nproc:$nproc\""
mkdir -p "$conf_dir"
new=$(mktemp "$conf_dir/.atomwatch.XXXXXX")
trap 'rm -f "$new"' EXIT
{
	echo "# written by atomwatch's scripts/container-setup.sh"
	echo "[containers]"
	echo "default_ulimits = [$ulimits]"
	echo "[engine]"
	echo "runtime = \"runc\""
	echo "cgroup_manager = \"cgroupfs\""
	echo "events_logger = \"file\""
} >"$new"
if [ -f "$conf" ] && cmp -s "$new" "$conf"; then
	rm -f "$new"
	say "podman settings in $conf already in place"
else
	chmod 0644 "$new"
	mv "$new" "$conf"
	say "podman settings written to $conf (runc, cgroupfs, ulimits [$ulimits])"
fi

# -- the base image --
if podman image exists "$image"; then
	say "base image $image already present"
	exit 0
fi

# the first URI of apt's Debian sources (deb822 or one-line format), unless given
mirror=${AW_DEBIAN_MIRROR:-}
if [ -z "$mirror" ] && [ -f /etc/apt/sources.list.d/debian.sources ]; then
	mirror=$(awk '$1 == "URIs:" { print $2; exit }' /etc/apt/sources.list.d/debian.sources)
fi
if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
	mirror=$(awk '$1 == "deb" && $2 !~ /^\[/ { print $2; exit }' /etc/apt/sources.list)
fi
[ -n "$mirror" ] || die "no Debian mirror in apt's sources: set AW_DEBIAN_MIRROR=URL"

root=$(mktemp -d /var/tmp/atomwatch-bookworm.XXXXXX)
trap 'rm -f "$new"; rm -rf "$root"' EXIT
say "no $image here: making it with debootstrap from $mirror (a few minutes)"
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.log" 2>&1 ||
	die "debootstrap failed; its output is in $root.log"
rm -f "$root.log"
# The image's apt reads this machine's Debian sources (updates and security included), not
# third-party ones whose keys the image lacks; debootstrap's own line stays where there are none.
if [ -f /etc/apt/sources.list.d/debian.sources ] || [ -f /etc/apt/sources.list ]; then
	rm -f "$root/etc/apt/sources.list"
	for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
		[ ! -f "$f" ] || cp "$f" "$root$f"
	done
fi
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" -c . | podman import -q --change 'CMD ["bash"]' - "$image" >/dev/null
podman image exists "$image" || die "podman import did not store $image"
say "base image $image ready; build with: podman build --pull=never -t NAME ."
