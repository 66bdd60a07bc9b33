"""The apiserver: an aiohttp application serving the Kubernetes API over the store."""
