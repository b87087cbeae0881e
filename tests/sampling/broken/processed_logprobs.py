"""Broken: reports log-probabilities of the processed row, not the model's raw ones."""

from _sampling_base import export, mutate

export(mutate(
    'processed_logprobs',
    ('        logp = raw.float().log_softmax(dim=-1)\n',
     '        logp = process_batch(raw, [requests[i] for i in live], [prompts[i] for i in live],\n'
     '                             [outs[i] for i in live]).log_softmax(dim=-1)\n'),
), globals())
