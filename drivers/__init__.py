"""DRA drivers: the Python driver SDK (`draemu.drivers.sdk`) and built-in drivers."""

from draemu import check_import_name

check_import_name(__name__)
