"""discovery.k8s.io/v1 EndpointSlice."""
