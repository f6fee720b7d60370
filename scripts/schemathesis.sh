#!/usr/bin/env bash
# Runs schemathesis (pip install schemathesis) against a fresh server: every operation
# in openapi.json, all checks, plus the stateful phase. Loopback only, a throwaway data
# directory, one virtual phone, no adb.
#
#   scripts/schemathesis.sh [MAX_EXAMPLES] [extra schemathesis args…]
set -euo pipefail
cd "$(dirname "$0")/.."
max="${1:-50}"
shift || true
cargo build --quiet
dir="$(mktemp -d)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
token="schemathesis-token-0123456789"
printf '[[devices.sim]]\nserial = "sim-1"\nwidth = 540\nheight = 1200\n[devices.adb]\nenabled = false\n' > "$dir/run.toml"
DROIDPILOT_SERVER__TOKENS="$token" DROIDPILOT_LOG__LEVEL=warn \
  target/debug/droidpilot serve --config "$dir/run.toml" --bind "127.0.0.1:$port" --data-dir "$dir" \
  > "$dir/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
schemathesis run "http://127.0.0.1:$port/openapi.json" \
  --header "Authorization: Bearer $token" \
  --checks all --max-examples "$max" --seed 1 \
  --exclude-path /v1/ws "$@"  # a WebSocket endpoint: tests/api/streaming.rs covers it
