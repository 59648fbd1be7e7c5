"""The ETS reference model: a bidirectional LSTM over each window's op blocks.

It exists to be beaten, measured in the same harness as the LightGBM model.
As in ETS: input per window is its W x (F+1) op blocks (``is_op`` included),
a 4-layer bidirectional LSTM with hidden size equal to the input size, a
linear head giving (duration, gap) per position, L1 loss, Adam at 1e-4 and
batches of 128. Targets are lgbm's 'log' target (sign-kept log1p of
microseconds), then standardised as ETS does, rather than standardised
microseconds: on CPU traces op times span six decades and L1 on standardised
microseconds is ruled by the few largest ops.
Padding positions are packed away, so they reach neither the loss nor any
op's output. Predictions are averaged over covering windows and summed per
iteration with :func:`itercast.predict.rows.op_sums`.
"""

from __future__ import annotations

import time

import numpy as np

from itercast.predict.lgbm import from_target, to_target
from itercast.predict.rows import F, all_pairs, op_sums, rows_of, window_blocks

INPUT_SIZE = F + 1


def stacked_windows(samples) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Blocks, (duration, gap) labels in ns and op counts of every window of the samples."""
    blocks = np.concatenate([window_blocks(s.windows) for s in samples])
    labels = np.concatenate([s.windows.y for s in samples])
    lengths = np.concatenate([s.windows.index[:, 2] for s in samples])
    return blocks, labels, lengths


def op_positions(lengths: np.ndarray, width: int) -> np.ndarray:
    """(windows, width) bool: which positions hold an op (windows are filled from the left)."""
    return np.arange(width)[None, :] < lengths[:, None]


def _network(layers: int):
    import torch

    class WindowLSTM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(INPUT_SIZE, INPUT_SIZE, num_layers=layers, bidirectional=True,
                                      batch_first=True)
            self.head = torch.nn.Linear(2 * INPUT_SIZE, 2)

        def forward(self, x, lengths):
            """(batch, width, 2) outputs; positions past each window's length are zero."""
            from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

            packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
            out, _ = self.lstm(packed)
            out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
            return self.head(out) * valid_positions(lengths, x.shape[1]).unsqueeze(-1)

    return WindowLSTM()


def valid_positions(lengths, width: int):
    import torch

    return torch.arange(width, device=lengths.device)[None, :] < lengths[:, None]


def masked_l1(output, target, lengths):
    """Mean absolute error over the positions that hold an op (padding excluded)."""
    mask = valid_positions(lengths, output.shape[1]).unsqueeze(-1).expand_as(output)
    return (output - target).abs()[mask].mean()


class ETSReference:
    """ETS's window LSTM, trained for a wall-clock budget; same interface as WindowLGBM."""

    name = "ets"
    separates_gaps = True

    def __init__(self, max_seconds: float = 120.0, max_epochs: float | None = None, batch_size: int = 128,
                 learning_rate: float = 1e-4, layers: int = 4, threads: int | None = None, seed: int = 0):
        self.max_seconds, self.max_epochs = max_seconds, max_epochs
        self.batch_size, self.learning_rate, self.layers = batch_size, learning_rate, layers
        self.threads, self.seed = threads, seed
        self.network = None
        self.mean = self.scale = None  # input standardisation, fitted on the training ops
        self.target_mean = self.target_scale = None  # (duration, gap) log-target standardisation
        self.epochs_done = 0.0

    def _standardise(self, blocks: np.ndarray) -> np.ndarray:
        return (blocks - self.mean) / self.scale

    def fit(self, samples, client=None) -> "ETSReference":
        import torch

        if self.threads:
            torch.set_num_threads(self.threads)
        torch.manual_seed(self.seed)
        start = time.perf_counter()
        blocks, labels, lengths = stacked_windows(samples)
        targets = to_target(labels, "log")
        self._fit_scaling(blocks, targets, lengths)
        x = torch.from_numpy(self._standardise(blocks).astype(np.float32))
        y = torch.from_numpy(((targets - self.target_mean) / self.target_scale).astype(np.float32))
        self.network = _network(self.layers)
        self._train(x, y, torch.from_numpy(lengths.astype(np.int64)), start)
        return self

    def _fit_scaling(self, blocks: np.ndarray, targets: np.ndarray, lengths: np.ndarray) -> None:
        """Fits input and target standardisation on the positions that hold an op."""
        ops = op_positions(lengths, blocks.shape[1])
        self.mean, self.scale = blocks[ops].mean(axis=0), np.maximum(blocks[ops].std(axis=0), 1e-6)
        self.target_mean, self.target_scale = targets[ops].mean(axis=0), np.maximum(targets[ops].std(axis=0), 1e-6)

    def _train(self, x, y, lengths, start: float) -> None:
        """Shuffled epochs of Adam on the masked L1 loss until the budget is spent."""
        import torch

        optimiser = torch.optim.Adam(self.network.parameters(), lr=self.learning_rate)
        generator = torch.Generator().manual_seed(self.seed)
        seen = 0
        while not self._budget_spent(start, seen / len(x)):
            for chunk in torch.randperm(len(x), generator=generator).split(self.batch_size):
                loss = masked_l1(self.network(x[chunk], lengths[chunk]), y[chunk], lengths[chunk])
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
                seen += len(chunk)
                if self._budget_spent(start, seen / len(x)):
                    break
        self.epochs_done = seen / len(x)

    def _budget_spent(self, start: float, epochs: float) -> bool:
        if self.max_epochs is not None and epochs >= self.max_epochs:
            return True
        return time.perf_counter() - start >= self.max_seconds

    def window_outputs(self, blocks: np.ndarray, lengths: np.ndarray, batch: int = 1024) -> np.ndarray:
        """(windows, width, 2) predicted (duration, gap) in ns; zero at padding positions."""
        import torch

        x = torch.from_numpy(self._standardise(blocks).astype(np.float32))
        n = torch.from_numpy(lengths.astype(np.int64))
        self.network.eval()
        with torch.no_grad():
            out = torch.cat([self.network(x[i:i + batch], n[i:i + batch]) for i in range(0, len(x), batch)])
        self.network.train()
        ns = from_target(out.numpy().astype(np.float64) * self.target_scale + self.target_mean, "log")
        return ns * (op_positions(lengths, blocks.shape[1]))[..., None]

    def predict_op_time(self, samples) -> np.ndarray:
        """Per sample: summed predicted duration + gap of its ops, ns."""
        durations, gaps = self.predict_op_parts(samples)
        return durations + gaps

    def predict_op_parts(self, samples) -> tuple[np.ndarray, np.ndarray]:
        """Per sample: summed predicted durations and summed predicted gaps of its ops, ns (each op's
        averaged over the windows covering it)."""
        blocks, _, lengths = stacked_windows(samples)
        per_position = self.window_outputs(blocks, lengths)
        offsets = np.cumsum([0] + [len(s.windows) for s in samples])
        predicted = np.concatenate([per_position[offsets[i]:offsets[i + 1]][all_pairs(s.windows)]
                                    for i, s in enumerate(samples)])
        rows = rows_of(samples, all_pairs, labels=False)
        durations, gaps = op_sums(rows, predicted.T, len(samples))
        return durations, gaps
