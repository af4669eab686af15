"""Actor-learner A2C on CartPole through ONE shared fluidc.Executor (docs/python.md, "An
actor-learner on CartPole").

    PYTHONPATH=build/python /usr/bin/python3 examples/rl/cartpole.py --actors 4 --seed 1

N actor threads each step their own CartPole (the classic dynamics, below, in Python and numpy)
and choose their actions by predicting with the model's current parameters through one shared
Executor (exe.predict, concurrently); a learner thread trains the same parameters (exe.run) on
the actors' n-step segments as they come: advantage actor-critic with n-step returns, an entropy
bonus and, with --clip C, global-norm gradient clipping (the model and its loss:
examples/rl/a2c.fl). The queue between them is short, so the actors act with parameters at most
a few updates old.

SOLVED is CartPole-v0's criterion: the mean reward of 100 consecutive episodes (the last 100
that the actors finished, with their sampling policy) >= 195, episodes capped at 200 steps. The
run stops when solved or after --max-steps environment steps, and exits 0 when solved, 1 when
not (2 on a usage error). --backend torch runs the same algorithm with PyTorch (python3-torch)
instead of fluidc, for tests/bench/bench_rl.sh.
"""

import argparse
import math
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


class CartPole:
    """The classic cart-pole (Barto, Sutton and Anderson 1983), with gym's CartPole-v0 constants
    and equations (Euler integration): reward 1 for every step, including the last; the episode
    ends when the pole leans more than 12 degrees or the cart leaves [-2.4, 2.4], or after
    `max_steps` steps (a time limit: `truncated`, not a failure)."""

    gravity = 9.8
    masscart = 1.0
    masspole = 0.1
    total_mass = masscart + masspole
    length = 0.5  # half the pole's length
    polemass_length = masspole * length
    force_mag = 10.0
    tau = 0.02  # seconds between state updates
    theta_threshold = 12 * 2 * math.pi / 360
    x_threshold = 2.4

    def __init__(self, rng, max_steps=200):
        self.rng = rng
        self.max_steps = max_steps
        self.reset()

    def reset(self):
        self.state = self.rng.uniform(-0.05, 0.05, size=4)
        self.t = 0
        return self.state.astype(np.float32)

    def step(self, action):
        """Returns (observation, reward, terminal, truncated)."""
        x, x_dot, theta, theta_dot = self.state.tolist()
        force = self.force_mag if action == 1 else -self.force_mag
        costheta, sintheta = math.cos(theta), math.sin(theta)
        temp = (force + self.polemass_length * theta_dot * theta_dot * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * costheta * costheta / self.total_mass))
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass
        x += self.tau * x_dot
        x_dot += self.tau * xacc
        theta += self.tau * theta_dot
        theta_dot += self.tau * thetaacc
        self.state = np.array((x, x_dot, theta, theta_dot))
        self.t += 1
        terminal = (x < -self.x_threshold or x > self.x_threshold
                    or theta < -self.theta_threshold or theta > self.theta_threshold)
        return self.state.astype(np.float32), 1.0, terminal, (not terminal and self.t >= self.max_steps)


class FluidcAgent:
    """The model of a2c.fl in one fluidc.Executor: predict() from any number of threads, train()
    from the learner's."""

    def __init__(self, flp, seed):
        import fluidc
        self.exe = fluidc.Executor(fluidc.load(flp), seed=seed)
        self.fetch = ["probs.tmp_0", "v.tmp_0"]

    def predict(self, obs):
        """obs: float32 [B, 4] -> (action probabilities [B, 2], values [B, 1])."""
        p, v = self.exe.predict(feed={"obs": obs}, fetch_list=self.fetch)
        return p, v

    def train(self, obs, act, ret, adv):
        self.exe.run(feed={"obs": obs, "act": act, "ret": ret, "adv": adv})


class TorchAgent:
    """The same model, loss and optimizer in PyTorch (for the benchmark): actors predict under
    torch.no_grad() while the learner's Adam updates the parameters in place."""

    def __init__(self, flags, seed):
        import torch
        torch.manual_seed(seed)
        torch.set_num_threads(1)
        self.torch = torch
        nn = torch.nn
        self.pi = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(),
                                nn.Linear(64, 2))
        self.v = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(),
                               nn.Linear(64, 1))
        self.params = list(self.pi.parameters()) + list(self.v.parameters())
        self.opt = torch.optim.Adam(self.params, lr=flags["lr"])
        self.flags = flags

    def predict(self, obs):
        torch = self.torch
        with torch.no_grad():
            o = torch.from_numpy(obs)
            return torch.softmax(self.pi(o), dim=1).numpy(), self.v(o).numpy()

    def train(self, obs, act, ret, adv):
        torch = self.torch
        o = torch.from_numpy(obs)
        p = torch.softmax(self.pi(o), dim=1)
        v = self.v(o)
        a = torch.from_numpy(act)
        nll = -torch.log(p.gather(1, a).clamp_min(1e-20))  # cross_entropy's clamp
        logp = torch.log(p + 1e-6)
        entropy = (-(p * logp).sum(dim=1)).mean()
        loss = ((nll * torch.from_numpy(adv)).mean()
                + self.flags["value_coef"] * ((v - torch.from_numpy(ret)) ** 2).mean()
                - self.flags["entropy_coef"] * entropy)
        self.opt.zero_grad()
        loss.backward()
        if self.flags["clip"] > 0:
            torch.nn.utils.clip_grad_norm_(self.params, self.flags["clip"])
        self.opt.step()


class Stats:
    """Episode rewards and step counts, shared by the actors (under a lock)."""

    def __init__(self, max_steps, keep_going=False):
        self.keep_going = keep_going
        self.lock = threading.Lock()
        self.rewards = []
        self.steps = 0
        self.max_steps = max_steps
        self.solved_at = None  # (steps, episodes) when the last 100 averaged >= 195
        self.stop = threading.Event()

    def add_steps(self, n):
        with self.lock:
            self.steps += n
            if self.steps >= self.max_steps:
                self.stop.set()

    def episode(self, reward):
        with self.lock:
            self.rewards.append(reward)
            if (self.solved_at is None and len(self.rewards) >= 100
                    and sum(self.rewards[-100:]) / 100 >= 195.0):
                self.solved_at = (self.steps, len(self.rewards))
                if not self.keep_going:
                    self.stop.set()

    def avg100(self):
        with self.lock:
            last = self.rewards[-100:]
            return sum(last) / len(last) if last else 0.0


def actor(i, agent, stats, segments, args, errors):
    try:
        rng = np.random.default_rng([args.seed, i])
        env = CartPole(rng)
        obs = env.reset()
        ep_reward = 0.0
        n, gamma = args.nstep, args.gamma
        while not stats.stop.is_set():
            s_obs, s_act, s_rew, s_val = [], [], [], []
            boot = 0.0
            for _ in range(n):
                p, v = agent.predict(obs[None])
                a = 1 if rng.random() < p[0, 1] else 0
                s_obs.append(obs)
                s_act.append(a)
                s_val.append(v[0, 0])
                obs, r, terminal, truncated = env.step(a)
                s_rew.append(r)
                ep_reward += r
                if terminal or truncated:
                    if truncated:  # a time limit, not a failure: bootstrap from the last state
                        boot = float(agent.predict(obs[None])[1][0, 0])
                    stats.episode(ep_reward)
                    ep_reward = 0.0
                    obs = env.reset()
                    break
            else:
                boot = None  # the segment is full: bootstrap from the next step's prediction
            if boot is None:
                boot = float(agent.predict(obs[None])[1][0, 0])
            rets = np.empty((len(s_rew), 1), np.float32)
            g = boot
            for t in range(len(s_rew) - 1, -1, -1):
                g = s_rew[t] + gamma * g
                rets[t, 0] = g
            vals = np.array(s_val, np.float32).reshape(-1, 1)
            stats.add_steps(len(s_rew))
            seg = (np.array(s_obs), np.array(s_act, np.int64).reshape(-1, 1), rets, rets - vals)
            while not stats.stop.is_set():
                try:
                    segments.put(seg, timeout=0.1)
                    break
                except queue.Full:
                    pass
    except BaseException as e:  # noqa: B902 - reported by the main thread
        errors.append(("actor %d" % i, e))
        stats.stop.set()


def learner(agent, stats, segments, args, counts, errors):
    try:
        batch = []
        size = 0
        while not stats.stop.is_set():
            try:
                seg = segments.get(timeout=0.1)
            except queue.Empty:
                continue
            batch.append(seg)
            size += len(seg[0])
            if size < args.batch:
                continue
            obs, act, ret, adv = (np.concatenate(c) for c in zip(*batch))
            batch, size = [], 0
            if args.norm_adv:
                adv = (adv - adv.mean()) / (adv.std() + 1e-6)
            agent.train(obs, act, ret, adv)
            counts[0] += 1
    except BaseException as e:  # noqa: B902
        errors.append(("learner", e))
        stats.stop.set()


def compile_model(flags, workdir):
    flc = os.environ.get("FLUIDC_FLC") or shutil.which("flc")
    if not flc:
        built = os.path.join(HERE, "..", "..", "build", "tools", "flc")
        flc = built if os.access(built, os.X_OK) else None
    if not flc:
        sys.exit("cartpole.py: flc not found (set FLUIDC_FLC, put build/tools on PATH or build "
                 "the repository in build/)")
    out = os.path.join(workdir, "a2c.flp")
    cmd = [flc, "build", os.path.join(HERE, "a2c.fl"), "-o", out]
    for k, v in flags.items():
        cmd += ["-D", "%s=%s" % (k, v)]
    subprocess.run(cmd, check=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--actors", type=int, default=4, help="actor threads (default 4)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-steps", type=int, default=300000,
                    help="budget of environment steps, all actors together (default 300000)")
    ap.add_argument("--nstep", type=int, default=8, help="n of the n-step returns (default 8)")
    ap.add_argument("--batch", type=int, default=32,
                    help="transitions per training step, at least (default 32)")
    ap.add_argument("--gamma", type=float, default=0.99)
    ap.add_argument("--lr", type=float, default=0.001)
    ap.add_argument("--entropy-coef", type=float, default=0.001)
    ap.add_argument("--value-coef", type=float, default=0.5)
    ap.add_argument("--clip", type=float, default=0.0,
                    help="clip the gradients to this global norm; 0: no clipping (default 0)")
    ap.add_argument("--norm-adv", type=int, default=1,
                    help="1: normalise the advantages of each batch to mean 0, std 1 (default 1)")
    ap.add_argument("--backend", choices=("fluidc", "torch"), default="fluidc")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    ap.add_argument("--keep-going", action="store_true",
                    help="run the whole budget even when solved earlier (for steps/s figures)")
    args = ap.parse_args(argv)
    for what, v, lo in (("--actors", args.actors, 1), ("--max-steps", args.max_steps, 1),
                        ("--nstep", args.nstep, 1), ("--batch", args.batch, 1)):
        if v < lo:
            ap.error("%s must be at least %d, found %d" % (what, lo, v))
    if args.seed < 0:
        ap.error("--seed must be >= 0, found %d" % args.seed)
    if not args.clip >= 0:
        ap.error("--clip must be >= 0 (0: no clipping), found %g" % args.clip)
    flags = {"lr": args.lr, "entropy_coef": args.entropy_coef, "value_coef": args.value_coef,
             "clip": args.clip}

    with tempfile.TemporaryDirectory() as tmp:
        if args.backend == "fluidc":
            agent = FluidcAgent(compile_model(flags, tmp), args.seed)
        else:
            agent = TorchAgent(flags, args.seed)
        stats = Stats(args.max_steps, args.keep_going)
        segments = queue.Queue(maxsize=max(2, args.actors))
        counts, errors = [0], []
        threads = [threading.Thread(target=learner, args=(agent, stats, segments, args, counts, errors))]
        threads += [threading.Thread(target=actor, args=(i, agent, stats, segments, args, errors))
                    for i in range(args.actors)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        last = t0
        while not stats.stop.wait(0.05):
            now = time.perf_counter()
            if not args.quiet and now - last >= 2.0:
                last = now
                print("steps %7d  episodes %5d  avg100 %6.1f  updates %5d  %6.0f steps/s"
                      % (stats.steps, len(stats.rewards), stats.avg100(), counts[0],
                         stats.steps / (now - t0)), flush=True)
        for t in threads:
            t.join()
        secs = time.perf_counter() - t0
    if errors:
        who, e = errors[0]
        print("cartpole.py: %s failed: %s: %s" % (who, type(e).__name__, e), file=sys.stderr)
        return 1
    rate = stats.steps / secs
    if stats.solved_at:
        steps, eps = stats.solved_at
        print("SOLVED seed %d: avg100 >= 195 after %d steps, %d episodes (budget %d), %d updates, "
              "%.1f s, %.0f steps/s, %s, %d actors"
              % (args.seed, steps, eps, args.max_steps, counts[0], secs, rate, args.backend,
                 args.actors))
        return 0
    print("NOT SOLVED seed %d: avg100 %.1f after %d steps, %d episodes (budget %d), %.1f s, "
          "%.0f steps/s, %s, %d actors"
          % (args.seed, stats.avg100(), stats.steps, len(stats.rewards), args.max_steps, secs,
             rate, args.backend, args.actors))
    return 1


if __name__ == "__main__":
    sys.exit(main())
