"""Controllers: reconcile loops over informers and work queues, run by `manager.py`."""
