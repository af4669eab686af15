"""The LSTM sentiment model of bench_lstm.sh in PyTorch: nn.Embedding(10000, 128), nn.LSTM(128, 512)
(the input projection is the LSTM's own), each sequence's last hidden state to nn.Linear(512, 2),
cross entropy, Adam at 1e-3; on BENCH_THREADS threads (environment; default 1, what bench_lstm.sh
uses; bench_models.sh's lstm rows set it). Two ways to feed sequences of different lengths, the MODE
argument:
  packed  pack_padded_sequence (enforce_sorted=False), the LSTM's final state: no step of padding
          is computed, but on the CPU the backward of each time step's slice of the packed data
          fills and adds a gradient the size of the whole packed input (SliceBackward0: fill_ and
          add are over 95% of a step in torch.profiler), which grows with the square of the length;
  padded  the padded batch through the LSTM (every sequence runs to the longest), the output at
          each sequence's last step.
Reads the bench's CSV; prints steps_per_s= over the timed batches (wall clock), steps_per_cpu_s=
(process CPU time) and peak_rss_kb=.
usage: bench_torch_lstm.py CSV WARM TIMED packed|padded"""
import csv
import gzip
import os
import resource
import sys
import time

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_sequence

torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "1")))
torch.manual_seed(1)
path, warm, timed, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
assert mode in ("packed", "padded"), mode
rows = list(csv.reader(open(path)))
batches = []
for i in range(0, len(rows) - 31, 32):
    seqs = [torch.tensor([int(t) for t in r[0].split()]) for r in rows[i:i + 32]]
    lengths = torch.tensor([len(s) for s in seqs])
    labels = torch.tensor([int(r[1]) for r in rows[i:i + 32]])
    batches.append((pad_sequence(seqs, batch_first=True), lengths, labels))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10000, 128)
        self.lstm = nn.LSTM(128, 512, batch_first=True)
        self.fc = nn.Linear(512, 2)

    def forward(self, x, lengths):
        if mode == "packed":
            packed = pack_padded_sequence(self.emb(x), lengths, batch_first=True, enforce_sorted=False)
            _, (h, _) = self.lstm(packed)
            return self.fc(h[-1])
        out, _ = self.lstm(self.emb(x))
        return self.fc(out[torch.arange(len(lengths)), lengths - 1])


net = Net()
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
loss_fn = nn.CrossEntropyLoss()


def step(b):
    x, lengths, y = b
    opt.zero_grad()
    loss = loss_fn(net(x, lengths), y)
    loss.backward()
    opt.step()


for k in range(warm):
    step(batches[k % len(batches)])
t0, c0 = time.perf_counter(), time.process_time()
for k in range(timed):
    step(batches[(warm + k) % len(batches)])
dt, dc = time.perf_counter() - t0, time.process_time() - c0
print("steps_per_s=%.3f steps_per_cpu_s=%.3f peak_rss_kb=%d" %
      (timed / dt, timed / dc, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
