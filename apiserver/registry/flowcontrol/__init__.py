"""flowcontrol.apiserver.k8s.io/v1 FlowSchema and PriorityLevelConfiguration (API
Priority and Fairness; the classifier and queues are `apiserver/flowcontrol/`)."""
