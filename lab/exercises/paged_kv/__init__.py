"""The `paged-kv` exercise: a KV-cache block manager, copy-on-write forks, prefix caching and a
paged-attention gather on the shipped target."""
