"""The `meter` exercise: a token ledger — bill requests, months, retries, tenants, a stream."""
