"""The apiserver: an aiohttp application serving the Kubernetes API over the store."""

from draemu import check_import_name

check_import_name(__name__)
