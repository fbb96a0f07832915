#!/bin/sh
# Runs libFuzzer targets for a while and prints, per target, the executions per second, the
# coverage (libFuzzer's "cov": edges of the instrumented code reached) and the corpus size.
# The targets come from scripts/build.sh fuzz (every library instrumented). New inputs go to a
# scratch copy of the corpus; a crash, leak or timeout leaves its input in the scratch dir and
# makes the script fail. Figures: docs/benchmarks.md.
# usage: bench/fuzz/run.sh TARGET|all [SECONDS] [JOBS]   (default 60 s, 1 job per target)
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
bin=${AW_FUZZ_BUILD:-$top/build/fuzz}/fuzz
secs=${2:-60}
jobs=${3:-1}
if [ "${1:-}" = all ] || [ -z "${1:-}" ]; then
	set -- $(cd "$top/fuzz/corpus" && ls)
else
	set -- "$1"
fi
scratch=$(mktemp -d /tmp/aw-fuzz-XXXXXX)
status=0
printf '%-24s %8s %10s %8s %8s %s\n' target seconds exec/s cov corpus result
for t in "$@"; do
	[ -x "$bin/$t" ] || { echo "run.sh: no $bin/$t (sh scripts/build.sh fuzz)" >&2; exit 2; }
	mkdir -p "$scratch/$t"
	cp "$top/fuzz/corpus/$t/"* "$scratch/$t/"
	log=$scratch/$t.log
	(cd "$scratch" && "$bin/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$scratch/$t-" \
		$([ "$jobs" -gt 1 ] && echo "-fork=$jobs") "$scratch/$t" >"$log" 2>&1)
	rc=$?
	execs=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	files=$(ls "$scratch/$t" | wc -l)
	result=ok
	if [ $rc -ne 0 ]; then
		result="FAILED (rc $rc, see $log)"
		status=1
	fi
	printf '%-24s %8s %10s %8s %8s %s\n' "$t" "$secs" "${execs:-?}" "${cov:-?}" "$files" "$result"
done
echo "scratch: $scratch"
exit $status
