#!/usr/bin/env bash
# Runs the chaos test (test/infra/chaos.test.ts) over many seeds: faults at every call of the cloud path
# (s3rver, dynalite, the BigQuery emulator, PostgreSQL), compared with a fault-free load of the same batches.
# CI runs a few fixed seeds; this runs the rest. Needs PostgreSQL on 127.0.0.1:5432 (db test).
#
#   scripts/chaos.sh            seeds 1-200 at the default rate
#   scripts/chaos.sh 7,40-60    those seeds
#   DIMSYNC_CHAOS_RATE=0.25 scripts/chaos.sh 1-50
set -euo pipefail
cd "$(dirname "$0")/.."
export DIMSYNC_CHAOS_SEEDS="${1:-1-200}"
exec npx vitest run test/infra/chaos.test.ts
