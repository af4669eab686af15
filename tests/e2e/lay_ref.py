#!/usr/bin/env python3
"""lay_ref.py: float64 references of tests/e2e/lay_cases.fltab, written from Fluid's operator
definitions in plain Python (no numpy): prints each case's expected values as its @out lines.

cudnn_lstm (Fluid's cudnn_lstm_op.cc and its test's lstm_naive, extended to layers and
directions in cuDNN's layout: per layer and direction Wx [4H, in], Wh [4H, H]; then per layer
and direction bx [4H], bh [4H]; gates i, f, c, o).

spectral_norm (Fluid's spectral_norm_op.h): the power method run to convergence gives the
largest singular value of the weight seen as [its dim'th axis, the rest], here from the
eigenvalues of M M^T."""
import math
import struct


def f32(v):
    # v rounded to float32: the program's inputs and outputs are float32, the arithmetic double
    return struct.unpack("f", struct.pack("f", v))[0]


def fmt(vals):
    return " ".join("%g" % f32(v) for v in vals)


def sig(v):
    return 1 / (1 + math.exp(-v))


def lstm(x, h0, c0, w, L, D, H):
    T, B, I = len(x), len(x[0]), len(x[0][0])
    ins = [I if l == 0 else H * D for l in range(L)]
    off = 0
    Ws = {}
    for l in range(L):
        for d in range(D):
            wx = [w[off + r * ins[l]:off + (r + 1) * ins[l]] for r in range(4 * H)]
            off += 4 * H * ins[l]
            wh = [w[off + r * H:off + (r + 1) * H] for r in range(4 * H)]
            off += 4 * H * H
            Ws[l, d] = (wx, wh)
    bs = {}
    for l in range(L):
        for d in range(D):
            bs[l, d] = (w[off:off + 4 * H], w[off + 4 * H:off + 8 * H])
            off += 8 * H
    assert off == len(w)
    cur = x
    lh, lc = [], []
    for l in range(L):
        y = [[[0.0] * (H * D) for _ in range(B)] for _ in range(T)]
        for d in range(D):
            wx, wh = Ws[l, d]
            bx, bh = bs[l, d]
            h = [row[:] for row in h0[l * D + d]]
            c = [row[:] for row in c0[l * D + d]]
            steps = range(T) if d == 0 else range(T - 1, -1, -1)
            for t in steps:
                nh, nc = [], []
                for b in range(B):
                    g = [sum(wx[r][k] * cur[t][b][k] for k in range(ins[l])) +
                         sum(wh[r][k] * h[b][k] for k in range(H)) + bx[r] + bh[r] for r in range(4 * H)]
                    hi, ci = [], []
                    for j in range(H):
                        i_, f_, cc, o_ = sig(g[j]), sig(g[H + j]), math.tanh(g[2 * H + j]), sig(g[3 * H + j])
                        cv = f_ * c[b][j] + i_ * cc
                        ci.append(cv)
                        hi.append(o_ * math.tanh(cv))
                        y[t][b][d * H + j] = hi[-1]
                    nh.append(hi)
                    nc.append(ci)
                h, c = nh, nc
            lh.append(h)
            lc.append(c)
        cur = y
    return cur, lh, lc


def flat(a):
    if isinstance(a, list):
        return [v for s in a for v in flat(s)]
    return [a]


def case_lstm_stacked_bidirec():
    L, D, I, H, T, B = 2, 2, 3, 2, 3, 2
    wn = sum(D * (4 * H * ((I if l == 0 else H * D) + H) + 8 * H) for l in range(L))
    w = [f32(((k * 37) % 19 - 9) / 20.0) for k in range(wn)]
    x = [[[f32(((t * 7 + b * 3 + k * 5) % 11 - 5) / 10.0) for k in range(I)] for b in range(B)] for t in range(T)]
    h0 = [[[f32(((s + b * 2 + j) % 5 - 2) / 10.0) for j in range(H)] for b in range(B)] for s in range(L * D)]
    c0 = [[[f32(((s * 3 + b + j * 2) % 7 - 3) / 10.0) for j in range(H)] for b in range(B)] for s in range(L * D)]
    out, lh, lc = lstm(x, h0, c0, w, L, D, H)
    print("# lstm_stacked_bidirec: weights", wn)
    print("@out out", fmt(flat(out)))
    print("@out lh", fmt(flat(lh)))
    print("@out lc", fmt(flat(lc)))


def case_spectral_norm_converged():
    w = [[[1.0, 2.0], [0.5, -1.0]], [[3.0, 0.0], [1.0, 1.0]], [[-2.0, 1.0], [0.0, 2.0]]]
    # dim 1: rows are axis 1, columns axes 0 and 2 in order
    m = [[w[a][r][c] for a in range(3) for c in range(2)] for r in range(2)]
    g = [[sum(m[i][k] * m[j][k] for k in range(6)) for j in range(2)] for i in range(2)]
    tr, det = g[0][0] + g[1][1], g[0][0] * g[1][1] - g[0][1] * g[1][0]
    sigma = math.sqrt((tr + math.sqrt(tr * tr - 4 * det)) / 2)
    print("# spectral_norm_converged: sigma", sigma)
    print("@out y", fmt([v / sigma for v in flat(w)]))


case_lstm_stacked_bidirec()
case_spectral_norm_converged()
