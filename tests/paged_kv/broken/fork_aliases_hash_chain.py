"""Broken: the manager keeps each sequence's chain of block hashes, and fork hands the child the
parent's chain list itself: a block the child fills extends the parent's chain too, so the
parent's next full block is cached under a hash that is not its prefix's."""

from _paged_base import export, mutate

export(mutate(
    'fork_aliases_hash_chain',
    ('        parent: int | None = None\n'
     '        for i in range(len(tokens) // self.block_size):\n'
     '            parent = self._hash(parent, tokens, i)\n'
     '            if i >= len(hits):\n'
     '                self._register(table[i], parent)\n',
     '        parent: int | None = None\n'
     '        chain = self.__dict__.setdefault("chain", {}).setdefault(seq_id, [])\n'
     '        chain.clear()\n'
     '        for i in range(len(tokens) // self.block_size):\n'
     '            parent = self._hash(parent, tokens, i)\n'
     '            chain.append(parent)\n'
     '            if i >= len(hits):\n'
     '                self._register(table[i], parent)\n'),
    ('            parent: int | None = None\n'
     '            for i in range(len(tokens) // self.block_size):\n'
     '                parent = self._hash(parent, tokens, i)\n'
     '            self._register(block, parent)\n',
     '            chain = self.__dict__.setdefault("chain", {}).setdefault(seq_id, [])\n'
     '            parent = hash((chain[-1] if chain else None, tuple(tokens[-self.block_size:])))\n'
     '            chain.append(parent)\n'
     '            self._register(block, parent)\n'),
    ('        self.tables[child_id] = list(table)\n',
     '        self.tables[child_id] = list(table)\n'
     '        chains = self.__dict__.setdefault("chain", {})\n'
     '        chains[child_id] = chains.setdefault(parent_id, [])\n'),
    ('        del self.tables[seq_id], self.tokens[seq_id]\n',
     '        del self.tables[seq_id], self.tokens[seq_id]\n'
     '        self.__dict__.setdefault("chain", {}).pop(seq_id, None)\n'),
), globals())
