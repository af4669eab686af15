"""bench_torch.py: the PyTorch reference of the training benchmark (bench_train.sh): the same MLP
as mlp.fl (784-512-512-10, relu; nn.Linear layers), the same loss (cross-entropy of the softmax,
mean over the batch: F.cross_entropy on the logits, which is log-softmax + NLL, the same math as
fluidc's softmax + cross_entropy + mean), plain SGD (lr 0.01), one thread, synthetic data shaped
like bench_mlp.c's (4 pre-made batches of uniform [0, 1) features and int64 labels in [0, 10)),
the same warm-up and timing (best of ROUNDS rounds of STEPS steps, the loss fetched every step).

Prints one line of key=value figures: steps_per_s, ms_per_step, first_loss, last_loss,
peak_rss_kib, torch, blas. Never fails on time.

`dispatch` mode is the reference for the per-op dispatch figure: a chain of 10,000 tiny ops
(torch.add(x, 1.0) on a [1] tensor, each reading the previous result, no autograd: the same
chain as tests/runtime/core/bench_dispatch.c's scale ops), best of 20 runs; prints ns_per_op.

    usage: /usr/bin/python3 bench_torch.py [BATCH=128] [STEPS=40] [ROUNDS=5]
           /usr/bin/python3 bench_torch.py dispatch
"""
import re
import resource
import sys
import time

import torch
import torch.nn.functional as F

IN, HID, CLASSES, BATCHES, WARMUP = 784, 512, 10, 4, 5


def dispatch():
    torch.set_num_threads(1)
    ops, best = 10000, float("inf")
    with torch.no_grad():
        for _ in range(20):
            x = torch.zeros(1)
            t0 = time.perf_counter()
            for _ in range(ops):
                x = torch.add(x, 1.0)
            best = min(best, time.perf_counter() - t0)
    print("ns_per_op=%.1f result=%g" % (best / ops * 1e9, x.item()))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "dispatch":
        return dispatch()
    batch = int(sys.argv[1]) if len(sys.argv) > 1 else 128
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    torch.set_num_threads(1)
    torch.manual_seed(7)
    model = torch.nn.Sequential(
        torch.nn.Linear(IN, HID), torch.nn.ReLU(),
        torch.nn.Linear(HID, HID), torch.nn.ReLU(),
        torch.nn.Linear(HID, CLASSES))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    xs = [torch.rand(batch, IN) for _ in range(BATCHES)]
    ys = [torch.randint(0, CLASSES, (batch,), dtype=torch.int64) for _ in range(BATCHES)]

    def step(k):
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(xs[k % BATCHES]), ys[k % BATCHES])
        loss.backward()
        opt.step()
        return loss.item()

    k = 0
    first = loss = 0.0
    for i in range(WARMUP):
        loss = step(k)
        k += 1
        if i == 0:
            first = loss
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(steps):
            loss = step(k)
            k += 1
        best = min(best, time.perf_counter() - t0)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cfg = torch.__config__.show()
    m = re.search(r"BLAS_INFO=([^,\s]+)", cfg)
    blas = m.group(1) if m else "?"
    try:  # the BLAS library actually mapped ("generic" BLAS_INFO: libblas.so.3's alternative)
        with open("/proc/self/maps") as f:
            libs = sorted({l.split()[-1].rsplit("/", 1)[-1] for l in f if "blas" in l})
        blas += ":" + "+".join(libs)
    except OSError:
        pass
    print("steps_per_s=%.3f ms_per_step=%.4f first_loss=%.5f last_loss=%.5f peak_rss_kib=%d "
          "torch=%s blas=%s" % (steps / best, best / steps * 1e3, first, loss, rss,
                                torch.__version__, blas))


if __name__ == "__main__":
    main()
