#!/usr/bin/env bash
# The Debian packages the tests need: chromium (the report's browser tests; playwright cannot
# download its own browser here), redis-server (the Redis backend's tests start their own) and
# Java 17 (scan --engine spark's tests run a local Spark).
# Installed when root; otherwise their tests are skipped, with a line saying so.
set -euo pipefail
missing=""
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
command -v redis-server >/dev/null 2>&1 || missing="$missing redis-server"
command -v java >/dev/null 2>&1 || missing="$missing openjdk-17-jre-headless"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing >/dev/null
else
    echo "missing:$missing (not root, or no apt-get): their tests will be skipped" >&2
fi
