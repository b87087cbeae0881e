"""Broken: cancel() of a queued request marks it dead and leaves it in the queue (lazy
deletion), skipped when admitted; but the size trigger counts the queue's length, so a dead
request still counts toward max_batch_size and a batch one live request short goes early."""

from _engine_base import mutate

Engine = mutate(
    "cancel_leaves_tombstone",
    ("        for seq in self.waiting:\n"
     "            if seq.rid == request_id:\n"
     "                self.waiting.remove(seq)\n",
     "        for seq in self.waiting:\n"
     "            if seq.rid == request_id and not getattr(seq, 'dead', False):\n"
     "                seq.dead = True\n"),
    ("            self.running.append(self.waiting.popleft())\n            held += need\n",
     "            seq = self.waiting.popleft()\n"
     "            if getattr(seq, 'dead', False):\n"
     "                continue\n"
     "            self.running.append(seq)\n            held += need\n"),
).Engine
