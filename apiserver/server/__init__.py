"""The server: the apiserver's lifecycle (`lifecycle.APIServer`: store, watch cache, PKI,
HTTP(S) site), the aiohttp application and its middlewares (`app`), health checks,
metrics, the audit log, protocol errors answered with a Status and the GC freezer."""
