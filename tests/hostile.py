"""Learner files shared by the tests that check what a grading leaves behind."""

# A kv-bytes solution that forks a detached grandchild (its own session, its parent gone: the
# hardest process for a grader to find), which writes MARKER beside the file once it runs and
# then sleeps forever, while the solution itself loops forever.
DETACHED_GRANDCHILD_LOOP = """
import os, time
def kv_bytes_per_token(config, dtype, tensor_parallel=1):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            open(os.path.join(os.path.dirname(__file__), 'running'), 'w').write('x')
            while True:
                time.sleep(0.1)
        os._exit(0)
    while True:
        pass
"""
MARKER = "running"
