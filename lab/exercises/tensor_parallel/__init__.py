"""The `tensor-parallel` exercise: column- and row-parallel linears, a TP MLP and attention with
heads split across ranks, then greedy decoding of the shipped target at W = 2, on
torch.distributed with one process per rank."""
