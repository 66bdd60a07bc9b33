"""The scheduler configuration file (KubeSchedulerConfiguration v1): profiles, plugin
sets merged with the defaults, pluginConfig args, validation messages."""

from __future__ import annotations

import subprocess
import sys

import pytest
from sched_helpers import node, pod
from test_sched_e2e import claim, device_class, resource_slice

from draemu.features import FeatureGates
from draemu.scheduler.config import DEFAULT_PLUGINS, ConfigError, load, parse_duration
from draemu.scheduler.scheduler import Scheduler, num_feasible_nodes_to_find

pytestmark = pytest.mark.unit

HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def scheduler(text: str, *nodes: dict) -> Scheduler:
    s = Scheduler(None, config=load(HEAD + text))  # type: ignore[arg-type]
    for n in nodes:
        s.cache.set_node(n)
    return s


def names(s: Scheduler, profile: str = "default-scheduler") -> list[str]:
    return [p.name for p in s.profiles[profile].plugins]


def test_no_profiles_is_upstreams_default_profile():
    config = load(HEAD)
    assert [p.scheduler_name for p in config.profiles] == ["default-scheduler"]
    assert config.profiles[0].plugins == DEFAULT_PLUGINS
    assert names(scheduler("")) == [
        "SchedulingGates", "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity",
        "NodePorts", "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity",
        "DynamicResources", "DefaultPreemption", "NodeResourcesBalancedAllocation",
        "DefaultBinder"]


def test_most_allocated_packs_pods():
    text = """profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
  plugins:
    score: {disabled: [{name: NodeResourcesBalancedAllocation}]}
"""
    s = scheduler(text, node("a"), node("b"))
    s.cache.assume(pod("used", cpu="2", memory="2Gi"), "b")
    assert s.scheduling_cycle(pod("p", cpu="1", memory="1Gi")).node_name == "b"
    # The default profile spreads instead.
    d = scheduler("", node("a"), node("b"))
    d.cache.assume(pod("used", cpu="2", memory="2Gi"), "b")
    assert d.scheduling_cycle(pod("p", cpu="1", memory="1Gi")).node_name == "a"


def test_disabled_plugin_no_longer_filters():
    taint = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    text = "profiles:\n- plugins:\n    multiPoint: {disabled: [{name: TaintToleration}]}\n"
    s = scheduler(text, node("tainted", taints=taint))
    assert "TaintToleration" not in names(s)
    assert s.scheduling_cycle(pod("p")).node_name == "tainted"
    filter_off = "profiles:\n- plugins:\n    filter: {disabled: [{name: '*'}]}\n"
    assert scheduler(filter_off, node("tainted", taints=taint)).scheduling_cycle(
        pod("p")).node_name == "tainted"


def test_weights_are_reconfigured_in_place():
    text = ("profiles:\n- plugins:\n    multiPoint:\n      enabled: "
            "[{name: NodeAffinity, weight: 7}]\n")
    s = scheduler(text)
    assert names(s) == names(scheduler(""))  # same order
    assert s.profiles["default-scheduler"].weights["NodeAffinity"] == 7


def test_profiles_by_scheduler_name():
    text = """profiles:
- schedulerName: default-scheduler
- schedulerName: packer
  percentageOfNodesToScore: 30
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: RequestedToCapacityRatio
        resources: [{name: cpu, weight: 1}]
        requestedToCapacityRatio:
          shape: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]
"""
    s = scheduler(text, node("a"), node("b"))
    s.cache.assume(pod("used", cpu="2"), "b")
    packed = pod("p", cpu="1", spec={"schedulerName": "packer"})
    assert s.responsible(packed) and not s.responsible(
        pod("q", spec={"schedulerName": "someone-else"}))
    assert s.profiles["packer"].percentage_of_nodes_to_score == 30
    assert s.scheduling_cycle(packed).node_name == "b"
    assert s.scheduling_cycle(pod("d", cpu="1")).node_name == "a"


def test_dynamic_resources_filter_timeout():
    text = ("profiles:\n- pluginConfig:\n  - name: DynamicResources\n"
            "    args: {filterTimeout: 1m30s}\n")
    assert scheduler(text).framework.plugin("DynamicResources").filter_timeout == 90.0
    assert parse_duration("500ms") == 0.5 and parse_duration("0") == 0.0


def dra_scheduler(text: str, gates: FeatureGates | None = None) -> Scheduler:
    """A scheduler of the configuration with one node of one GPU, and a claim for it."""
    s = Scheduler(None, gates, config=load(HEAD + text))  # type: ignore[arg-type]
    s.cache.set_node(node("n1"))
    s.dra.set_class(device_class())
    s.dra.set_slice(resource_slice("n1", 1))
    s.dra.set_claim({**claim("c1"), "metadata": {"name": "c1", "namespace": "default",
                                                  "uid": "claim-c1"}})
    return s


def gpu_pod() -> dict:
    return pod("p1", claims=[{"name": "gpu", "resourceClaimName": "c1"}])


def dra_args(timeout: str) -> str:
    return ("profiles:\n- pluginConfig:\n  - name: DynamicResources\n"
            f"    args: {{filterTimeout: {timeout}}}\n")


def test_a_filter_timeout_of_zero_disables_the_limit():
    # As kube-scheduler: 0 means no timeout, not "time out at once".
    assert dra_scheduler(dra_args("0s")).scheduling_cycle(gpu_pod()).node_name == "n1"


def test_a_configured_filter_timeout_applies_only_with_its_gate():
    result = dra_scheduler(dra_args("1ns")).scheduling_cycle(gpu_pod())
    assert result.node_name is None
    assert "timed out trying to allocate devices" in result.message
    off = FeatureGates.parse("DRASchedulerFilterTimeout=false")
    assert dra_scheduler(dra_args("1ns"), off).scheduling_cycle(gpu_pod()).node_name == "n1"


def test_percentage_of_nodes_to_score():
    assert num_feasible_nodes_to_find(50, 10) == 50  # small clusters: all nodes
    assert num_feasible_nodes_to_find(1000, 30) == 300
    assert num_feasible_nodes_to_find(1000, 0) == 420  # adaptive: 50 - 1000/125 = 42%
    assert num_feasible_nodes_to_find(1000, 5) == 100  # at least 100
    assert load(HEAD + "percentageOfNodesToScore: 40").percentage_of_nodes_to_score == 40


@pytest.mark.parametrize(("text", "error"), [
    ("profiles:\n- plugins:\n    multiPoint: {enabled: [{name: Foo}]}\n",
     'profiles[0].plugins.multiPoint.enabled[0].name: Invalid value: "Foo": "Foo" does not '
     "exist"),
    ("profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: "
     "{type: Cheapest}}\n",
     'profiles[0].pluginConfig[0].args.scoringStrategy.type: Unsupported value: "Cheapest": '
     'supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'),
    ("profiles:\n- schedulerName: a\n- schedulerName: a\n",
     'profiles[1].schedulerName: Duplicate value: "a"'),
    ("profiles:\n- schedulerName: a\n- {}\n", "profiles[1].schedulerName: Required value"),
    ("percentageOfNodesToScore: 120\n",
     "percentageOfNodesToScore: Invalid value: 120: not in valid range [0-100]"),
    ("profiles:\n- pluginConfig:\n  - name: DynamicResources\n    args: {filterTimeout: -1s}\n",
     'profiles[0].pluginConfig[0].args.filterTimeout: Invalid value: "-1s": must be zero or '
     "positive duration"),
])
def test_validation(text, error):
    with pytest.raises(ConfigError) as e:
        load(HEAD + text)
    assert error in str(e.value)


def test_wrong_kind():
    with pytest.raises(ConfigError, match='no kind "Policy" is registered'):
        load("apiVersion: kubescheduler.config.k8s.io/v1\nkind: Policy\n")


def test_scheduler_command_refuses_a_bad_config(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(HEAD + "percentageOfNodesToScore: 101\n")
    result = subprocess.run([sys.executable, "-m", "draemu", "scheduler", "--config", str(bad)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "percentageOfNodesToScore: Invalid value: 101" in result.stderr
