"""A separate process that answers cards, for the crash and concurrency tests.

usage: worker.py DB block|loop|answer PREFIX COUNT
  block   answer PREFIX0 and stop inside the transaction (prints 'inside'), wait to be killed
  loop    answer PREFIX0..PREFIX{COUNT-1} in a loop forever (prints 'started'), until killed
  answer  answer PREFIX0..PREFIX{COUNT-1} once each, plus 'shared' in cram mode, then exit
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from scheduler.records import Mode
from scheduler.store import Store


class BlockingStore(Store):
    def _inside_answer_transaction(self) -> None:
        print("inside", flush=True)
        time.sleep(120)


def main() -> None:
    db, action, prefix, count = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    cls = BlockingStore if action == "block" else Store
    store = cls.open(db, auto_backup=False)
    if action == "block":
        store.answer(f"{prefix}0", 5, correct=True, answer_text="x", response_ms=1)
        return
    if action == "loop":
        print("started", flush=True)
        i = 0
        while True:
            mode: Mode = "review" if store.card(f"{prefix}{i % count}").is_new else "redrill"
            store.answer(f"{prefix}{i % count}", i % 6, correct=True, answer_text="x" * 200,
                         response_ms=i, params={"i": i}, mode=mode)
            i += 1
    for i in range(count):
        store.answer(f"{prefix}{i}", 4, correct=True, answer_text="x", response_ms=i)
        store.answer("shared", 3, correct=True, answer_text=prefix, response_ms=i, mode="cram")
    store.close()


if __name__ == "__main__":
    main()
