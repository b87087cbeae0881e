"""Broken: every row of a batch is divided by row 0's temperature (a leaked parameter)."""

from _sampling_base import export, mutate

export(mutate(
    'batch_row0_temperature',
    ('temp = torch.tensor([_param(params[r], "temperature") for r in rows],',
     'temp = torch.tensor([_param(params[0], "temperature") or 1.0 for r in rows],'),
), globals())
