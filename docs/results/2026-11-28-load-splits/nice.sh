#!/bin/bash
# usage: BIN=<evendb-bench> nice.sh nice|base <out>: a load of 4,000,000 100-byte
# values at 1 GiB, the maintenance and memory threads at nice 10 (nice) or not
mode=$1; out=$2
rm -rf /tmp/bw
${BIN:-evendb-bench} --engine evendb --workload C --duration 1 --distribution zipf-composite --value-size 100 --records 4000000 --memory-limit 1G --dir /tmp/bw > $out 2>&1 &
bp=$!
sleep 1.5
pid=$(pgrep -n -f __run-job)
if [ $mode = nice ]; then for t in /proc/$pid/task/*; do case "$(cat $t/comm)" in evendb-maint*|evendb-memory) renice -n 10 -p $(basename $t) >/dev/null;; esac; done; fi
wait $bp
echo "$mode $(grep -E '^evendb +load +sequential +0' $out | awk '{print $5}') worst=$(grep -E '^evendb +load +sequential +put' $out | awk '{print $NF}')"
