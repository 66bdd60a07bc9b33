"""What goes over the wire, below every other part of the apiserver: request and response
codecs (JSON, YAML under limits, protobuf), Go's timestamp forms, selector query
parameters, JSON copies and the patch library."""
