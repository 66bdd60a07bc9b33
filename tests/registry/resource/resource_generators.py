"""Hypothesis strategies for v1 ResourceClaims and ResourceSlices using most fields."""

from __future__ import annotations

from hypothesis import strategies as st

names = st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True)
exact = st.fixed_dictionaries({"deviceClassName": names}, optional={
    "allocationMode": st.sampled_from(["ExactCount", "All"]),
    "count": st.integers(1, 5),
    "adminAccess": st.booleans(),
    "selectors": st.lists(st.just({"cel": {"expression": "true"}}), max_size=2),
    "tolerations": st.lists(st.fixed_dictionaries({"key": names}, optional={
        "operator": st.sampled_from(["Equal", "Exists"])}), max_size=2),
    "capacity": st.just({"requests": {"memory": "1Gi"}})})
# Subrequests have the fields of `exactly` except adminAccess.
subrequest = st.builds(lambda name, e: {"name": name, **{k: v for k, v in e.items()
                                                          if k != "adminAccess"}}, names, exact)
request = st.one_of(
    st.builds(lambda name, e: {"name": name, "exactly": e}, names, exact),
    st.builds(lambda name, subs: {"name": name, "firstAvailable": subs}, names,
              st.lists(subrequest, min_size=1, max_size=3)))
claims = st.builds(lambda reqs: {"kind": "ResourceClaim", "apiVersion": "resource.k8s.io/v1",
                                 "spec": {"devices": {"requests": reqs}}},
                   st.lists(request, max_size=4))
attribute = st.one_of(st.builds(lambda v: {"int": v}, st.integers(-5, 5)),
                      st.builds(lambda v: {"string": v}, names),
                      st.builds(lambda v: {"strings": v}, st.lists(names, min_size=1)))
device = st.fixed_dictionaries({"name": names}, optional={
    "attributes": st.dictionaries(names, attribute, max_size=3),
    "capacity": st.dictionaries(names, st.just({"value": "1Gi"}), max_size=2),
    "allowMultipleAllocations": st.booleans(),
    "taints": st.lists(st.just({"key": "k", "effect": "NoSchedule"}), max_size=1)})
node = st.sampled_from([{"nodeName": "n1"}, {"allNodes": True}, {"perDeviceNodeSelection": True}])
slices = st.builds(lambda n, devs: {"kind": "ResourceSlice", "apiVersion": "resource.k8s.io/v1",
                                    "spec": {"driver": "d", "pool": {"name": "p", "generation": 0,
                                                                     "resourceSliceCount": 1},
                                             **n, "devices": devs}},
                   node, st.lists(device, max_size=4))
