"""Controllers: reconcile loops over informers and work queues, run by `manager.py`."""

from draemu import check_import_name

check_import_name(__name__)
