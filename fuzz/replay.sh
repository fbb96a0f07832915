#!/bin/sh
# Runs a libFuzzer target once over each input of its corpus (no fuzzing): the fuzz tests.
# usage: replay.sh TARGET CORPUS_DIR
set -eu
target=$1 dir=$2
[ -d "$dir" ] && [ -n "$(ls -A "$dir")" ] || { echo "replay: no corpus in $dir" >&2; exit 1; }
exec "$target" -error_exitcode=77 "$dir"/*
