"""CustomResourceDefinitions served for real: the structural schema of a custom resource
(`schema`: pruning, defaulting, OpenAPI v3 validation), its CEL rules
(`celrules`), CRD validation (`crdvalidation`), the strategy of a custom resource built
from its CRD (`customresource`), printer-column paths (`jsonpath`) and `serving`, which
follows CRDs in the watch cache to serve, rename and stop serving their resources on
every apiserver of a store, and to set their conditions and clean up after them."""
