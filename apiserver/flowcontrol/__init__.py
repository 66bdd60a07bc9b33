"""API Priority and Fairness: requests classified by FlowSchema into priority levels,
each with its seats and fair queues (`controller.py`, `matching.py`, `queueset.py`,
`workestimate.py`), and the bootstrap configuration (`bootstrap.py`)."""
