#!/usr/bin/env bash
# Runs the xdswatch demo (its embedded control plane, no bootstrap needed)
# with its metrics on loopback, and a real Prometheus scraping it with the
# configuration of dashboards/prometheus/ (prometheus.yml, which loads the
# recording and alerting rules of xds-client-rules.yaml), then prints the
# addresses. Ctrl-C (or SIGTERM) stops both.
#
#   scripts/demo-prometheus.sh [XDSWATCH ARGS...]
#
# Without arguments xdswatch watches the demo's listener, route
# configuration, cluster and endpoints, and one cluster the demo does not
# serve (so one cache entry is does_not_exist). Arguments replace those and
# go to xdswatch as they are, flags included (for example --demo-tour, when
# xdswatch has it).
#
# Environment:
#   PROM_ADDR        Prometheus's listen address (default 127.0.0.1:9090)
#   DEMO_DIR         where the binaries, configuration, logs and TSDB go
#                    (default: a new temporary directory, removed at exit)
#   XDSWATCH         an xdswatch binary to run (default: one built from
#                    ./examples/xdswatch into that directory)
#   PROM_INTERVAL    the scrape and rule evaluation interval, such as 1s
#                    for a demo whose rules and alerts move faster
#                    (default: prometheus.yml's, 5s)
#
# Prometheus runs with copies of dashboards/prometheus/prometheus.yml and
# xds-client-rules.yaml, as they are but for PROM_INTERVAL, in that
# directory; the script writes the target file that prometheus.yml names
# (xds-client-targets.json) with xdswatch's metrics address.
#
# Needs Go (unless XDSWATCH is set) and Debian's prometheus package
# (apt-get install prometheus).
set -euo pipefail
cd "$(dirname "$0")/.."

prom_addr=${PROM_ADDR:-127.0.0.1:9090}
if [ -n "${DEMO_DIR:-}" ]; then
  dir=$DEMO_DIR
  mkdir -p "$dir"
  keep_dir=1
else
  dir=$(mktemp -d "${TMPDIR:-/tmp}/xdslens-demo.XXXXXX")
  keep_dir=0
fi

if ! command -v prometheus >/dev/null 2>&1; then
  echo "demo-prometheus: prometheus not found: apt-get install prometheus" >&2
  exit 1
fi

watch_pid=""
prom_pid=""
# stop ends what this script started, by the PIDs it recorded, and waits
# for each.
stop() {
  trap - EXIT INT TERM
  for pid in $prom_pid $watch_pid; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
    fi
  done
  for pid in $prom_pid $watch_pid; do
    wait "$pid" 2>/dev/null || true
  done
  if [ "$keep_dir" = 0 ]; then
    rm -rf "$dir"
  fi
}
trap 'stop; exit 0' INT TERM
trap 'stop' EXIT

# fail prints a message and the tail of a log, and exits.
fail() {
  echo "demo-prometheus: $1" >&2
  if [ -n "${2:-}" ] && [ -f "$2" ]; then
    tail -n 20 "$2" >&2
  fi
  exit 1
}

# xdswatch is built, not run with `go run`, so that the PID recorded is
# xdswatch's own and a signal reaches it.
xdswatch=${XDSWATCH:-}
if [ -z "$xdswatch" ]; then
  xdswatch=$dir/xdswatch
  go build -o "$xdswatch" ./examples/xdswatch
fi

if [ $# -eq 0 ]; then
  set -- lds:demo rds:demo-route cds:demo-cluster eds:demo-cluster cds:demo-missing
fi
# The output file exists before the loop below reads it, whenever the
# background shell gets to open it.
: >"$dir/xdswatch.jsonl"
"$xdswatch" --metrics-addr 127.0.0.1:0 --output json "$@" \
  >"$dir/xdswatch.jsonl" 2>"$dir/xdswatch.log" </dev/null &
watch_pid=$!

# The first line of --output json names the bound metrics address.
metrics=""
for _ in $(seq 300); do
  if ! kill -0 "$watch_pid" 2>/dev/null; then
    fail "xdswatch ended" "$dir/xdswatch.log"
  fi
  metrics=$(head -n 1 "$dir/xdswatch.jsonl" | sed -n 's/.*"metrics":"\([^"]*\)".*/\1/p')
  [ -n "$metrics" ] && break
  sleep 0.1
done
[ -n "$metrics" ] || fail "xdswatch printed no listening line" "$dir/xdswatch.log"

cp dashboards/prometheus/prometheus.yml dashboards/prometheus/xds-client-rules.yaml "$dir/"
if [ -n "${PROM_INTERVAL:-}" ]; then
  case $PROM_INTERVAL in
    *[!0-9a-z]* | [!0-9]*) fail "PROM_INTERVAL=$PROM_INTERVAL: want a Prometheus duration such as 1s" ;;
  esac
  sed -i -E "s/^(  (scrape|evaluation)_interval: ).*/\1\"$PROM_INTERVAL\"/" "$dir/prometheus.yml"
  [ "$(grep -cE "^  (scrape|evaluation)_interval: \"$PROM_INTERVAL\"$" "$dir/prometheus.yml")" = 2 ] ||
    fail "PROM_INTERVAL: prometheus.yml has no global scrape_interval and evaluation_interval to set"
fi
printf '[{"targets": ["%s"]}]\n' "$metrics" >"$dir/xds-client-targets.json"
prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/tsdb" \
  --web.listen-address="$prom_addr" --log.level=warn >"$dir/prometheus.log" 2>&1 &
prom_pid=$!

ready=0
for _ in $(seq 300); do
  if ! kill -0 "$prom_pid" 2>/dev/null; then
    fail "prometheus ended (is $prom_addr in use? set PROM_ADDR)" "$dir/prometheus.log"
  fi
  if curl -fsS "http://$prom_addr/-/ready" >/dev/null 2>&1; then
    ready=1
    break
  fi
  sleep 0.1
done
[ "$ready" = 1 ] || fail "prometheus not ready after 30s" "$dir/prometheus.log"

cat <<EOF
xdswatch (pid $watch_pid):    metrics at http://$metrics/metrics
prometheus (pid $prom_pid):  http://$prom_addr  (alerts: http://$prom_addr/alerts, rules: http://$prom_addr/rules)
Try:
  curl -s http://$metrics/metrics | grep grpc_xds_client
  curl -s 'http://$prom_addr/api/v1/query?query=instance:grpc_xds_client_resources:sum'
Logs and data in $dir. Ctrl-C stops both.
EOF

# Wait until either ends or a signal comes; if one ends, stop the other.
while kill -0 "$watch_pid" 2>/dev/null && kill -0 "$prom_pid" 2>/dev/null; do
  sleep 1 &
  wait $! || true
done
if ! kill -0 "$watch_pid" 2>/dev/null; then
  fail "xdswatch ended" "$dir/xdswatch.log"
fi
fail "prometheus ended" "$dir/prometheus.log"
