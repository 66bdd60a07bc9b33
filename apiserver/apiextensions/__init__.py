"""CustomResourceDefinitions' schemas: the structural schema of a custom resource
(`structural`: pruning, defaulting, OpenAPI v3 validation), its CEL rules (`celrules`), CRD
validation (`crdvalidation`) and printer-column paths (`jsonpath`). The strategies of
CRDs and of custom resources are in `registry/apiextensions/`; the watch-cache listener
that serves, renames and stops serving custom resources on every apiserver of a store is
`controlplane/crdserving.py`."""
