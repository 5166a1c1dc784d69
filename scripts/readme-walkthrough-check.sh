#!/usr/bin/env bash
# Runs README.md's "From zero to a working subscription" as written: the block after
# `<!-- ci: walkthrough-serve` in the background (it is "a terminal of its own"), then every block
# after `<!-- ci: walkthrough` in one shell, the way a reader pastes them into the second terminal.
# Differences from a reader's machine, and only these: the demo directories are fresh temporary ones
# instead of /tmp/portcullis-demo and /tmp/v2ray-demo, and BASE is a free port instead of 8080 (the
# README writes the address once, in BASE). Then it checks what the README says the reader sees:
# the core detected, Alice synced, her link, traffic through the real client, and none after revoke.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/doc-blocks.sh

for bin in v2ray jq curl base64; do
  command -v "$bin" >/dev/null || { echo "readme walkthrough: needs $bin" >&2; exit 1; }
done
for port in 10085 8443 10808; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "readme walkthrough: port $port (fixed in the README) is taken on this machine" >&2
    exit 1
  fi
done

work=$(mktemp -d)
PORT=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
export PORT HOST=127.0.0.1
localize() {
  sed -e "s#/tmp/portcullis-demo#$work/portcullis-demo#g" -e "s#/tmp/v2ray-demo#$work/v2ray-demo#g" \
    -e "s#^BASE=http://127.0.0.1:8080#BASE=http://127.0.0.1:$PORT#"
}
serve=$(doc_blocks README.md walkthrough-serve | localize)
steps=$(doc_blocks README.md walkthrough | localize)
[ -n "$serve" ] && [ -n "$steps" ] || { echo "readme walkthrough: no marked blocks in README.md" >&2; exit 1; }
grep -q "127.0.0.1:$PORT" <<<"$steps" || { echo "readme walkthrough: BASE is no longer written once" >&2; exit 1; }

# Each part in a session of its own, so the servers and cores the blocks start end with the check.
setsid bash -c "$serve" > "$work/serve.log" 2>&1 &
serve_group=$!
steps_group=""
cleanup() {
  [ -n "$steps_group" ] && kill -- -"$steps_group" 2>/dev/null
  kill -- -"$serve_group" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
if ! curl -fsS --retry 120 --retry-connrefused --retry-delay 1 -o /dev/null "http://127.0.0.1:$PORT/health"; then
  echo "readme walkthrough: step 1 did not serve /health; its output:" >&2
  tail -n 40 "$work/serve.log" >&2
  exit 1
fi

# The blocks' own background processes (the two v2ray) stay in this session until cleanup.
setsid bash -c "$steps" > "$work/steps.log" 2>&1 &
steps_group=$!
# The last block's curl ends the walkthrough; the v2ray processes it started keep the session open.
for _ in $(seq 1 600); do
  grep -q '^exit [0-9]*$' "$work/steps.log" && break
  kill -0 "$steps_group" 2>/dev/null || break
  sleep 0.2
done
out=$(cat "$work/steps.log")
printf -- '--- the walkthrough printed:\n%s\n---\n' "$out" | cut -c1-220

fail=0
expect() {
  if grep -qE -- "$2" <<<"$out"; then echo "ok: $1"; else echo "FAILED: $1 (expected /$2/)"; fail=1; fi
}
expect "/test detects the core" '"core":"v2ray"'
expect "the grant syncs Alice to the core" '^synced$'
expect "the subscription decodes to her vless link" '^vless://[0-9a-f-]{36}@127\.0\.0\.1:8443\?'
expect "a real v2ray client carries traffic to /health" '^\{"status":"ok","service":"portcullis"'
expect "mihomo's document for her" '^proxies:'
expect "sing-box's outbound for SFA" '"type": "vless"'
expect "after the revoke the same request fails" '^exit (52|56|97)$'
if [ "$fail" -ne 0 ]; then
  echo "--- v2ray server log:"; tail -n 20 "$work/v2ray-demo/v2ray.log" 2>/dev/null
  echo "--- Portcullis:"; tail -n 20 "$work/serve.log"
  exit 1
fi
echo "readme walkthrough: every step as written, from zero to traffic and back"
