"""Packages of the `draemu` distribution.

The architecture's top-level folders (`store/`, `apiserver/`, ..., `kind-compat/`) are
sub-packages of `draemu`: `draemu/` holds a symbolic link to each (`draemu/store ->
../store`, `draemu/kindcompat -> ../kind-compat`), so every import name is a path in
the tree (`draemu.store.sqlite` is `draemu/store/sqlite.py`), a clone imports without
an install (`python -m draemu` from its root), and the top-level folders keep the
design card's names. Folders without an `__init__.py` are not packages; their files
that match DATA ship as package data of the package above them.
"""

from setuptools import find_packages, setup

DATA = ["*.json", "*.yaml", "*.yml", "*.proto", "*.txt", "*.md", "kind", "static/*"]

# find_packages follows the links (os.walk(followlinks=True)).
names = find_packages(include=["draemu", "draemu.*"])
setup(packages=names, package_data={name: DATA for name in names})
