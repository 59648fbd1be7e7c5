"""Live iteration-time predictions while a model trains: itercast's Monitor in a plain loop.

    python examples/online_monitor.py model.itc
"""

import logging
import sys

import torch

from itercast.online import Monitor

logging.basicConfig(level=logging.INFO, format="%(message)s")  # the Monitor logs one line per prediction

model = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
steps = 2000

with Monitor(sys.argv[1], total_steps=steps, every=500) as monitor:
    for step in range(steps):
        x, y = torch.randn(64, 32), torch.randint(0, 10, (64,))
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        monitor.step()

latest = monitor.latest
print(f"{len(monitor.history)} profiled steps predicted; last: {latest.predicted_ms} ms, ETA {latest.eta_s(10_000)} s"
      " for 10,000 more")
