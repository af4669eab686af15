# infer_probs.awk LOG: the book tests' "infer results:  [[p0 ... p9]]" lines each hold 10
# probabilities in [0, 1] that sum to 1 (within 1e-3); exits 1 when one does not or there is none.
/^infer results:  \[\[.*\]\]$/ {
    line = substr($0, 19, length($0) - 20)
    n = split(line, p, " ")
    s = 0
    for (i = 1; i <= n; i++) { if (p[i] < 0 || p[i] > 1) exit 1; s += p[i] }
    if (n != 10 || s < 0.999 || s > 1.001) exit 1
    ok = 1
}
END { exit !ok }
