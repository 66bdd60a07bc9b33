"""networking.k8s.io/v1: ServiceCIDR and IPAddress."""
