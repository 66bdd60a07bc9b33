"""Admission control after the strategies' validation: ValidatingAdmissionPolicies
(`policies`, CEL over the request) and the request matching they and webhooks share
(`matching`)."""
