"""decode-attention: Triton kernels for decode attention, graded by the interpreter on a CPU."""
