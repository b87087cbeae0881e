"""The `kv-bytes` exercise: KV-cache bytes per token, then capacity planning."""
