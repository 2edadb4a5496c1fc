#!/usr/bin/env bash
# The project's test command: unit, golden and end-to-end tests, then the
# independent check that the Arrow files of a real run open in another
# reader (the npm package apache-arrow, installed on first use).
set -euo pipefail
cd "$(dirname "$0")/.."
go test -count=1 -timeout 20m ./...
