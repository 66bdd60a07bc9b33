"""Strategies of apiextensions.k8s.io/v1 (CustomResourceDefinition)."""
