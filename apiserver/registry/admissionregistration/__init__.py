"""Strategies of admissionregistration.k8s.io/v1: ValidatingAdmissionPolicy and its
Binding (enforced by `draemu.apiserver.admission`), Validating- and
MutatingWebhookConfiguration."""
