"""The kubelet's DRA manager: plugins, claim cache and checkpoint, prepare and unprepare."""
