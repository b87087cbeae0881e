"""Broken: attends to context_lens + 1 tokens (t <= context_len)."""

from _paged_base import export, mutate

export(mutate(
    'gather_context_plus_one',
    ('    valid = torch.arange(width, device=q.device)[None, :] < context_lens[:, None]',
     '    valid = torch.arange(width, device=q.device)[None, :] <= context_lens[:, None]'),
), globals())
