#!/usr/bin/env bash
# The dashboard's part of CI, for .ci/run to call after `npm ci` (it needs the system packages the
# end-to-end tests already install: v2ray, openssl). Installs Debian's Chromium if missing (never a
# browser download), regenerates the API client from the current OpenAPI document and type-checks
# the dashboard against it, builds it (failing over the initial-JS budget), and runs the browser
# tests: the operator flow against a real V2Ray core, axe on every main page, keyboard, RTL.
set -euo pipefail
cd "$(dirname "$0")/.."
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1

if ! command -v chromium >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-dejavu-core >/dev/null
fi
export PORTCULLIS_CHROMIUM="${PORTCULLIS_CHROMIUM:-$(command -v chromium)}"

echo "--- dashboard: API client regenerated from the current OpenAPI document, then type-checked"
npm run -s gen:api
if ! git diff --quiet -- web/src/api/schema.d.ts; then
  echo "note: web/src/api/schema.d.ts differs from the committed one (run npm run gen:api and commit it)"
fi
npm run -s typecheck:web

echo "--- dashboard: build (reports the initial JavaScript against its 300 KB gzipped budget)"
npm run -s build:web

echo "--- dashboard: browser tests in $("$PORTCULLIS_CHROMIUM" --version 2>/dev/null || echo chromium)"
npm run -s test:web
