#!/bin/sh
# make_multislot_ctr.sh DIR: a made-up click log in Fluid's MultiSlot text format (docs/data.md,
# "Fluid's Dataset: MultiSlot files"), for examples/fluid/ctr_dataset.fl and its test: DIR/train_0.txt,
# DIR/train_1.txt (1500 lines each) and DIR/test.txt (600 lines). Each line is one impression:
#   dense  13 floats in [0, 1)                       (a dense slot: "13 v1 ... v13")
#   c1..c8 1 to 3 ids each, in [1000 k, 1000 k + 50)  (sparse slots: "n id1 ... idn")
#   click  0 or 1                                     (a dense slot of one id: "1 c")
# Whether an impression is clicked follows a hidden rule the network can learn: each id has a
# weight (+1 when id mod 7 is below 3, 0 when it is 3, else -1), a slot adds the mean of its ids'
# weights, the first dense value adds 2 (v1 - 0.5); clicked when the sum is positive (about half). The numbers come
# from a Park-Miller generator in integer arithmetic (exact in awk's doubles): the same files
# everywhere, no randomness.
set -eu
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
dir=$1
mkdir -p "$dir"
gen() { # gen FILE SEED LINES
    awk -v seed="$2" -v lines="$3" '
        function rnd() { seed = (seed * 16807) % 2147483647; return seed / 2147483647 }
        BEGIN {
            for (l = 0; l < lines; l++) {
                line = "13"
                v1 = 0
                for (k = 0; k < 13; k++) {
                    v = int(rnd() * 1000) / 1000
                    if (k == 0) v1 = v
                    line = line " " v
                }
                score = 2 * (v1 - 0.5)
                for (s = 1; s <= 8; s++) {
                    n = 1 + int(rnd() * 3)
                    line = line " " n
                    w = 0
                    for (j = 0; j < n; j++) {
                        id = 1000 * s + int(rnd() * 50)
                        w += (id % 7 < 3) ? 1 : (id % 7 == 3 ? 0 : -1)
                        line = line " " id
                    }
                    score += w / n
                }
                print line " 1 " (score > 0 ? 1 : 0)
            }
        }' > "$1"
}
gen "$dir/train_0.txt" 12345 1500
gen "$dir/train_1.txt" 67890 1500
gen "$dir/test.txt" 424242 600
