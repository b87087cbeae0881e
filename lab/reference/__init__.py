"""Reference implementations. Imported only by the grader process, never by a learner's sandbox."""
