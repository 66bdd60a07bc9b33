"""Strategies of the core/v1 kinds (Namespace, Node, Pod, Event, ConfigMap, Secret,
ServiceAccount) and the pod-spec rules that apps/v1 and batch/v1 templates share."""
