#!/bin/bash
# How many runs should share one device? Training steps per second of dit.py with W copies at once.
#     bash tools/rate_scan.sh                       # W = 1 2 4 8 on the GPU, 40 s each
#     DEVICE=cpu COUNTS="1 2" bash tools/rate_scan.sh
set -u
cd "$(dirname "$0")/.."
DEVICE=${DEVICE:-cuda}; EACH=${SECONDS_EACH:-40}; LOGS=${LOGS:-/tmp/rate_scan}; PYTHON=${PYTHON:-python3}
mkdir -p "$LOGS"
for W in ${COUNTS:-1 2 4 8}; do
  rm -rf "$LOGS"/w$W-*
  for i in $(seq 1 $W); do                 # the cores split between the copies; Ctrl-C (INT) after EACH seconds
    OMP_NUM_THREADS=$(( $(nproc) / W > 0 ? $(nproc) / W : 1 )) PYTHONUNBUFFERED=1 timeout -s INT $EACH \
      $PYTHON dit.py --steps 1000000 --eval-every 500000 --device $DEVICE --seed $i --out "$LOGS/w$W-$i" \
      > "$LOGS/w$W-$i.log" 2>&1 &
  done
  wait
  rates=$(for i in $(seq 1 $W); do tr '\r' '\n' < "$LOGS/w$W-$i.log" | grep -oE '[0-9.]+it/s' | tail -1 | tr -d 'it/s'; done)
  echo "W=$W per-run it/s: $(echo $rates) | total $(echo $rates | awk '{s = 0; for (i = 1; i <= NF; i++) s += $i; print s}')"
done
