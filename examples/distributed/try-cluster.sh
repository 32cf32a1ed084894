#!/usr/bin/env bash
# Two crawler processes on this machine sharing one near-duplicate index on a 3-node Redis
# Cluster, with the request queue (scrapy-redis) on a Redis server of its own: scrapy-redis cannot
# use a cluster, the index can. Every node keeps an append-only file (appendonly yes), as every
# node of a real cluster must: a node restarted without its data takes part of the index with it
# (the index then refuses to go on; docs/distributed.md). Needs redis-server and redis-cli 6+,
# crawler-dedup with the redis extra and scrapy-redis. Everything it starts runs in a temporary
# folder and is stopped at the end. Ports: QUEUE_PORT, NODE_PORTS, HTTP_PORT (defaults below).
#
#   cd examples/distributed && bash try-cluster.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
queue_port=${QUEUE_PORT:-6390}
read -r -a node_ports <<< "${NODE_PORTS:-7101 7102 7103}"
http_port=${HTTP_PORT:-8000}
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${node_ports[@]}" "$queue_port"; do redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || true; done
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# 1. the cluster: three masters, each with its own folder and append-only file
for p in "${node_ports[@]}"; do
    mkdir -p "$work/node-$p"
    redis-server --port "$p" --bind 127.0.0.1 --dir "$work/node-$p" --appendonly yes --appendfsync everysec \
        --cluster-enabled yes --cluster-config-file nodes.conf --daemonize yes --logfile "$work/node-$p.log"
done
sleep 0.5
redis-cli --cluster create $(printf '127.0.0.1:%s ' "${node_ports[@]}") --cluster-replicas 0 --cluster-yes >/dev/null
until redis-cli -p "${node_ports[0]}" cluster info | grep -q 'cluster_state:ok'; do sleep 0.2; done

# 2. the queue: one server of its own (scrapy-redis)
mkdir -p "$work/queue"
redis-server --port "$queue_port" --bind 127.0.0.1 --dir "$work/queue" --appendonly yes --daemonize yes \
    --logfile "$work/queue.log"
until redis-cli -p "$queue_port" ping >/dev/null 2>&1; do sleep 0.1; done

# 3. a site to crawl: the demo's pages, served on 127.0.0.1, its URLs fed to the queue
crawler-dedup demo --out "$work/demo" >/dev/null
python -m http.server "$http_port" --bind 127.0.0.1 -d "$work/demo/site" >/dev/null 2>&1 & pids+=($!)
grep -v '^#' "$work/demo/urls.txt" | sed -E "s#http://127.0.0.1:[0-9]+#http://127.0.0.1:$http_port#" |
    while read -r u; do redis-cli -p "$queue_port" RPUSH site:start_urls "{\"url\": \"$u\"}" >/dev/null; done

# 4. two crawlers: the queue on its server, the index on the cluster
export REDIS_URL="redis://127.0.0.1:$queue_port/0" DEDUP_REDIS_URL="redis://127.0.0.1:${node_ports[0]}/0"
export MAX_IDLE_TIME_BEFORE_CLOSE=5
cd "$here"
DEDUP_DIR="$work/d1" scrapy crawl site -s DEDUP_STORE_TEXT=False -o "$work/items-1.jsonl" 2>"$work/crawl-1.log" &
first=$!
DEDUP_DIR="$work/d2" scrapy crawl site -s DEDUP_STORE_TEXT=False -o "$work/items-2.jsonl" 2>"$work/crawl-2.log"
wait "$first"

# 5. what they did
# a tracking URL kept before its clean URL came is superseded by it: left out of the feed when
# one crawler met both (DEDUP_FEED_FILTER), else stored and its storage told to remove it (a
# superseded drop-log line, the page_superseded signal): kept = items less the superseded URLs
logs=("$work"/d1/droplog-redis-site-crawl.jsonl "$work"/d2/droplog-redis-site-crawl.jsonl)
superseded=$(cat "${logs[@]}" 2>/dev/null | grep -c '"reason":"superseded"' || true)
kept=$(python - "$work" <<'PY'
import glob, json, sys
work = sys.argv[1]
gone = {r["url"] for p in glob.glob(work + "/d*/droplog-redis-site-crawl.jsonl") for r in map(json.loads, open(p))
        if r.get("reason") == "superseded"}
print(sum(1 for p in glob.glob(work + "/items-*.jsonl") for line in open(p) if line.strip()
          and json.loads(line)["url"] not in gone))
PY
)
echo "kept (over both crawlers): $kept"
echo "dropped: $(cat "${logs[@]}" 2>/dev/null | wc -l) (of them $superseded tracking URLs superseded by their clean URL)"
grep -h "Dedup: " "$work"/crawl-*.log | sed 's/.*\] INFO: //'
crawler-dedup index stats --redis "$DEDUP_REDIS_URL" -s DEDUP_REDIS_PREFIX=site-crawl | head -5
crawler-dedup index verify --redis "$DEDUP_REDIS_URL" -s DEDUP_REDIS_PREFIX=site-crawl | tail -1
