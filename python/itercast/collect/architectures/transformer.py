"""Transformers from torch.nn: vision (ViT), encoder (BERT-like), decoder (GPT-like), seq2seq."""

from __future__ import annotations

import warnings

import torch
from torch import nn


def encoder_stack(dim, depth, heads, pre_norm=True):
    layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.1, activation="gelu",
                                       batch_first=True, norm_first=pre_norm)
    return nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)


class VisionTransformer(nn.Module):
    def __init__(self, dim, depth, heads, patch, num_classes, image_size):
        super().__init__()
        tokens = (image_size // patch) ** 2 + 1
        self.patchify = nn.Conv2d(3, dim, patch, patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.position = nn.Parameter(torch.randn(1, tokens, dim) * 0.02)
        self.encoder = encoder_stack(dim, depth, heads)
        self.head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, num_classes))

    def forward(self, images):
        patches = self.patchify(images).flatten(2).transpose(1, 2)
        cls = self.cls_token.expand(patches.shape[0], -1, -1)
        tokens = torch.cat([cls, patches], 1) + self.position
        return self.head(self.encoder(tokens)[:, 0])


class TokenEmbedding(nn.Module):
    def __init__(self, vocab, dim, max_len):
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.position = nn.Embedding(max_len, dim)
        # BERT's and GPT-2's initialisation. nn.Embedding's N(0, 1) makes tied LM-head logits
        # so large that softmax gradients underflow to denormals, which slow CPU matmuls ~5x.
        for table in (self.tokens, self.position):
            nn.init.normal_(table.weight, std=0.02)

    def forward(self, ids):
        positions = torch.arange(ids.shape[1], device=ids.device)
        return self.tokens(ids) + self.position(positions)


class EncoderClassifier(nn.Module):
    """BERT-like: post-norm encoder, classification from the first token."""

    def __init__(self, dim, depth, heads, vocab, num_classes, max_len):
        super().__init__()
        self.embed = TokenEmbedding(vocab, dim, max_len)
        self.norm = nn.LayerNorm(dim)
        self.encoder = encoder_stack(dim, depth, heads, pre_norm=False)
        self.pooler = nn.Sequential(nn.Linear(dim, dim), nn.Tanh(), nn.Linear(dim, num_classes))

    def forward(self, ids):
        return self.pooler(self.encoder(self.norm(self.embed(ids)))[:, 0])


class DecoderLanguageModel(nn.Module):
    """GPT-like: pre-norm causal self-attention, LM head tied to the token embedding."""

    def __init__(self, dim, depth, heads, vocab, max_len):
        super().__init__()
        self.embed = TokenEmbedding(vocab, dim, max_len)
        self.decoder = encoder_stack(dim, depth, heads)
        self.norm = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.embed.tokens.weight

    def forward(self, ids):
        mask = nn.Transformer.generate_square_subsequent_mask(ids.shape[1], device=ids.device)
        hidden = self.decoder(self.embed(ids), mask=mask, is_causal=True)
        return self.lm_head(self.norm(hidden))


class Seq2SeqTransformer(nn.Module):
    def __init__(self, dim, depth, heads, vocab, max_len):
        super().__init__()
        self.embed = TokenEmbedding(vocab, dim, max_len)
        with warnings.catch_warnings():  # "enable_nested_tensor is True, but ... norm_first"
            warnings.simplefilter("ignore", UserWarning)
            self.transformer = nn.Transformer(dim, heads, depth, depth, 4 * dim, dropout=0.1,
                                              batch_first=True, norm_first=True)
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, source, target):
        mask = nn.Transformer.generate_square_subsequent_mask(target.shape[1], device=target.device)
        hidden = self.transformer(self.embed(source), self.embed(target), tgt_mask=mask,
                                  tgt_is_causal=True)
        return self.lm_head(hidden)
