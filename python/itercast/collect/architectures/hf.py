"""HF transformers models built from configuration classes with random weights.

Only used when transformers imports; nothing here downloads anything.
"""

from __future__ import annotations

from torch import nn


class LogitsOnly(nn.Module):
    """Calls an HF model with positional inputs mapped to keywords and returns its logits."""

    def __init__(self, model, input_names):
        super().__init__()
        self.model = model
        self.input_names = input_names

    def forward(self, *inputs):
        return self.model(**dict(zip(self.input_names, inputs))).logits


def bert_classifier(vocab, num_classes, max_len, dim, depth, heads):
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(vocab_size=vocab, hidden_size=dim, num_hidden_layers=depth,
                        num_attention_heads=heads, intermediate_size=4 * dim,
                        max_position_embeddings=max(512, max_len), num_labels=num_classes)
    return LogitsOnly(BertForSequenceClassification(config), ("input_ids",))


def gpt2_lm(vocab, max_len, dim, depth, heads):
    from transformers import GPT2Config, GPT2LMHeadModel

    # GPT-2's default special-token ids (50256) lie outside the small vocabulary.
    config = GPT2Config(vocab_size=vocab, n_positions=max(512, max_len), n_embd=dim,
                        n_layer=depth, n_head=heads, bos_token_id=0, eos_token_id=0)
    return LogitsOnly(GPT2LMHeadModel(config), ("input_ids",))


def llama_lm(vocab, max_len, dim, depth, heads):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=vocab, hidden_size=dim, intermediate_size=dim * 8 // 3,
                         num_hidden_layers=depth, num_attention_heads=heads,
                         num_key_value_heads=max(1, heads // 2),
                         max_position_embeddings=max(512, max_len))
    return LogitsOnly(LlamaForCausalLM(config), ("input_ids",))


def t5_seq2seq(vocab, max_len, dim, depth, heads):
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(vocab_size=vocab, d_model=dim, d_kv=dim // heads, d_ff=4 * dim,
                      num_layers=depth, num_decoder_layers=depth, num_heads=heads)
    return LogitsOnly(T5ForConditionalGeneration(config), ("input_ids", "decoder_input_ids"))


def vit_classifier(num_classes, image_size, dim, depth, heads, patch):
    from transformers import ViTConfig, ViTForImageClassification

    config = ViTConfig(image_size=image_size, patch_size=patch, hidden_size=dim,
                       num_hidden_layers=depth, num_attention_heads=heads,
                       intermediate_size=4 * dim, num_labels=num_classes)
    return LogitsOnly(ViTForImageClassification(config), ("pixel_values",))
