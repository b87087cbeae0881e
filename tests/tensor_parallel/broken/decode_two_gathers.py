"""Broken: a 'vocabulary-parallel' head that all-gathers the logits and then all-gathers every
rank's argmax as well: two all-gathers per decode step where one (or none) is allowed."""

from _tp_base import export, mutate

export(mutate(
    'decode_two_gathers',
    ('        logits = rms_norm(h[-1], self.norm, eps) @ self.head.T\n',
     '        logits = rms_norm(h[-1], self.norm, eps) @ self.head.T\n'
     '        group = self.layers[0][1].group\n'
     '        world = dist.get_world_size(group)\n'
     '        parts = [torch.empty_like(logits) for _ in range(world)]\n'
     '        dist.all_gather(parts, logits.contiguous(), group=group)\n'
     '        best = [torch.zeros(1, dtype=torch.long) for _ in range(world)]\n'
     '        dist.all_gather(best, logits.argmax().reshape(1), group=group)\n'),
), globals())
