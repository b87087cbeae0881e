# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: the split stores acc / l (normalised), and an empty split 0 / 0 = NaN."""

from _da_base import export, mutate

export(mutate(
    'split_normalised_acc',
    ('    tl.store(acc_ptr + b * acc_stride_b + h * acc_stride_h + s_id * acc_stride_s + d, acc)\n', '    tl.store(acc_ptr + b * acc_stride_b + h * acc_stride_h + s_id * acc_stride_s + d, acc / l)\n'),
), globals())
