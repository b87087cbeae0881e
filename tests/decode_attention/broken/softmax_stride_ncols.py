"""Broken: rows addressed n_cols apart instead of x's row stride."""

from _da_base import export, mutate

export(mutate(
    'softmax_stride_ncols',
    ('x_ptr + row * x_row_stride + cols', 'x_ptr + row * n_cols + cols'),
), globals())
