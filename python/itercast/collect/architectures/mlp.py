"""Multi-layer perceptrons, an autoencoder and MLP-Mixer."""

from __future__ import annotations

import torch
from torch import nn


def mlp(widths, activation=nn.ReLU, final_activation=False):
    layers = []
    for index, (cin, cout) in enumerate(zip(widths, widths[1:])):
        layers.append(nn.Linear(cin, cout))
        if index < len(widths) - 2 or final_activation:
            layers.append(activation())
    return nn.Sequential(*layers)


def classifier_mlp(hidden, depth, features, num_classes):
    return mlp((features,) + (hidden,) * depth + (num_classes,))


def autoencoder(bottleneck, hidden, features):
    return mlp((features, hidden, bottleneck, hidden, features))


class MixerBlock(nn.Module):
    def __init__(self, tokens, dim):
        super().__init__()
        self.token_norm = nn.LayerNorm(dim)
        self.token_mix = mlp((tokens, tokens * 2, tokens), nn.GELU)
        self.channel_norm = nn.LayerNorm(dim)
        self.channel_mix = mlp((dim, dim * 4, dim), nn.GELU)

    def forward(self, x):
        x = x + self.token_mix(self.token_norm(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mix(self.channel_norm(x))


class MlpMixer(nn.Module):
    def __init__(self, dim, depth, patch, num_classes, image_size):
        super().__init__()
        tokens = (image_size // patch) ** 2
        self.patchify = nn.Conv2d(3, dim, patch, patch)
        self.blocks = nn.Sequential(*[MixerBlock(tokens, dim) for _ in range(depth)])
        self.head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, num_classes))

    def forward(self, images):
        tokens = self.patchify(images).flatten(2).transpose(1, 2)
        return self.head(self.blocks(tokens).mean(1))


class ResidualBlock(nn.Module):
    """The tabular ResNet's block (Gorishniy et al. 2021): x + Linear(Dropout(ReLU(Linear(BN(x)))))."""

    def __init__(self, dim, hidden, dropout=0.1):
        super().__init__()
        self.body = nn.Sequential(nn.BatchNorm1d(dim), nn.Linear(dim, hidden), nn.ReLU(), nn.Dropout(dropout),
                                  nn.Linear(hidden, dim), nn.Dropout(dropout))

    def forward(self, x):
        return x + self.body(x)


def tabular_resnet(dim, hidden, depth, features, num_classes):
    return nn.Sequential(nn.Linear(features, dim), *[ResidualBlock(dim, hidden) for _ in range(depth)],
                         nn.BatchNorm1d(dim), nn.ReLU(), nn.Linear(dim, num_classes))


def batchnorm_mlp(hidden, depth, features, num_classes, dropout=0.2):
    """Linear, BatchNorm, ReLU and Dropout per layer: many small ops around each small matmul."""
    layers, width = [], features
    for _ in range(depth):
        layers += [nn.Linear(width, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Dropout(dropout)]
        width = hidden
    return nn.Sequential(*layers, nn.Linear(width, num_classes))


def deep_autoencoder(widths, features):
    """A symmetric autoencoder through ``widths`` (the last is the code), GELU between layers."""
    return mlp((features,) + tuple(widths) + tuple(reversed(widths[:-1])) + (features,), nn.GELU)


class FastText(nn.Module):
    """fastText: the mean of the tokens' embeddings, a linear classifier."""

    def __init__(self, vocab, dim, num_classes, max_len=None):
        super().__init__()
        self.bag = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.head = nn.Linear(dim, num_classes)

    def forward(self, ids):
        return self.head(self.bag(ids))


class HighwayLayer(nn.Module):
    """Srivastava et al. (2015): y = H(x) T(x) + x (1 - T(x)), a learned gate per unit."""

    def __init__(self, width):
        super().__init__()
        self.transform = nn.Linear(width, width)
        self.gate = nn.Linear(width, width)
        nn.init.constant_(self.gate.bias, -2.0)  # start close to carrying the input through

    def forward(self, x):
        gate = torch.sigmoid(self.gate(x))
        return torch.relu(self.transform(x)) * gate + x * (1 - gate)


def highway_network(width, depth, features, num_classes):
    return nn.Sequential(nn.Linear(features, width), nn.ReLU(), *[HighwayLayer(width) for _ in range(depth)],
                         nn.Linear(width, num_classes))


class SwiGLUBlock(nn.Module):
    """A pre-norm residual SwiGLU feed-forward block (as in PaLM and Llama), over feature vectors."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.gate_up = nn.Linear(dim, 2 * hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        gate, up = self.gate_up(self.norm(x)).chunk(2, -1)
        return x + self.down(nn.functional.silu(gate) * up)


def gated_mlp(dim, hidden, depth, features, num_classes):
    return nn.Sequential(nn.Linear(features, dim), *[SwiGLUBlock(dim, hidden) for _ in range(depth)],
                         nn.LayerNorm(dim), nn.Linear(dim, num_classes))


class Maxout(nn.Module):
    """A maxout unit (Goodfellow et al. 2013): the largest of ``pieces`` linear maps per output."""

    def __init__(self, cin, cout, pieces):
        super().__init__()
        self.linear = nn.Linear(cin, cout * pieces)
        self.pieces = pieces

    def forward(self, x):
        return self.linear(x).unflatten(-1, (-1, self.pieces)).amax(-1)


def maxout_network(width, depth, pieces, features, num_classes):
    units = [Maxout(features if index == 0 else width, width, pieces) for index in range(depth)]
    return nn.Sequential(*units, nn.Linear(width, num_classes))


class VariationalAutoencoder(nn.Module):
    """A VAE (Kingma and Welling 2014): returns the reconstruction and the posterior's mean and log-variance."""

    def __init__(self, hidden, latent, features):
        super().__init__()
        self.encoder = mlp((features, hidden), final_activation=True)
        self.mean = nn.Linear(hidden, latent)
        self.log_var = nn.Linear(hidden, latent)
        self.decoder = mlp((latent, hidden, features))

    def forward(self, x):
        hidden = self.encoder(x)
        mean, log_var = self.mean(hidden), self.log_var(hidden)
        latent = mean + torch.randn_like(mean) * torch.exp(0.5 * log_var)  # the reparameterisation trick
        return self.decoder(latent), mean, log_var


def variational_loss(output, target):
    """Per-row squared reconstruction error plus the KL divergence from the unit Gaussian prior."""
    reconstruction, mean, log_var = output
    squared_error = (reconstruction - target).pow(2).sum(1)
    divergence = -0.5 * (1 + log_var - mean.pow(2) - log_var.exp()).sum(1)
    return (squared_error + divergence).mean()
