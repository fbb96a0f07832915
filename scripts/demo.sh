#!/bin/sh
# The main job of atomwatch on this host: installs the build dependencies, builds, and measures
# the quick matrix, printing the table.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh scripts/deps.sh build
sh scripts/build.sh native
exec build/native/runner/atomwatch-run --profile quick
