"""rnn_torch_parity.py FLRUN: dynamic_lstm and dynamic_gru against PyTorch.

Each case writes a .fl program holding the inputs and weights as constants (assigned to
zero-initialised parameters, so append_backward gives their gradients), runs it with flrun,
reads the printed hidden states and gradients, and compares them with torch on the same
weights, on one packed batch of sequences of 1, 2 and 17 rows: forward within 1e-5, gradients
within 1e-4 (flrun prints 6 significant digits). Exits 0 with "skipped: torch is absent" when
torch cannot be imported.

The mappings (docs/sequences.md):
  lstm, use_peepholes=False: Fluid's input is already projected, its 4D columns the gates
    (candidate, input, forget, output); torch.nn.LSTM(4D, D) gets W_ih = the permutation that
    puts Fluid's columns in torch's gate order (i, f, g, o), b_ih = 0, W_hh = Fluid's weight
    transposed and permuted the same way, b_hh = Fluid's bias permuted. Then torch's input
    gradient is Fluid's, and W_hh's and b_hh's are Fluid's weight and bias gradients permuted.
  gru, origin_mode=True: h' = u h + (1 - u) c is torch's h' = (1 - z) n + z h with z = u.
    torch.nn.GRU(3D, D) gets W_ih = the permutation from Fluid's (u, r, c) to torch's (r, z, n),
    b_ih = Fluid's bias permuted, b_hh = 0, W_hh's r and z rows = Fluid's gate weight Wg
    transposed. torch's candidate is tanh(x_n + r (W_hn h + b_hn)), Fluid's
    tanh(x_c + (r h) Wc): equal when W_hn is diagonal (Wc = W_hn^T) and b_hn = 0, so
    torch.nn.GRU is checked with a diagonal Wc (gradients of Wc on its diagonal), and any Wc
    (both origin modes) against Fluid's formula written with torch ops.
"""
import os
import subprocess
import sys
import tempfile

try:
    import torch
except ImportError:
    print("skipped: torch is absent")
    sys.exit(0)

FLRUN = sys.argv[1]
OFF = [0, 1, 3, 20]
T = OFF[-1]
D = 4
torch.manual_seed(7)
failures = []


def fl_list(t):
    return repr(t.tolist())


def run_fl(body, shapes):
    """Runs a program that ends with Print lines "NAME ..." and returns {NAME: tensor}."""
    src = "import fluid\nimport _core\nfrom fluid import layers\nzero = fluid.initializer.Constant(0.0)\n"
    for name, value in shapes.items():
        src += "%s = layers.create_parameter(%s, name=%r, default_initializer=zero)\n" % (
            name, list(value.shape), name)
        src += "layers.assign(layers.assign(%s), output=%s)\n" % (fl_list(value), name)
    src += body
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "parity.fl")
        with open(path, "w") as f:
            f.write(src)
        r = subprocess.run([FLRUN, path], capture_output=True, text=True,
                           env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    if r.returncode != 0:
        print(r.stderr)
        sys.exit("flrun failed")
    out = {}
    for line in r.stdout.splitlines():
        head, _, vals = line.partition(": ")
        out[head.split()[0]] = torch.tensor([float(v) for v in vals.split()], dtype=torch.float64)
    return out


def compare(case, what, got, want, tol):
    want = want.detach().reshape(-1).to(torch.float64)
    got = got.reshape(-1)
    diff = (got - want).abs().max().item()
    print("%-24s %-10s max |fluidc - torch| = %.3g" % (case, what, diff))
    if not diff <= tol:
        failures.append("%s %s: %.3g > %g" % (case, what, diff, tol))


def packed(x):
    seqs = [x[OFF[i]:OFF[i + 1]] for i in range(len(OFF) - 1)]
    return torch.nn.utils.rnn.pack_sequence(seqs, enforce_sorted=False)


def unpacked(out):
    pad, lens = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
    return torch.cat([pad[i, :lens[i]] for i in range(len(lens))])


def perm_matrix(blocks):
    """[G*D, G*D]: torch's gate block k reads Fluid's column block blocks[k]."""
    g = len(blocks)
    m = torch.zeros(g * D, g * D, dtype=torch.float64)
    for k, b in enumerate(blocks):
        for j in range(D):
            m[k * D + j, b * D + j] = 1
    return m


def cols(t, blocks):
    """Fluid's column blocks in torch's order (t [*, G*D])."""
    return torch.cat([t[..., b * D:(b + 1) * D] for b in blocks], dim=-1)


def fl_body(layer_call, names):
    body = "x = _core.set_lod(layers.scale(X), [layers.assign(%s)])\n" % OFF
    body += layer_call + "\n"
    body += "loss = layers.reduce_sum(layers.elementwise_mul(h, layers.assign(R)))\n"
    body += "params, grads = fluid.append_backward(loss, parameter_list=%r)\n" % names
    body += "layers.Print(h, message=\"h\", summarize=-1)\n"
    body += "for p, g in zip(params, grads):\n    layers.Print(g, message=\"d\" + p.name, summarize=-1)\n"
    return body


def check_lstm():
    LSTM = [1, 2, 0, 3]  # torch's (i, f, g, o) from Fluid's (c, i, f, o)
    x = torch.rand(T, 4 * D, dtype=torch.float64) * 2 - 1
    w = torch.rand(D, 4 * D, dtype=torch.float64) - 0.5
    b = torch.rand(1, 4 * D, dtype=torch.float64) - 0.5
    r = torch.rand(T, D, dtype=torch.float64) * 2 - 1
    got = run_fl("R = " + fl_list(r) + "\n" + fl_body(
        "h, c = layers.dynamic_lstm(x, size=%d, param_attr=\"W\", bias_attr=\"B\", use_peepholes=False)" % (4 * D),
        ["X", "W", "B"]), {"X": x, "W": w, "B": b})
    m = torch.nn.LSTM(4 * D, D).double()
    with torch.no_grad():
        m.weight_ih_l0.copy_(perm_matrix(LSTM))
        m.bias_ih_l0.zero_()
        m.weight_hh_l0.copy_(cols(w, LSTM).t())
        m.bias_hh_l0.copy_(cols(b, LSTM)[0])
    xt = x.clone().requires_grad_()
    h = unpacked(m(packed(xt))[0])
    (h * r).sum().backward()
    case = "lstm (no peepholes)"
    compare(case, "hidden", got["h"], h, 1e-5)
    compare(case, "d input", got["dX"], xt.grad, 1e-4)
    # torch's gradient rows in Fluid's column order
    inv = [LSTM.index(k) for k in range(4)]
    compare(case, "d weight", got["dW"], cols(m.weight_hh_l0.grad.t(), inv), 1e-4)
    compare(case, "d bias", got["dB"], cols(m.bias_hh_l0.grad, inv), 1e-4)


GRU = [1, 0, 2]  # torch's (r, z, n) from Fluid's (u, r, c)


def fluid_gru(x, w, b, origin_mode):
    """Fluid's formula with torch ops, each sequence in turn."""
    wg = w.reshape(-1)[:2 * D * D].reshape(D, 2 * D)
    wc = w.reshape(-1)[2 * D * D:].reshape(D, D)
    out = []
    for s in range(len(OFF) - 1):
        h = torch.zeros(D, dtype=torch.float64)
        for t in range(OFF[s], OFF[s + 1]):
            g = x[t] + b[0]
            ur = torch.sigmoid(g[:2 * D] + h @ wg)
            u, rr = ur[:D], ur[D:]
            c = torch.tanh(g[2 * D:] + (rr * h) @ wc)
            h = u * h + (1 - u) * c if origin_mode else (1 - u) * h + u * c
            out.append(h)
    return torch.stack(out)


def check_gru(diagonal, origin_mode):
    x = torch.rand(T, 3 * D, dtype=torch.float64) * 2 - 1
    w = torch.rand(D, 3 * D, dtype=torch.float64) - 0.5
    if diagonal:
        w.reshape(-1)[2 * D * D:].reshape(D, D).copy_(torch.diag(torch.rand(D, dtype=torch.float64) - 0.5))
    b = torch.rand(1, 3 * D, dtype=torch.float64) - 0.5
    r = torch.rand(T, D, dtype=torch.float64) * 2 - 1
    got = run_fl("R = " + fl_list(r) + "\n" + fl_body(
        "h = layers.dynamic_gru(x, size=%d, param_attr=\"W\", bias_attr=\"B\", origin_mode=%s)" % (D, origin_mode),
        ["X", "W", "B"]), {"X": x, "W": w, "B": b})
    xt, wt, bt = (v.clone().requires_grad_() for v in (x, w, b))
    if diagonal:
        case = "gru vs torch.nn.GRU"
        wg = w.reshape(-1)[:2 * D * D].reshape(D, 2 * D)
        wc = w.reshape(-1)[2 * D * D:].reshape(D, D)
        m = torch.nn.GRU(3 * D, D).double()
        with torch.no_grad():
            m.weight_ih_l0.copy_(perm_matrix(GRU))
            m.bias_ih_l0.copy_(cols(b, GRU)[0])
            m.weight_hh_l0.copy_(torch.cat([wg[:, D:].t(), wg[:, :D].t(), wc.t()]))
            m.bias_hh_l0.zero_()
        h = unpacked(m(packed(xt))[0])
        (h * r).sum().backward()
        gw = m.weight_hh_l0.grad
        dwg = torch.cat([gw[D:2 * D].t(), gw[:D].t()], dim=1)
        dwc_diag = torch.diagonal(gw[2 * D:])
        compare(case, "hidden", got["h"], h, 1e-5)
        compare(case, "d input", got["dX"], xt.grad, 1e-4)
        fw = got["dW"]
        compare(case, "d weight Wg", fw[:2 * D * D], dwg, 1e-4)
        compare(case, "d Wc diag", torch.diagonal(fw[2 * D * D:].reshape(D, D)), dwc_diag, 1e-4)
        compare(case, "d bias", got["dB"], cols(m.bias_ih_l0.grad, [GRU.index(k) for k in range(3)]), 1e-4)
    else:
        case = "gru (origin_mode=%s)" % origin_mode
        h = fluid_gru(xt, wt, bt, origin_mode)
        (h * r).sum().backward()
        compare(case, "hidden", got["h"], h, 1e-5)
        compare(case, "d input", got["dX"], xt.grad, 1e-4)
        compare(case, "d weight", got["dW"], wt.grad, 1e-4)
        compare(case, "d bias", got["dB"], bt.grad, 1e-4)


check_lstm()
check_gru(True, True)
check_gru(False, True)
check_gru(False, False)
if failures:
    print("FAILED:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("all within tolerance")
