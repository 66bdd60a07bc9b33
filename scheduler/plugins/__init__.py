"""The scheduler's plugins, one module each (DynamicResources a package), named as upstream
names them; `registry.py` lists them, one entry each (name, `new(args, handle)`, args
type, place and weight in the default profile)."""
