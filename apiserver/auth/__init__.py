"""Who sent a request and what they may do: authentication (certificates, static tokens;
ServiceAccount JWTs in `serviceaccounttokens`), authorization (the Node authorizer and
RBAC in `rbac/`, joined in `authorization`), impersonation."""
