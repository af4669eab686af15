# infer_probs.awk LOG: the book tests' "infer results:  [[p0 ... p9]]" prints (numpy's lines of at
# most 75 characters: the array may go on over the next lines until its "]]") each hold 10
# probabilities in [0, 1] that sum to 1 (within 1e-3); exits 1 when one does not or there is none.
function check(text,    n, p, s, i) {
    n = split(text, p, " ")
    s = 0
    for (i = 1; i <= n; i++) { if (p[i] < 0 || p[i] > 1) exit 1; s += p[i] }
    if (n != 10 || s < 0.999 || s > 1.001) exit 1
    ok = 1
}
inside { text = text " " $0 }
/^infer results:  \[\[/ { inside = 1; text = substr($0, 17) }
inside && /\]\]$/ { inside = 0; gsub(/[][]/, " ", text); check(text) }
END { exit !ok }
