"""Strategy of events.k8s.io/v1 Event (stored with core/v1 Events)."""
