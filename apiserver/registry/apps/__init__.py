"""Strategies of the apps/v1 kinds (Deployment, ReplicaSet)."""
