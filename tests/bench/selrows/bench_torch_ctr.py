# PyTorch side of bench_selrows.sh: the same CTR-style model (nn.Embedding(100000, 16,
# sparse=True), Linear 128 -> 64, ReLU, Linear 64 -> 2, cross entropy), SGD at 0.01, batch 256,
# one thread. Prints steps_per_s over the timed batches after the warm ones.
# usage: bench_torch_ctr.py DATA.csv WARM TIMED
import sys
import time

import torch

torch.set_num_threads(1)
torch.manual_seed(1)
path, warm, timed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = [list(map(int, line.split(","))) for line in open(path)]
data = torch.tensor(rows, dtype=torch.int64)
ids, labels = data[:, :8], data[:, 8]


class Ctr(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(100000, 16, sparse=True)
        self.fc1 = torch.nn.Linear(128, 64)
        self.fc2 = torch.nn.Linear(64, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(self.emb(x).reshape(x.shape[0], -1))))


model = Ctr()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()


def step(b):
    x, y = ids[b * 256:(b + 1) * 256], labels[b * 256:(b + 1) * 256]
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()


for b in range(warm):
    step(b)
t0 = time.perf_counter()
for b in range(warm, warm + timed):
    step(b)
print(f"steps_per_s={timed / (time.perf_counter() - t0):.2f}")
