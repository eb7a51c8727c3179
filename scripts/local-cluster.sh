#!/usr/bin/env bash
# Starts a three-node evendb cluster on loopback ports for trying it out:
#   scripts/local-cluster.sh [DIR]      (default DIR: ./evendb-cluster)
# Nodes 1-3 serve Redis clients on 127.0.0.1:6381-6383 and talk Raft on
# 127.0.0.1:7381-7383; their stores and logs are under DIR/n1..n3.
# Ctrl-C (or SIGTERM) stops all three cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-evendb-cluster}
cargo build --release -q -p evendb-server
BIN=target/release/evendb-server
MEMBERS=1@127.0.0.1:7381/127.0.0.1:6381,2@127.0.0.1:7382/127.0.0.1:6382,3@127.0.0.1:7383/127.0.0.1:6383
mkdir -p "$DIR"
PIDS=()
for i in 1 2 3; do
    "$BIN" --dir "$DIR/n$i" --port 638$i --cluster --cluster-id $i \
        --cluster-members "$MEMBERS" --metrics-bind 127.0.0.1:938$i \
        >"$DIR/n$i.out" 2>"$DIR/n$i.log" &
    PIDS+=($!)
done
trap 'kill -TERM "${PIDS[@]}" 2>/dev/null; wait; echo "cluster stopped"' INT TERM EXIT
sleep 1
echo "evendb cluster: nodes on 127.0.0.1:6381, 6382, 6383 (metrics on 9381-9383), data in $DIR"
echo "try:  redis-cli -c -p 6382 SET hello world   # -c follows the MOVED redirect to the leader"
echo "      redis-cli -p 6381 CLUSTER INFO"
echo "Ctrl-C stops the cluster."
wait
