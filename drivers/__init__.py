"""DRA drivers: the Python driver SDK (`draemu.drivers.sdk`) and built-in drivers."""
