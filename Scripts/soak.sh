#!/usr/bin/env bash
# The soak: `matchcast serve` with 10,000 followers (set up through its HTTP API) and a feed looping a real recorded
# match for an hour, sampled every minute into a CSV and plotted as an SVG (docs/performance.md, "Soak").
#
#   Scripts/soak.sh                                  # SQLite, 10,000 followers, 60 minutes
#   Scripts/soak.sh --store postgres --postgres-url postgres://postgres@127.0.0.1:5432/postgres
#   Scripts/soak.sh --minutes 5 --followers 1000     # a quick look
#
# Every argument goes to `matchcast-bench soak` (its --help lists them). The recorded match is a Cricsheet match
# turned into a recording by `matchcast import`: $SOAK_MATCH, else the first Cricsheet file in the real data
# ($MATCHCAST_REALDATA, else ../shared/realdata). Results go to $SOAK_OUT (default: soak-results/): the recording,
# soak-<store>.csv and soak-<store>.svg.
set -euo pipefail
cd "$(dirname "$0")/.."

out="${SOAK_OUT:-soak-results}"
realdata="${MATCHCAST_REALDATA:-../shared/realdata}"
match="${SOAK_MATCH:-}"
if [ -z "$match" ]; then
  match="$(find "$realdata/cricsheet" -maxdepth 1 -name '*.json' 2>/dev/null | sort | head -n 1 || true)"
fi
if [ -z "$match" ] || [ ! -f "$match" ]; then
  echo "soak: no recorded match: set SOAK_MATCH to a Cricsheet JSON file, or MATCHCAST_REALDATA to the real data" >&2
  exit 2
fi

swift build -c release --product matchcast
swift build -c release --product matchcast-bench
mkdir -p "$out"
.build/release/matchcast import cricsheet "$match" -o "$out/match.ndjson"
echo "soak: playing $match; results in $out/" >&2
exec .build/release/matchcast-bench soak --recording "$out/match.ndjson" --out "$out" "$@"
