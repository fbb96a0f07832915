#!/bin/sh
# The steps of a kernel tree's CI job with atomwatch (ci/kernel/README.md): build the kernel at
# the commit with atomwatch.config merged in, boot it on a measuring host (a VM with KVM, or
# kexec on a dedicated machine) whose atomwatch-kernel-run unit measures it, wait for the run,
# then ask the gate against the mainline history.
#
# Usage: ci/kernel/atomwatch-kernel.sh build SRC OUT
#        ci/kernel/atomwatch-kernel.sh vm OUT DISK HOST
#        ci/kernel/atomwatch-kernel.sh kexec OUT SSH_HOST HOST
#        ci/kernel/atomwatch-kernel.sh commit SRC
#        ci/kernel/atomwatch-kernel.sh gate SRC HOSTS
#        ci/kernel/atomwatch-kernel.sh bisect-step SSH_HOST
# Environment: ATOMWATCH_REF (the branch, default master), ATOMWATCH_BASELINE_REF (default
# master), ATOMWATCH_COLLECTOR and ATOMWATCH_TOKEN (atomwatch-ci's), ATOMWATCH_VM_CPUS and
# ATOMWATCH_VM_MEM (vm), ARCH and CROSS_COMPILE (build, as the kernel's make takes them),
# ATOMWATCH_BOOT_WAIT (bisect-step: seconds for the kernel to come up, default 900),
# JOBS (default: nproc).
# bisect-step is the bisect.step of an atomwatch-agent bisecting a kernel range (the worked
# example of ci/kernel/README.md "Bisecting a kernel range"): run by the agent in the kernel
# tree (bisect.repo) with ATOMWATCH_COMMIT, ATOMWATCH_PROJECT and ATOMWATCH_REF set, it builds
# that commit, kexecs the dedicated machine SSH_HOST into it, checks that the kernel it booted
# is that commit and runs the machine's agent there, filing the run under ATOMWATCH_COMMIT.
# Whatever fails exits non-zero, and the bisection skips the commit with the end of this output.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
ref=${ATOMWATCH_REF:-master}
baseline=${ATOMWATCH_BASELINE_REF:-master}
jobs=${JOBS:-$(nproc)}

die() {
	echo "atomwatch-kernel: $*" >&2
	exit 3
}

usage() {
	sed -n '/^# Usage:/,/^# JOBS/p' "$0" | sed 's/^# \{0,1\}//'
}

# The commit the kernel's release names: setlocalversion abbreviates it to 12 digits (more when
# that is ambiguous), and the agent files the run under exactly that, so the gate asks for it.
kernel_commit() {
	git -C "$1" rev-parse --short=12 HEAD
}

image_of() {
	case "${ARCH:-$(uname -m)}" in
	arm64 | aarch64) echo arch/arm64/boot/Image ;;
	*) echo arch/x86/boot/bzImage ;;
	esac
}

cmd_build() {
	src=$1 out=$2
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	[ -f "$src/.config" ] || make -C "$src" defconfig
	"$src/scripts/kconfig/merge_config.sh" -m -O "$src" "$src/.config" "$here/atomwatch.config"
	make -C "$src" olddefconfig
	make -C "$src" -j "$jobs"
	cp "$src/$(image_of)" "$out/"
	make -C "$src" modules_install INSTALL_MOD_PATH="$out/modules" INSTALL_MOD_STRIP=1
	# the atomwatch module against the tree just built; refscale is the kernel's own (=m)
	{
		echo "collector: {url: 'http://127.0.0.1:9', token_file: /dev/null}"
		echo "spool: {dir: '$out/spool'}"
		echo "kernel:"
		echo "  build: '$(cd "$src" && pwd)'"
		echo "  make_vars:"
		[ -z "${ARCH:-}" ] || echo "    ARCH: '$ARCH'"
		[ -z "${CROSS_COMPILE:-}" ] || echo "    CROSS_COMPILE: '$CROSS_COMPILE'"
	} > "$out/kernel-build.yaml"
	atomwatch-agent kernel-build --config "$out/kernel-build.yaml" --out "$out/atomwatch"
	kernel_commit "$src" > "$out/commit"
	echo "atomwatch-kernel: built $(cat "$out/commit") into $out"
}

# Boots the kernel in a KVM guest whose disk is the measuring host's system (agent, its config
# and atomwatch-kernel-run.service installed); the run is filed by the agent inside it.
cmd_vm() {
	out=$1 disk=$2 host=$3
	[ -e /dev/kvm ] || die "no /dev/kvm: a VM measurement needs KVM (TCG only emulates)"
	qemu="qemu-system-$(uname -m)"
	$qemu -enable-kvm -cpu host -smp "${ATOMWATCH_VM_CPUS:-4}" -m "${ATOMWATCH_VM_MEM:-4096}" \
		-nographic -no-reboot -kernel "$out/$(basename "$(image_of)")" \
		-drive file="$disk",if=virtio,format=raw -nic user,model=virtio-net-pci \
		-append "root=/dev/vda1 console=ttyS0 console=ttyAMA0 atomwatch.ref=$ref" &
	cmd_wait "$out" "$host"
	kill $! 2>/dev/null || true
}

# Installs the kernel on a dedicated measuring machine and kexecs into it: no firmware reboot,
# the same hardware the history was measured on; its unit measures the new kernel.
cmd_kexec() {
	out=$1 ssh_host=$2 host=$3
	release=$(ls "$out/modules/lib/modules")
	tar -C "$out/modules" -cf - lib | ssh "$ssh_host" 'tar -C / -xf -'
	scp "$out/$(basename "$(image_of)")" "$ssh_host:/boot/vmlinuz-$release"
	ssh "$ssh_host" "printf 'ATOMWATCH_REF=%s\n' '$ref' > /etc/atomwatch/kernel-run.env &&
		kexec -l /boot/vmlinuz-$release --reuse-cmdline && systemctl kexec" || true
	cmd_wait "$out" "$host"
}

# Installs the kernel built in $1 on $2 (release $3), kexecs it and waits until the machine
# answers with the kernel of commit $4; one that does not come up is left to the machine's
# watchdog or BMC, and its commit is skipped.
bisect_kexec() {
	tar -C "$1/modules" -cf - lib | ssh "$2" 'tar -C / -xf -' ||
		die "bisect-step: cannot install the modules on $2"
	scp -q "$1/$(basename "$(image_of)")" "$2:/boot/vmlinuz-$3" ||
		die "bisect-step: cannot copy the kernel to $2"
	ssh "$2" "kexec -l /boot/vmlinuz-$3 --reuse-cmdline && systemctl kexec" || true
	wait_s=${ATOMWATCH_BOOT_WAIT:-900}
	deadline=$(($(date +%s) + wait_s))
	booted=
	while [ "$(date +%s)" -lt "$deadline" ]; do
		sleep 10
		booted=$(ssh -o ConnectTimeout=10 -o BatchMode=yes "$2" uname -r 2>/dev/null) ||
			booted=
		case "$booted" in
		*-g"$4"*) return 0 ;;
		esac
	done
	[ -n "$booted" ] || die "bisect-step: $2 did not come back within $wait_s s of the kexec into $3"
	die "bisect-step: $2 still runs $booted $wait_s s after the kexec, not the kernel of $4"
}

# One step of a kernel bisection (see the header): build, kexec, check, measure. The machine's
# atomwatch-kernel-run unit takes no part (no env file is written, and the kexec reuses a
# command line without atomwatch.ref): the run is made here, under the full commit the agent
# asked for, and only once the booted kernel's release names that commit.
cmd_bisect_step() {
	ssh_host=$1
	commit=${ATOMWATCH_COMMIT:-}
	[ -n "$commit" ] || die "bisect-step: ATOMWATCH_COMMIT is not set (atomwatch-agent bisect sets it)"
	src=$(pwd)
	out=$(mktemp -d "${TMPDIR:-/tmp}/atomwatch-bisect.XXXXXX")
	trap 'rm -rf "$out"' EXIT
	git -C "$src" checkout -q --detach "$commit" || die "bisect-step: cannot check out $commit"
	cmd_build "$src" "$out" # a kernel that does not build stops here, make's words last
	short=$(cat "$out/commit")
	release=$(ls "$out/modules/lib/modules")
	booted=$(ssh "$ssh_host" uname -r) || die "bisect-step: cannot reach $ssh_host"
	case "$booted" in
	*-g"$short"*) ;; # it runs this commit's kernel already (the previous step's)
	*) bisect_kexec "$out" "$ssh_host" "$release" "$short" ;;
	esac
	ssh "$ssh_host" atomwatch-agent run --config /etc/atomwatch/agent.yaml \
		--project "${ATOMWATCH_PROJECT:-linux}" --commit "$commit" --ref "$ref" --quiet ||
		die "bisect-step: the agent on $ssh_host did not measure $short"
}

cmd_wait() {
	atomwatch-ci wait --project linux --commit "$(cat "$1/commit")" --hosts "$2" \
		--timeout "${ATOMWATCH_WAIT:-2h}"
}

cmd_gate() {
	atomwatch-ci gate --project linux --commit "$(kernel_commit "$1")" \
		--baseline-ref "$baseline" --hosts "$2" --wait 30m \
		--junit atomwatch-junit.xml --markdown atomwatch-summary.md
}

[ $# -ge 1 ] || {
	usage >&2
	exit 2
}
cmd=$1
shift
case "$cmd" in
build) [ $# -eq 2 ] || die "build SRC OUT" && cmd_build "$@" ;;
vm) [ $# -eq 3 ] || die "vm OUT DISK HOST" && cmd_vm "$@" ;;
kexec) [ $# -eq 3 ] || die "kexec OUT SSH_HOST HOST" && cmd_kexec "$@" ;;
commit) [ $# -eq 1 ] || die "commit SRC" && kernel_commit "$1" ;;
gate) [ $# -eq 2 ] || die "gate SRC HOSTS" && cmd_gate "$@" ;;
bisect-step) [ $# -eq 1 ] || die "bisect-step SSH_HOST" && cmd_bisect_step "$@" ;;
-h | --help) usage ;;
*) usage >&2 && exit 2 ;;
esac
