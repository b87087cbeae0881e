"""Broken: each layer's two RMSNorm weights swapped (post_attention_layernorm before attention,
input_layernorm before the MLP)."""

from _tp_base import export, mutate

export(mutate(
    'decode_norms_swapped',
    ('self.layers.append((full(p + "input_layernorm.weight"), attn,\n'
     '                                    full(p + "post_attention_layernorm.weight"), mlp))',
     'self.layers.append((full(p + "post_attention_layernorm.weight"), attn,\n'
     '                                    full(p + "input_layernorm.weight"), mlp))'),
), globals())
