"""apiregistration.k8s.io/v1 APIService."""
