#!/usr/bin/env bash
# Runs docs/DEPLOY.md's install and try-it blocks as written (the fenced blocks after the
# `<!-- ci: deploy-install` and `<!-- ci: deploy-try` markers), so the documented install and CI
# cannot drift apart. Differences from a server, and only these: `sudo` is a no-op (CI runs as root),
# `npm install -g` goes into a temporary prefix (npm_config_prefix) instead of /usr/local, and PORT
# is a free port. Ends with the served /health and /dashboard/ the try-it block checks.
set -euo pipefail
cd "$(dirname "$0")/.."
doc=docs/DEPLOY.md

. scripts/lib/doc-blocks.sh

install=$(doc_blocks "$doc" deploy-install)
try=$(doc_blocks "$doc" deploy-try)
[ -n "$install" ] || { echo "no deploy-install block in $doc" >&2; exit 1; }
[ -n "$try" ] || { echo "no deploy-try block in $doc" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"; rm -f portcullis-*.tgz' EXIT
export npm_config_prefix="$work/prefix"
export PATH="$work/prefix/bin:$PATH"
PORT=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
export PORT
rm -f portcullis-*.tgz

printf -- '--- docs/DEPLOY.md, deploy-install:\n%s\n' "$install"
printf -- '--- docs/DEPLOY.md, deploy-try:\n%s\n---\n' "$try"
# In a session of its own, so whatever the blocks start (the server, if a check fails before the
# block's `kill`) ends with the script.
setsid bash -euo pipefail -c "sudo() { \"\$@\"; }; $install
$try" &
group=$!
trap 'kill -- -"$group" 2>/dev/null || true; rm -rf "$work"; rm -f portcullis-*.tgz' EXIT
wait "$group"
test "$(command -v portcullis)" = "$work/prefix/bin/portcullis"
echo "deploy doc check: installed $(portcullis --version) from the tarball, /health and /dashboard/ served"
