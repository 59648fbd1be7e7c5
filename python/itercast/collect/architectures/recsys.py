"""Embedding-heavy recommenders: DLRM, Wide & Deep, DCN, NCF, DeepFM, AutoInt, xDeepFM, two towers, GRU4Rec.

Every model takes ``dense`` (batch, n_dense) floats and ``sparse`` (batch,
n_tables, lookups) ids; each table pools its lookups with a summing EmbeddingBag.
"""

from __future__ import annotations

import torch
from torch import nn

from itercast.collect.architectures.mlp import mlp


class EmbeddingTables(nn.Module):
    def __init__(self, tables, rows, dim):
        super().__init__()
        self.bags = nn.ModuleList(nn.EmbeddingBag(rows, dim, mode="sum") for _ in range(tables))

    def forward(self, sparse):
        return torch.stack([bag(sparse[:, index]) for index, bag in enumerate(self.bags)], 1)


class DLRM(nn.Module):
    def __init__(self, dense, tables, rows, dim, bottom, top):
        super().__init__()
        self.bottom = mlp((dense,) + bottom + (dim,), final_activation=True)
        self.embeddings = EmbeddingTables(tables, rows, dim)
        features = tables + 1
        pairs = features * (features - 1) // 2
        self.top = mlp((dim + pairs,) + top + (1,))
        self.pair_index = torch.triu_indices(features, features, 1)

    def forward(self, dense, sparse):
        bottom = self.bottom(dense)
        features = torch.cat([bottom.unsqueeze(1), self.embeddings(sparse)], 1)
        interactions = features @ features.transpose(1, 2)
        pairs = interactions[:, self.pair_index[0], self.pair_index[1]]
        return self.top(torch.cat([bottom, pairs], 1)).squeeze(1)


class WideAndDeep(nn.Module):
    def __init__(self, dense, tables, rows, dim, deep):
        super().__init__()
        self.wide = EmbeddingTables(tables, rows, 1)
        self.embeddings = EmbeddingTables(tables, rows, dim)
        self.deep = mlp((dense + tables * dim,) + deep + (1,))

    def forward(self, dense, sparse):
        wide = self.wide(sparse).sum((1, 2))
        deep = self.deep(torch.cat([dense, self.embeddings(sparse).flatten(1)], 1)).squeeze(1)
        return wide + deep


class CrossLayer(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.linear = nn.Linear(width, width)

    def forward(self, x0, x):
        return x0 * self.linear(x) + x


class DeepCrossNetwork(nn.Module):
    def __init__(self, dense, tables, rows, dim, cross_layers, deep):
        super().__init__()
        width = dense + tables * dim
        self.embeddings = EmbeddingTables(tables, rows, dim)
        self.cross = nn.ModuleList(CrossLayer(width) for _ in range(cross_layers))
        self.deep = mlp((width,) + deep, final_activation=True)
        self.head = nn.Linear(width + deep[-1], 1)

    def forward(self, dense, sparse):
        x0 = torch.cat([dense, self.embeddings(sparse).flatten(1)], 1)
        crossed = x0
        for layer in self.cross:
            crossed = layer(x0, crossed)
        return self.head(torch.cat([crossed, self.deep(x0)], 1)).squeeze(1)


class NeuralCollaborativeFiltering(nn.Module):
    """NeuMF: a generalised matrix factorisation and an MLP over (user, item) tables."""

    def __init__(self, dense, tables, rows, dim, hidden):
        super().__init__()
        self.gmf = EmbeddingTables(2, rows, dim)
        self.mlp_embeddings = EmbeddingTables(2, rows, dim)
        self.mlp = mlp((2 * dim,) + hidden, final_activation=True)
        self.head = nn.Linear(dim + hidden[-1], 1)

    def forward(self, dense, sparse):
        user_item = self.gmf(sparse)
        gmf = user_item[:, 0] * user_item[:, 1]
        deep = self.mlp(self.mlp_embeddings(sparse).flatten(1))
        return self.head(torch.cat([gmf, deep], 1)).squeeze(1)


def _fields(dense_embed, embeddings, dense, sparse):
    """(batch, 1 + tables, dim): the dense features' embedding, then each table's pooled lookups."""
    return torch.cat([dense_embed(dense).unsqueeze(1), embeddings(sparse)], 1)


class DeepFM(nn.Module):
    """DeepFM: a factorisation machine's first- and second-order terms beside a deep MLP."""

    def __init__(self, dense, tables, rows, dim, deep):
        super().__init__()
        self.linear = EmbeddingTables(tables, rows, 1)
        self.dense_linear = nn.Linear(dense, 1)
        self.embeddings = EmbeddingTables(tables, rows, dim)
        self.dense_embed = nn.Linear(dense, dim)
        self.deep = mlp(((tables + 1) * dim,) + deep + (1,))
        # DeepFM's initialisation: with N(0, 1) rows the pairwise term starts at logits in the hundreds.
        for bag in self.embeddings.bags:
            nn.init.normal_(bag.weight, std=0.01)

    def forward(self, dense, sparse):
        fields = _fields(self.dense_embed, self.embeddings, dense, sparse)
        # sum over pairs <v_i, v_j> = ((sum v)^2 - sum v^2) / 2
        second_order = 0.5 * (fields.sum(1).pow(2) - fields.pow(2).sum(1)).sum(1)
        first_order = self.linear(sparse).sum((1, 2)) + self.dense_linear(dense).squeeze(1)
        return first_order + second_order + self.deep(fields.flatten(1)).squeeze(1)


class TwoTower(nn.Module):
    """A retrieval model: user and item towers (MLPs over their own tables), scored by a dot product.

    The first half of the tables (and the dense features) describe the user, the rest the item.
    """

    def __init__(self, dense, tables, rows, dim, tower):
        super().__init__()
        self.user_tables = tables // 2
        self.user_embeddings = EmbeddingTables(self.user_tables, rows, dim)
        self.item_embeddings = EmbeddingTables(tables - self.user_tables, rows, dim)
        self.user_tower = mlp((dense + self.user_tables * dim,) + tower)
        self.item_tower = mlp(((tables - self.user_tables) * dim,) + tower)

    def forward(self, dense, sparse):
        user = self.user_embeddings(sparse[:, :self.user_tables]).flatten(1)
        item = self.item_embeddings(sparse[:, self.user_tables:]).flatten(1)
        user = nn.functional.normalize(self.user_tower(torch.cat([dense, user], 1)), dim=1)
        item = nn.functional.normalize(self.item_tower(item), dim=1)
        return (user * item).sum(1) * 10.0  # a temperature, as cosine scores lie in [-1, 1]


class GRU4Rec(nn.Module):
    """Session-based recommendation (Hidasi et al. 2016): a GRU over the session's items predicts the next."""

    def __init__(self, vocab, dim, hidden, max_len=None):
        super().__init__()
        self.items = nn.Embedding(vocab, dim)
        nn.init.normal_(self.items.weight, std=0.02)
        self.rnn = nn.GRU(dim, hidden, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, ids):
        output, _ = self.rnn(self.items(ids))
        return self.head(output)


class AutoInt(nn.Module):
    """AutoInt (Song et al. 2019): stacked multi-head self-attention across the fields' embeddings
    learns which features interact."""

    def __init__(self, dense, tables, rows, dim, heads, layers):
        super().__init__()
        self.dense_embed = nn.Linear(dense, dim)
        self.embeddings = EmbeddingTables(tables, rows, dim)
        self.attention = nn.ModuleList(nn.MultiheadAttention(dim, heads, batch_first=True) for _ in range(layers))
        self.head = nn.Linear((tables + 1) * dim, 1)

    def forward(self, dense, sparse):
        fields = _fields(self.dense_embed, self.embeddings, dense, sparse)
        for attention in self.attention:
            fields = torch.relu(fields + attention(fields, fields, fields, need_weights=False)[0])
        return self.head(fields.flatten(1)).squeeze(1)


class CompressedInteraction(nn.Module):
    """xDeepFM's CIN: each layer takes the outer products of its maps with the input fields,
    compresses them with a 1x1 convolution, and is sum-pooled over the embedding dimension."""

    def __init__(self, fields, layer_sizes):
        super().__init__()
        sizes = (fields,) + tuple(layer_sizes)
        self.convs = nn.ModuleList(nn.Conv1d(previous * fields, size, 1) for previous, size in zip(sizes, sizes[1:]))

    def forward(self, fields):
        maps, pooled = fields, []
        for conv in self.convs:
            maps = torch.relu(conv((maps.unsqueeze(2) * fields.unsqueeze(1)).flatten(1, 2)))
            pooled.append(maps.sum(2))
        return torch.cat(pooled, 1)


class XDeepFM(nn.Module):
    """xDeepFM (Lian et al. 2018): a linear term, a compressed interaction network and a deep MLP."""

    def __init__(self, dense, tables, rows, dim, cin, deep):
        super().__init__()
        self.linear = EmbeddingTables(tables, rows, 1)
        self.dense_linear = nn.Linear(dense, 1)
        self.dense_embed = nn.Linear(dense, dim)
        self.embeddings = EmbeddingTables(tables, rows, dim)
        for bag in self.embeddings.bags:
            nn.init.normal_(bag.weight, std=0.01)  # as DeepFM: outer products of N(0, 1) rows explode
        self.cin = CompressedInteraction(tables + 1, cin)
        self.cin_head = nn.Linear(sum(cin), 1)
        self.deep = mlp(((tables + 1) * dim,) + deep + (1,))

    def forward(self, dense, sparse):
        fields = _fields(self.dense_embed, self.embeddings, dense, sparse)
        first_order = self.linear(sparse).sum((1, 2)) + self.dense_linear(dense).squeeze(1)
        interactions = self.cin_head(self.cin(fields)).squeeze(1)
        return first_order + interactions + self.deep(fields.flatten(1)).squeeze(1)
