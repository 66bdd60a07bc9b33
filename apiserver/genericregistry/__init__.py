"""The generic registry store (`store.Store`): create, update, delete, get, list and watch
of every kind with its strategy's hooks and the admission chain, below the HTTP layer;
lists (`listing`), deletes' rules (`deletion`) and managed fields (`managedfields`)."""
