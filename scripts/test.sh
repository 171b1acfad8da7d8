#!/usr/bin/env bash
# Sets up the machine and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
export SWIFT_DETERMINISTIC_HASHING=1

bash scripts/setup.sh
# Build everything first: some tests run the `syncnode` executable as a child process.
swift build --build-tests
swift test --skip-build "$@"
