"""The web view: nodes -> devices -> claims -> pods, live, with the reasons.

`draemu ui --kubeconfig F` serves it against any cluster (it is an API client like the
other components); `draemu up` serves it too and prints its address in the banner.
"""
