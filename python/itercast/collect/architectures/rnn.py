"""Recurrent networks: sequence classifiers over feature vectors, and an LSTM language model."""

from __future__ import annotations

from torch import nn

RECURRENT_CELLS = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}


class RecurrentClassifier(nn.Module):
    def __init__(self, cell, features, hidden, layers, num_classes, bidirectional=False):
        super().__init__()
        self.rnn = RECURRENT_CELLS[cell](features, hidden, layers, batch_first=True,
                                         bidirectional=bidirectional)
        self.head = nn.Linear(hidden * (2 if bidirectional else 1), num_classes)

    def forward(self, sequence):
        output, _ = self.rnn(sequence)
        return self.head(output[:, -1])


class RecurrentLanguageModel(nn.Module):
    def __init__(self, cell, vocab, hidden, layers, max_len=None):  # no position table needed
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.rnn = RECURRENT_CELLS[cell](hidden, hidden, layers, batch_first=True)
        self.lm_head = nn.Linear(hidden, vocab)

    def forward(self, ids):
        output, _ = self.rnn(self.embed(ids))
        return self.lm_head(output)
