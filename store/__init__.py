"""The revisioned key-value store (etcd semantics) behind the apiserver."""
