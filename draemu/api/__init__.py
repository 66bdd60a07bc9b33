"""Small pieces of the Kubernetes API shared by every component: field errors and
Status objects, names, quantities, selectors and object metadata helpers."""
