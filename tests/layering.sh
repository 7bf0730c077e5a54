#!/usr/bin/env bash
# No module cycle in any build we ship — the server and the tools natively, the four web apps for wasm32,
# tests included: cargo-modules draws each build's graph, tests/layering.py looks for cycles in it.
set -euo pipefail
cd "$(dirname "$0")/.."

wasm="--target wasm32-unknown-unknown"
builds=(
  "--lib"
  "--lib --cfg-test"
  "--lib --features failpoints"
  "--lib --features sqlite-gathered-wal"
  "--bin vegas"
  "--bin vegas --cfg-test"
  "--lib $wasm"
  "--lib $wasm --features preview"
  "--lib $wasm --features verify"
  "--lib $wasm --features responsible"
  "--bin vegas-web $wasm"
)

failed=0
for build in "${builds[@]}"; do
  # shellcheck disable=SC2086 # each build is a list of flags
  graph=$(cargo modules dependencies $build --no-externs --no-sysroot 2>/dev/null) ||
    { echo "cargo modules could not read the build $build" >&2; exit 2; }
  if report=$(python3 tests/layering.py <<<"$graph"); then
    echo "no module cycle: $build"
  else
    echo "MODULE CYCLE in the build $build:"
    echo "$report"
    failed=1
  fi
done
exit "$failed"
