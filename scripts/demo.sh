#!/bin/sh
# The main job of atomwatch, on a fresh Debian 12 machine as root: installs the build
# dependencies, builds, then tells the story of scripts/demo-story.sh: a collector on SQLite,
# a small library measured by the agent at each commit, real Neoverse-V2 figures as reference
# hosts, and atomwatch-ci passing a plain per-CPU increment and blocking its "hardening" with
# lock xadd + mfence. Prints the report's address; the collector is left running.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh scripts/deps.sh build
sh scripts/build.sh native
exec sh scripts/demo-story.sh
