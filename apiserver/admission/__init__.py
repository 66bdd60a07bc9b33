"""Admission control after the strategies' validation: ValidatingAdmissionPolicies
(`policies`, CEL over the request, their status in `policystatus`), admission webhooks
(`webhooks`), the request matching they share (`matching`), NodeRestriction
(`noderestriction`) and ResourceQuota (`quotaadmission`)."""
