"""Pod Security Admission, as kube-apiserver's PodSecurity plugin: the Pod Security
Standards' checks (`checks`), which of them a level at a version runs (`evaluator`),
a namespace's policy from its `pod-security.kubernetes.io/*` labels (`levels`), and
the plugin's answers for pods, pod controllers and namespaces (`decisions`)."""
