"""bench_call.py: the cost of one call from Python, fluidc vs PyTorch (tests/bench/bench_rl.sh).

  tiny   a one-row predict of examples/embed/train.fl's model (fc 2 -> 1): fluidc exe.predict and
         exe.run (a whole SGD step, the loss fetched) vs torch's nn.Linear(2, 1) forward under
         torch.no_grad() and a whole step (forward, MSE, backward, SGD step, loss.item());
  a2c    an actor's call of examples/rl/cartpole.py: one observation [1, 4] through the A2C model
         (examples/rl/a2c.fl, 4-64-64 tanh, policy and value heads) to numpy probabilities and
         value, exe.predict vs TorchAgent.predict.
Both sides take numpy arrays in and give numpy arrays out; torch runs with torch.set_num_threads(1).
Best of ROUNDS rounds of CALLS calls (the calls measured in turn, round by round), in microseconds of the thread's CPU time per call
(time.thread_time: on a loaded shared machine wall time measures the other processes too). Prints key=value lines.

    usage: /usr/bin/python3 bench_call.py TRAIN_FLP A2C_FLP [CALLS=20000] [ROUNDS=5]
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../examples/rl"))


def best_us(f, calls, rounds):
    for _ in range(200):
        f()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.thread_time()
        for _ in range(calls):
            f()
        best = min(best, time.thread_time() - t0)
    return best / calls * 1e6


def measure(fs, calls, rounds):
    """{key: best us per call} of fs (key -> (function, calls divisor)), the keys measured in
    turn `rounds` times, one round each (so a burst of load hits both sides alike)."""
    r = {}
    for _ in range(rounds):
        for k, (f, div) in fs.items():
            r[k] = min(r.get(k, float("inf")), best_us(f, calls // div, 1))
    return r


def main():
    train_flp, a2c_flp = sys.argv[1], sys.argv[2]
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    import fluidc
    x1 = np.float32([[0.5, -0.25]])
    y1 = np.float32([[1.0]])
    exe = fluidc.Executor(fluidc.load(train_flp), seed=1)
    out = ["elementwise_add_0.tmp_0"]
    loss = ["mean_0.tmp_0"]
    fs = {}
    fs["fluidc_tiny_predict_us"] = (lambda: exe.predict(feed={"x": x1}, fetch_list=out), 1)
    fs["fluidc_tiny_run_us"] = (lambda: exe.run(feed={"x": x1, "y": y1}, fetch_list=loss), 1)
    import cartpole
    obs = np.float32([[0.01, -0.02, 0.03, 0.04]])
    fa = cartpole.FluidcAgent(a2c_flp, 1)
    fs["fluidc_a2c_predict_us"] = (lambda: fa.predict(obs), 1)
    extra = {}
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        torch.set_num_threads(1)
        lin = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(lin.parameters(), lr=0.05)

        def tpredict():
            with torch.no_grad():
                return lin(torch.from_numpy(x1)).numpy()

        def trun():
            l = ((lin(torch.from_numpy(x1)) - torch.from_numpy(y1)) ** 2).mean()
            opt.zero_grad()
            l.backward()
            opt.step()
            return l.item()

        fs["torch_tiny_predict_us"] = (tpredict, 1)
        fs["torch_tiny_run_us"] = (trun, 4)
        ta = cartpole.TorchAgent({"lr": 0.001, "entropy_coef": 0.001, "value_coef": 0.5,
                                  "clip": 0.5}, 1)
        fs["torch_a2c_predict_us"] = (lambda: ta.predict(obs), 1)
        extra["torch"] = torch.__version__
    r = measure(fs, calls, rounds)
    r.update(extra)
    for k, v in r.items():
        print("%s=%s" % (k, ("%.2f" % v) if isinstance(v, float) else v))


if __name__ == "__main__":
    main()
