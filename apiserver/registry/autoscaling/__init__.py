"""autoscaling/v2 HorizontalPodAutoscaler."""
