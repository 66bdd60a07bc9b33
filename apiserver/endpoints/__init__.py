"""The HTTP handlers of the API: a request's parts (`requestinfo`) and scope (`scope`),
reads, writes, patches, deletes, watches, subresources, discovery, the OpenAPI documents
Tables, TokenRequest and the access and token reviews."""
