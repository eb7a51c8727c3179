#!/bin/bash
# mix.sh <out> <rounds> "<caps>" name=ENV=VAL,...@bench ...: per round, the
# stream then P,E100 (ab.sh), variants alternating.
here=$(dirname "$0"); out=$1; rounds=$2; caps=$3; shift 3
for r in $(seq 1 $rounds); do
  bash $here/ab.sh $out/st-round-$r 1 "$caps" stream "$@"
  bash $here/ab.sh $out/pe-round-$r 1 "$caps" pe "$@"
done
