"""Broken: cancel() of a queued request marks it dead and leaves it in the queue (lazy
deletion): dead requests at the front are dropped before the size-or-wait test (so a cancelled
head leaves no deadline behind) and dead ones are skipped when admitted, but the size trigger
counts the queue's length, so a dead request behind the head still counts toward
max_batch_size and a batch one live request short goes early."""

from _engine_base import mutate

Engine = mutate(
    "cancel_leaves_tombstone",
    ("        for seq in self.waiting:\n"
     "            if seq.rid == request_id:\n"
     "                self.waiting.remove(seq)\n",
     "        for seq in self.waiting:\n"
     "            if seq.rid == request_id and not getattr(seq, 'dead', False):\n"
     "                seq.dead = True\n"),
    ("        return bool(self.waiting) and (len(self.waiting) >= self.max_batch_size\n",
     "        while self.waiting and getattr(self.waiting[0], 'dead', False):\n"
     "            self.waiting.popleft()\n"
     "        return bool(self.waiting) and (len(self.waiting) >= self.max_batch_size\n"),
    ("            self.running.append(self.waiting.popleft())\n            held += need\n",
     "            seq = self.waiting.popleft()\n"
     "            if getattr(seq, 'dead', False):\n"
     "                continue\n"
     "            self.running.append(seq)\n            held += need\n"),
).Engine
