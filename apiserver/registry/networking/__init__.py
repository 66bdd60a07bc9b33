"""networking.k8s.io/v1: ServiceCIDR, IPAddress, Ingress, IngressClass, NetworkPolicy."""
