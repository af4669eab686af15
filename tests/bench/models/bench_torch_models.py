"""bench_models.sh's models in PyTorch, on BENCH_THREADS threads (environment; default 1): resnet (ResNet-32, 32x32x3, Adam), vgg (VGG-16
with batch norm and dropout, Momentum), cnn (the digits CNN on 8x8 images, Adam), mlp
(784-512-512-10, SGD), as tests/bench/models/models.fl builds them; batch 64, random data.
usage: bench_torch_models.py NET WARM TIMED  -> samples_per_s= (wall) samples_per_cpu_s= (process
CPU time, what a loaded machine does not distort) peak_rss_kb=
       bench_torch_models.py infer RUNS      -> ResNet-32's latency on one image: best_ms= median_ms="""
import os
import resource
import sys
import time

import torch
import torch.nn as nn

torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "1")))
torch.manual_seed(1)


def conv_bn(cin, cout, k, stride, pad, relu=True, bias=False):
    layers = [nn.Conv2d(cin, cout, k, stride, pad, bias=bias), nn.BatchNorm2d(cout)]
    return nn.Sequential(*(layers + [nn.ReLU()] if relu else layers))


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.body = nn.Sequential(conv_bn(cin, cout, 3, stride, 1), conv_bn(cout, cout, 3, 1, 1, False, True))
        self.short = conv_bn(cin, cout, 1, stride, 0, False) if cin != cout else nn.Identity()

    def forward(self, x):
        return torch.relu(self.body(x) + self.short(x))


def resnet32():
    layers = [conv_bn(3, 16, 3, 1, 1)]
    for cin, cout, stride in ((16, 16, 1), (16, 32, 2), (32, 64, 2)):
        layers += [Block(cin, cout, stride)] + [Block(cout, cout, 1) for _ in range(4)]
    return nn.Sequential(*layers, nn.AvgPool2d(8, 1), nn.Flatten(), nn.Linear(64, 10))


def vgg16():
    layers, cin = [], 3
    for ch, drops in ((64, [0.3, 0]), (128, [0.4, 0]), (256, [0.4, 0.4, 0]), (512, [0.4, 0.4, 0]),
                      (512, [0.4, 0.4, 0])):
        for p in drops:
            layers += [nn.Conv2d(cin, ch, 3, 1, 1), nn.BatchNorm2d(ch), nn.ReLU()]
            layers += [nn.Dropout(p)] if p else []
            cin = ch
        layers.append(nn.MaxPool2d(2, 2))
    return nn.Sequential(*layers, nn.Flatten(), nn.Dropout(0.5), nn.Linear(512, 4096),
                         nn.BatchNorm1d(4096), nn.ReLU(), nn.Dropout(0.5), nn.Linear(4096, 4096),
                         nn.Linear(4096, 10))


def cnn():
    return nn.Sequential(nn.Conv2d(1, 16, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2, 2), nn.Flatten(),
                         nn.Linear(16 * 4 * 4, 10))


def mlp():
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


SHAPES = {"resnet": (3, 32, 32), "vgg": (3, 32, 32), "cnn": (1, 8, 8), "mlp": (784,)}
NETS = {"resnet": resnet32, "vgg": vgg16, "cnn": cnn, "mlp": mlp}

if sys.argv[1] == "infer":
    runs = int(sys.argv[2])
    net = resnet32().eval()
    x = torch.rand(1, 3, 32, 32)
    times = []
    with torch.no_grad():
        for k in range(3 + runs):
            t0 = time.perf_counter()
            net(x)
            if k >= 3:
                times.append(time.perf_counter() - t0)
    times.sort()
    print("best_ms=%.3f median_ms=%.3f" % (times[0] * 1e3, times[len(times) // 2] * 1e3))
    sys.exit(0)

name, warm, timed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
net = NETS[name]()
if name == "vgg":
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
elif name == "mlp":
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
else:
    opt = torch.optim.Adam(net.parameters(), lr=0.001)
loss_fn = nn.CrossEntropyLoss()  # log-softmax + NLL: fluidc's softmax + cross_entropy
batches = [(torch.rand(64, *SHAPES[name]), torch.randint(0, 10, (64,))) for _ in range(4)]


def step(b):
    opt.zero_grad()
    loss_fn(net(b[0]), b[1]).backward()
    opt.step()


for k in range(warm):
    step(batches[k % 4])
t0, c0 = time.perf_counter(), time.process_time()
for k in range(timed):
    step(batches[(warm + k) % 4])
dt, dc = time.perf_counter() - t0, time.process_time() - c0
print("samples_per_s=%.2f samples_per_cpu_s=%.2f peak_rss_kb=%d" %
      (64 * timed / dt, 64 * timed / dc, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
