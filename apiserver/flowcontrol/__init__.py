"""API Priority and Fairness: requests classified by FlowSchema into priority levels,
each with its seats and fair queues (`controller.py`, `classifier.py`, `queueset.py`,
`workestimate.py`). Upstream's bootstrap configuration is
`registry/flowcontrol/bootstrapconfig.py` (the strategies check the mandatory objects)."""
