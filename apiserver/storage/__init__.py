"""The apiserver's side of the store: the watch cache (`watchcache`) that serves reads and
watches, and the store adapter (`storeadapter`: encoding, keys, compare-and-swap)."""
