"""Recurrent networks: sequence classifiers and taggers, LSTM language models and an LSTM seq2seq."""

from __future__ import annotations

import torch
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


def _small_embedding(vocab, dim):
    # As the transformers' token tables: N(0, 1) rows make a tied output head's logits huge.
    embedding = nn.Embedding(vocab, dim)
    nn.init.normal_(embedding.weight, std=0.02)
    return embedding


class SequenceTagger(nn.Module):
    """A BiLSTM tagger (part-of-speech, named entities): one tag per token."""

    def __init__(self, vocab, num_tags, dim, hidden, layers, max_len=None):
        super().__init__()
        self.embed = _small_embedding(vocab, dim)
        self.rnn = nn.LSTM(dim, hidden, layers, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden, num_tags)

    def forward(self, ids):
        output, _ = self.rnn(self.embed(ids))
        return self.head(output)


class TiedLSTMLanguageModel(nn.Module):
    """A word-level LSTM language model whose output layer shares the embedding's weights."""

    def __init__(self, vocab, hidden, layers, dropout=0.2, max_len=None):
        super().__init__()
        self.embed = _small_embedding(vocab, hidden)
        self.rnn = nn.LSTM(hidden, hidden, layers, batch_first=True, dropout=dropout)
        self.drop = nn.Dropout(dropout)
        self.lm_head = nn.Linear(hidden, vocab)
        self.lm_head.weight = self.embed.weight

    def forward(self, ids):
        output, _ = self.rnn(self.drop(self.embed(ids)))
        return self.lm_head(self.drop(output))


class RecurrentSeq2Seq(nn.Module):
    """An LSTM encoder-decoder: the decoder starts from the encoder's final states."""

    def __init__(self, vocab, dim, hidden, layers, max_len=None):
        super().__init__()
        self.source_embed = _small_embedding(vocab, dim)
        self.target_embed = _small_embedding(vocab, dim)
        self.encoder = nn.LSTM(dim, hidden, layers, batch_first=True)
        self.decoder = nn.LSTM(dim, hidden, layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, source, target):
        _, state = self.encoder(self.source_embed(source))
        output, _ = self.decoder(self.target_embed(target), state)
        return self.head(output)


class AttentionLSTMClassifier(nn.Module):
    """An LSTM over the sequence, pooled by learned additive attention over its steps."""

    def __init__(self, features, hidden, num_classes):
        super().__init__()
        self.rnn = nn.LSTM(features, hidden, batch_first=True)
        self.score = nn.Sequential(nn.Linear(hidden, hidden // 4), nn.Tanh(), nn.Linear(hidden // 4, 1))
        self.head = nn.Linear(hidden, num_classes)

    def forward(self, sequence):
        output, _ = self.rnn(sequence)
        weights = torch.softmax(self.score(output), 1)
        return self.head((weights * output).sum(1))


class ConvRecurrentClassifier(nn.Module):
    """A CRNN as in keyword spotting: strided 1-d convolutions over the frames, then a BiLSTM."""

    def __init__(self, features, channels, hidden, num_classes):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(features, channels, 5, stride=2, padding=2), nn.BatchNorm1d(channels), nn.ReLU(),
            nn.Conv1d(channels, channels, 3, padding=1), nn.BatchNorm1d(channels), nn.ReLU())
        self.rnn = nn.LSTM(channels, hidden, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden, num_classes)

    def forward(self, sequence):
        frames = self.conv(sequence.transpose(1, 2)).transpose(1, 2)
        output, _ = self.rnn(frames)
        return self.head(output.mean(1))


class UnrolledRecurrentClassifier(nn.Module):
    """An LSTM or GRU cell stepped in Python, one call per time step, as custom recurrences (attention
    decoders, research cells) run: no fused whole-sequence layer, a few ops per step instead."""

    def __init__(self, cell, features, hidden, num_classes):
        super().__init__()
        self.cell = {"lstm": nn.LSTMCell, "gru": nn.GRUCell}[cell](features, hidden)
        self.head = nn.Linear(hidden, num_classes)

    def forward(self, sequence):
        hidden = sequence.new_zeros(sequence.shape[0], self.cell.hidden_size)
        state = (hidden, hidden) if isinstance(self.cell, nn.LSTMCell) else hidden
        for step in sequence.unbind(1):
            state = self.cell(step, state)
        return self.head(state[0] if isinstance(state, tuple) else state)
