"""Strategy of coordination.k8s.io/v1 Lease."""
