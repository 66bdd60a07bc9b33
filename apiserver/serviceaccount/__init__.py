"""ServiceAccount tokens, as kube-apiserver issues and checks them.

- `signer`: the signing key (ECDSA P-256, `<data-dir>/pki/sa.key`, kept across restarts)
  and JSON Web Tokens (ES256) in and out.
- `tokenrequest`: `serviceaccounts/<name>/token` (TokenRequest, `kubectl create token`):
  bound tokens with audiences, expiry and a Pod, Secret or Node binding.
- `authenticator`: a bearer JWT to a user — signature, issuer, audience, expiry, then the
  objects it is bound to must still exist with the same uid.
"""
