"""scheduling.k8s.io kinds: PriorityClass (v1), Workload and PodGroup (v1beta1, v1alpha3)."""
