"""Role-based access control, as kube-apiserver's RBAC authorizer and RBAC registry do it.

- `rules`: what a PolicyRule allows (`allows`), whether rules cover others (`covers`,
  escalation prevention), and upstream's compact rule descriptions.
- `authorizer`: `RBACAuthorizer`, the rules of a user's (Cluster)RoleBindings, read from
  the watch cache; also the rule resolver of SelfSubjectRulesReview and of escalation
  checks.
- `escalation`: who may write which roles and bindings (the `escalate` and `bind` verbs,
  or holding every permission granted).
- `bootstrappolicy`: the default roles and bindings of a cluster (`policy.json`, from
  upstream's bootstrap policy) and how an existing one is completed; written at start-up
  by `controlplane/bootstraproles.py`.
"""
