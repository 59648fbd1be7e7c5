"""Architectures whose op types the zoo never runs: the predictor's blind test (itercast.collect.blind).

Each is a kind of model a user of a training cluster brings, built so that its distinctive ops are ones
no zoo model records: transposed and 1-D/3-D convolutions, group norm, upsampling, FFTs, gathers and
scatters over an index, top-k routing, pairwise distances.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def _head(channels, num_classes):
    return nn.Linear(channels, num_classes)


class UNet(nn.Module):
    """A two-level U-Net: group-normed convolutions, transposed-convolution and bilinear upsampling,
    skip connections concatenated; classified from the decoder's pooled output."""

    def __init__(self, num_classes, image_size, width=32):
        super().__init__()

        def block(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(8, cout), nn.SiLU(),
                                 nn.Conv2d(cout, cout, 3, padding=1), nn.GroupNorm(8, cout), nn.SiLU())

        self.down1, self.down2, self.bottom = block(3, width), block(width, 2 * width), block(2 * width, 4 * width)
        self.up2 = nn.ConvTranspose2d(4 * width, 2 * width, 2, stride=2)
        self.dec2 = block(4 * width, 2 * width)
        self.dec1 = block(3 * width, width)
        self.head = _head(width, num_classes)

    def forward(self, x):
        skip1 = self.down1(x)
        skip2 = self.down2(F.avg_pool2d(skip1, 2))
        y = self.bottom(F.avg_pool2d(skip2, 2))
        y = self.dec2(torch.cat([self.up2(y), skip2], dim=1))
        y = F.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False)
        y = self.dec1(torch.cat([y, skip1], dim=1))
        return self.head(y.mean(dim=(2, 3)))


class WaveNet(nn.Module):
    """Dilated causal 1-D convolutions with gated (tanh x sigmoid) activations, residual and skip paths."""

    def __init__(self, features, num_classes, channels=64, layers=8):
        super().__init__()
        self.inp = nn.Conv1d(features, channels, 1)
        self.dilations = [2 ** (k % 4) for k in range(layers)]
        self.filters = nn.ModuleList(nn.Conv1d(channels, 2 * channels, 2, dilation=d) for d in self.dilations)
        self.residuals = nn.ModuleList(nn.Conv1d(channels, channels, 1) for _ in self.dilations)
        self.skips = nn.ModuleList(nn.Conv1d(channels, channels, 1) for _ in self.dilations)
        self.head = _head(channels, num_classes)

    def forward(self, sequence):
        x = self.inp(sequence.transpose(1, 2))
        skip = 0
        for dilation, conv, residual, to_skip in zip(self.dilations, self.filters, self.residuals, self.skips):
            filtered, gate = conv(F.pad(x, (dilation, 0))).chunk(2, dim=1)
            h = torch.tanh(filtered) * torch.sigmoid(gate)
            x = x + residual(h)
            skip = skip + to_skip(h)
        return self.head(F.relu(skip + x).amax(dim=2))


class GraphConvNet(nn.Module):
    """Graph convolutions over a fixed random graph whose nodes are slices of the input row: messages
    gathered along edges (index_select) and summed into their targets (index_add), degree-normalised."""

    def __init__(self, features, num_classes, node_features=16, hidden=128, layers=3, degree=4):
        super().__init__()
        self.nodes, self.node_features = features // node_features, node_features
        generator = torch.Generator().manual_seed(0)
        source = torch.randint(self.nodes, (self.nodes * degree,), generator=generator)
        target = torch.arange(self.nodes).repeat_interleave(degree)
        self.register_buffer("source", torch.cat([source, torch.arange(self.nodes)]))  # with self-loops
        self.register_buffer("target", torch.cat([target, torch.arange(self.nodes)]))
        self.register_buffer("norm", torch.full((self.nodes, 1), 1.0 / (degree + 1)))
        widths = [node_features] + [hidden] * layers
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths, widths[1:]))
        self.head = _head(hidden, num_classes)

    def forward(self, rows):
        x = rows.view(rows.shape[0], self.nodes, self.node_features)
        for layer in self.layers:
            messages = layer(x).index_select(1, self.source)
            x = F.relu(torch.zeros_like(messages[:, :self.nodes]).index_add(1, self.target, messages) * self.norm)
        return self.head(x.mean(dim=1))


class MixtureOfExperts(nn.Module):
    """Sparse mixture-of-experts feed-forward layers: a router's top-2 experts per row, rows gathered per
    expert and their outputs scattered back, weighted by the router's renormalised probabilities."""

    def __init__(self, features, num_classes, dim=256, experts=8, hidden=512, layers=2, top=2):
        super().__init__()
        self.inp, self.top = nn.Linear(features, dim), top
        self.routers = nn.ModuleList(nn.Linear(dim, experts) for _ in range(layers))
        self.experts = nn.ModuleList(
            nn.ModuleList(nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))
                          for _ in range(experts)) for _ in range(layers))
        self.norms = nn.ModuleList(nn.LayerNorm(dim) for _ in range(layers))
        self.head = _head(dim, num_classes)

    def forward(self, rows):
        x = self.inp(rows)
        for router, experts, norm in zip(self.routers, self.experts, self.norms):
            weights, chosen = torch.topk(router(x).softmax(dim=-1), self.top, dim=-1)
            weights = weights / weights.sum(dim=-1, keepdim=True)
            out = torch.zeros_like(x)
            for index, expert in enumerate(experts):
                row, slot = torch.where(chosen == index)
                if row.numel():
                    out = out.index_add(0, row, expert(x[row]) * weights[row, slot].unsqueeze(1))
            x = norm(x + out)
        return self.head(x)


class Video3D(nn.Module):
    """A small 3-D convolutional video classifier (C3D style) over a clip made from the image."""

    def __init__(self, num_classes, image_size, frames=8, width=24):
        super().__init__()
        self.frames = frames

        def block(cin, cout):
            return nn.Sequential(nn.Conv3d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm3d(cout),
                                 nn.ReLU(inplace=True))

        self.features = nn.Sequential(block(3, width), nn.MaxPool3d((1, 2, 2)), block(width, 2 * width),
                                      nn.MaxPool3d(2), block(2 * width, 4 * width), nn.AdaptiveAvgPool3d(1))
        self.head = _head(4 * width, num_classes)

    def forward(self, images):
        clip = torch.stack([torch.roll(images, shifts=t, dims=3) for t in range(self.frames)], dim=2)
        return self.head(self.features(clip).flatten(1))


class SpectralConv2d(nn.Module):
    def __init__(self, channels, modes):
        super().__init__()
        self.modes = modes
        scale = 1.0 / (channels * channels)
        self.weights = nn.Parameter(scale * torch.randn(2, channels, channels, modes, modes, 2))

    def forward(self, x):
        spectrum = torch.fft.rfft2(x)
        out = torch.zeros_like(spectrum)
        m = self.modes
        for k, rows in enumerate((slice(0, m), slice(-m, None))):
            out[:, :, rows, :m] = torch.einsum("bixy,ioxy->boxy", spectrum[:, :, rows, :m],
                                               torch.view_as_complex(self.weights[k]))
        return torch.fft.irfft2(out, s=x.shape[-2:])


class FourierNeuralOperator(nn.Module):
    """A Fourier neural operator: spectral convolutions (FFT, a learnt mix of the lowest modes, inverse
    FFT) beside pointwise ones, over the image as a field."""

    def __init__(self, num_classes, image_size, width=32, modes=8, layers=4):
        super().__init__()
        self.lift = nn.Conv2d(3, width, 1)
        self.spectral = nn.ModuleList(SpectralConv2d(width, min(modes, image_size // 4)) for _ in range(layers))
        self.pointwise = nn.ModuleList(nn.Conv2d(width, width, 1) for _ in range(layers))
        self.head = _head(width, num_classes)

    def forward(self, images):
        x = self.lift(images)
        for spectral, pointwise in zip(self.spectral, self.pointwise):
            x = F.gelu(spectral(x) + pointwise(x))
        return self.head(x.mean(dim=(2, 3)))


class VectorQuantizedClassifier(nn.Module):
    """A VQ-VAE's encoder and quantiser: each latent vector snapped to its nearest codebook entry (cdist,
    argmin, embedding) with the straight-through gradient, then decoded by transposed convolutions."""

    def __init__(self, num_classes, image_size, width=64, codes=512, dim=32):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, width, 4, 2, 1), nn.ReLU(), nn.Conv2d(width, dim, 4, 2, 1))
        self.codebook = nn.Embedding(codes, dim)
        self.decoder = nn.Sequential(nn.ConvTranspose2d(dim, width, 4, 2, 1), nn.ReLU(),
                                     nn.ConvTranspose2d(width, width, 4, 2, 1))
        self.head = _head(width, num_classes)

    def forward(self, images):
        z = self.encoder(images)
        flat = z.permute(0, 2, 3, 1).reshape(-1, z.shape[1])
        codes = torch.cdist(flat, self.codebook.weight).argmin(dim=1)
        quantised = self.codebook(codes).view(z.shape[0], z.shape[2], z.shape[3], -1).permute(0, 3, 1, 2)
        vq_loss = F.mse_loss(quantised, z.detach()) + 0.25 * F.mse_loss(z, quantised.detach())
        z = z + (quantised - z).detach()
        return self.head(self.decoder(z).mean(dim=(2, 3))) + vq_loss
