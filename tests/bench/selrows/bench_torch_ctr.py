# PyTorch side of bench_selrows.sh, one thread, batch 256; prints steps_per_s over the timed
# batches after the warm ones.
#   ctr:   ctr_embed.fl's model (nn.Embedding(100000, 16, sparse=True) over 8 ids, Linear 128 ->
#          64, ReLU, Linear 64 -> 2, cross entropy), SGD at 0.01 on everything;
#   multi: tests/mpi/ctr_multi_opt.fl's (nn.Embedding(100000, 16, sparse=True) over 4 ids and
#          nn.Embedding(10000, 16, sparse=True) over 3, Linear 112 -> 32, ReLU, Linear 32 -> 2),
#          Adam at 0.01 on the Linear layers and SGD at 0.5 on the tables: two optimizers, as the
#          .fl's two minimize calls.
# usage: bench_torch_ctr.py ctr|multi DATA.csv WARM TIMED
import sys
import time

import torch

torch.set_num_threads(1)
torch.manual_seed(1)
kind, path, warm, timed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rows = [list(map(int, line.split(","))) for line in open(path)]
data = torch.tensor(rows, dtype=torch.int64)
labels = data[:, -1]
# the id fields: (table rows, first column, last column + 1)
fields = [(100000, 0, 8)] if kind == "ctr" else [(100000, 0, 4), (10000, 4, 7)]
hidden = 64 if kind == "ctr" else 32


class Ctr(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tables = torch.nn.ModuleList(torch.nn.Embedding(n, 16, sparse=True) for n, _, _ in fields)
        self.fc1 = torch.nn.Linear(16 * sum(e - b for _, b, e in fields), hidden)
        self.fc2 = torch.nn.Linear(hidden, 2)

    def forward(self, x):
        embs = [t(x[:, b:e]).reshape(x.shape[0], -1) for t, (_, b, e) in zip(self.tables, fields)]
        return self.fc2(torch.relu(self.fc1(torch.cat(embs, 1))))


model = Ctr()
if kind == "ctr":
    opts = [torch.optim.SGD(model.parameters(), lr=0.01)]
else:
    opts = [torch.optim.Adam(list(model.fc1.parameters()) + list(model.fc2.parameters()), lr=0.01),
            torch.optim.SGD(model.tables.parameters(), lr=0.5)]
loss_fn = torch.nn.CrossEntropyLoss()


def step(k):
    s = slice(k * 256, (k + 1) * 256)
    for o in opts:
        o.zero_grad()
    loss = loss_fn(model(data[s]), labels[s])
    loss.backward()
    for o in opts:
        o.step()


for k in range(warm):
    step(k)
t0 = time.perf_counter()
for k in range(warm, warm + timed):
    step(k)
print(f"steps_per_s={timed / (time.perf_counter() - t0):.2f}")
