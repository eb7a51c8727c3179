#!/bin/bash
# abm.sh <outdir> <rounds> "<caps>" <tag> "<bench args>" name=binary[:malloc_conf] ...: alternating runs, each binary
# with its jemalloc options from the environment (_RJEM_MALLOC_CONF) when given
out=$1; rounds=$2; caps=$3; tag=$4; args=$5; shift 5
mkdir -p $out
for r in $(seq 1 $rounds); do
 for cap in $caps; do
  for nb in "$@"; do
   name=${nb%%=*}; rest=${nb#*=}; b=${rest%%:*}; conf=""; [ "$b" != "$rest" ] && conf=${rest#*:}
   rm -rf /tmp/bw
   if [ -n "$conf" ]; then export _RJEM_MALLOC_CONF=$conf; else unset _RJEM_MALLOC_CONF; fi
   $b --engine evendb $args --memory-limit $cap --dir /tmp/bw --json $out/$tag-$name-$cap-$r.json > $out/$tag-$name-$cap-$r.txt 2>&1
  done
 done
done
unset _RJEM_MALLOC_CONF; rm -rf /tmp/bw
