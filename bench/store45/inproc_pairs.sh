#!/bin/sh
# In-process pairs, main's store and the variant alternated (odd pairs main first), each a process of its own:
# `apply_batch` timed whole (no proxy), best of 2 rounds. One JSON line a run on stdout. The switch STORE45_VARIANT
# is read in commit 66acbae only (sinks/statements.py): after it both runs are the branch's code.
#   sh bench/store45/inproc_pairs.sh 6 > /tmp/store45/inproc.jsonl
pairs=${1:-5}
i=1
while [ "$i" -le "$pairs" ]; do
    if [ $((i % 2)) -eq 1 ]; then order="0 1"; else order="1 0"; fi
    for v in $order; do
        STORE45_VARIANT=$v .venv/bin/python -m bench.store45.itemise --bare --rounds 2 | sed "s/^{/{\"pair\": $i, /"
    done
    i=$((i + 1))
done
