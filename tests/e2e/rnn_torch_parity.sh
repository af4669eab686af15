#!/bin/sh
# rnn_torch_parity.sh FLRUN: runs rnn_torch_parity.py with a python3 that has torch (the one on
# PATH, else the system's), or with any python3, which then reports "skipped: torch is absent".
py=python3
for p in python3 /usr/bin/python3; do
    if "$p" -c 'import torch' >/dev/null 2>&1; then
        py=$p
        break
    fi
done
exec "$py" "$(dirname "$0")/rnn_torch_parity.py" "$1"
