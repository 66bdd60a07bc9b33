"""The server: the apiserver's lifecycle (`lifecycle.APIServer`: store, watch cache, PKI,
listeners), its options (`options`), the frozen context its handlers share and how it is
wired (`context`), the aiohttp application and its middlewares (`app.create_app`), health
checks, metrics, the audit log, protocol errors answered with a Status and the GC
freezer."""
