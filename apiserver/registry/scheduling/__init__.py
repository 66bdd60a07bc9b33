"""scheduling.k8s.io/v1 PriorityClass."""
