#!/bin/bash
# range_delete example per engine inside a v1 memory cgroup of 256M / 1G
CG=/sys/fs/cgroup/memory
for rep in 1 2; do
 for cap in 256M 1G; do
  case $cap in 256M) budget=64M;; 1G) budget=256M;; esac
  for eng in evendb rocksdb; do
   g=$CG/rd-$cap-$eng-$rep; mkdir -p $g
   echo $cap > $g/memory.limit_in_bytes
   sh -c "echo \$\$ > $g/cgroup.procs; exec /usr/bin/time -v /work/bench/rd/range_delete-head --engine $eng --cache-size $budget --dir /work/bench/rd/d --json $cap-$eng-$rep.json" > $cap-$eng-$rep.txt 2>&1
   echo "cgroup_peak_bytes $(cat $g/memory.max_usage_in_bytes)" >> $cap-$eng-$rep.txt
   rmdir $g 2>/dev/null
  done
 done
done
echo done > done
