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
# Environment: ATOMWATCH_REF (the branch, default master), ATOMWATCH_BASELINE_REF (default
# master), ATOMWATCH_COLLECTOR and ATOMWATCH_TOKEN (atomwatch-ci's), ATOMWATCH_VM_CPUS and
# ATOMWATCH_VM_MEM (vm), ARCH and CROSS_COMPILE (build, as the kernel's make takes them),
# JOBS (default: nproc).
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
-h | --help) usage ;;
*) usage >&2 && exit 2 ;;
esac
