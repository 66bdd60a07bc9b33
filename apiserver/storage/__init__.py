"""The apiserver's side of the store: the watch cache (`watchcache`) that serves reads and
watches, the store adapter (`storeadapter`: encoding, keys, compare-and-swap) and the
base of the controllers that follow the watch cache (`cachelistener`)."""
