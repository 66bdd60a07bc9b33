"""The garbage collector's foreground deletion against a real apiserver, as the two
conformance specs use it: a dependent that has another owner still there survives (it
only loses its reference to the owner being deleted), and a cycle of blocking owner
references does not hold the deletion up."""

import pytest

from draemu.cmd.testing.e2e import eventually, gone

pytestmark = [pytest.mark.slow, pytest.mark.unit]


def ref(owner, block=True):
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": block}


async def make(cluster, name, *refs):
    meta = {"name": name, "namespace": "default"}
    if refs:
        meta["ownerReferences"] = list(refs)
    return await cluster.create("v1", "configmaps", {"metadata": meta})


async def test_dependents_with_another_owner_keep_it_and_lose_the_deleted_one(cluster):
    doomed = await make(cluster, "doomed")
    stays = await make(cluster, "stays")
    shared = [await make(cluster, f"shared{i}", ref(doomed),
                         {**ref(stays, block=False), "controller": False})
              for i in range(3)]
    only = [await make(cluster, f"only{i}", ref(doomed)) for i in range(3)]
    await cluster.delete("v1", "configmaps", "doomed", "default",
                         propagation_policy="Foreground")
    await eventually(lambda: gone(cluster, "v1", "configmaps", "doomed", "default"))
    for cm in only:
        assert await gone(cluster, "v1", "configmaps", cm["metadata"]["name"], "default")
    for cm in shared:
        kept = await cluster.get("v1", "configmaps", cm["metadata"]["name"], "default")
        assert not kept["metadata"].get("deletionTimestamp")
        assert [r["uid"] for r in kept["metadata"]["ownerReferences"]] == [
            stays["metadata"]["uid"]]


async def test_a_cycle_of_blocking_owners_is_deleted(cluster):
    one, two, three = [await make(cluster, name) for name in ("one", "two", "three")]
    # one is owned by three, two by one, three by two.
    for cm, owner in ((one, three), (two, one), (three, two)):
        await cluster.patch("v1", "configmaps", cm["metadata"]["name"],
                            {"metadata": {"ownerReferences": [ref(owner)]}},
                            namespace="default")
    await cluster.delete("v1", "configmaps", "one", "default",
                         propagation_policy="Foreground",
                         preconditions={"uid": one["metadata"]["uid"]})
    for name in ("one", "two", "three"):
        await eventually(lambda n=name: gone(cluster, "v1", "configmaps", n, "default"))
