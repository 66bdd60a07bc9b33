"""What kube-apiserver's own controllers and post-start hooks keep: start-up objects
(`systemobjects`: system namespaces and PriorityClasses, the `kubernetes` Service, API
Priority and Fairness configuration, ...), the RBAC bootstrap policy (`bootstraproles`),
the IPAddress objects of Services' cluster IPs (`serviceips`) and the custom resources of
CustomResourceDefinitions (`crdserving`)."""
