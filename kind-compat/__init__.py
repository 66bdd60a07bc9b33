"""kind-compat: a `kind` command that runs kind-style scripts against draemu clusters,
with no container engine. Each "kind cluster" is a background `draemu up`."""

from draemu import check_import_name

check_import_name(__name__)
