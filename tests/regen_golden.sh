#!/bin/sh
# Regenerate the expected blocks of the pass golden files (tests/passes/*.graph)
# from the current pipeline. Review the diff (git diff tests/passes) before
# committing: every change in it is a change in what the passes do.
#
#   tests/regen_golden.sh [BUILD_DIR]     (default: build)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
ninja -C "$build" test_passes
cd "$root"
GRAPHC_REGEN=1 CK_RUN_CASE=golden "$build/tests/test_passes"
git --no-pager diff --stat -- tests/passes 2>/dev/null || true
