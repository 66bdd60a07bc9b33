"""The Kubernetes CEL environments (CRD rules, admission policies): declared variables
over decoded JSON, the libraries policies and rules use (strings, lists, regex, URL,
IP/CIDR, quantity, optionals, the format library), undeclared names refused."""

from __future__ import annotations

from typing import Any

import pytest

from draemu.cel.errors import CELCompileError, CELRuntimeError
from draemu.cel.kubernetes import compile_kubernetes

pytestmark = pytest.mark.unit

POLICY = ("object", "oldObject", "request", "params", "variables")


def run(expression: str, names: tuple[str, ...] = ("self",), **values: Any) -> Any:
    return compile_kubernetes(expression, names).evaluate(values)


@pytest.mark.parametrize(("expression", "expected"), [
    ("self.replicas <= self.max", False),
    ("has(self.image) && !has(self.tag)", True),
    ("self.?tag.orValue('latest') == 'latest'", True),
    ("self.ports.all(p, p.port > 0 && p.port < 65536)", True),
    ("self.ports.exists_one(p, p.name == 'http')", True),
    ("self.ports.map(p, p.port).sum() == 8523", True),
    ("self.image.matches('^[a-z]+(:[0-9.]+)?$')", True),
    ("self.image.split(':')[0].upperAscii()", "NGINX"),
    ("url(self.endpoint).getHost()", "api.example.com"),
    ("isCIDR(self.cidr) && cidr(self.cidr).containsIP(ip('10.1.2.3'))", True),
    ("quantity(self.memory).isGreaterThan(quantity('1Gi'))", True),
    ("format.dns1123Label().validate(self.image).hasValue()", True),
    ("format.named('dns1123Subdomain').value().validate('ok.example.com')", None),
])
def test_rule_expressions(expression: str, expected: Any) -> None:
    obj = {"replicas": 5, "max": 3, "image": "nginx:1.27",
           "ports": [{"name": "http", "port": 80}, {"name": "alt", "port": 8443}],
           "endpoint": "https://api.example.com/v1", "cidr": "10.0.0.0/8",
           "memory": "2Gi"}
    result = run(expression, self=obj)
    if expected is None:
        assert not result.present
    else:
        assert result == expected


def test_policy_variables_and_optional_map_index() -> None:
    expression = ("request.userInfo.extra[?'authentication.kubernetes.io/node-name'][0]"
                  ".orValue('') == object.spec.nodeName")
    request = {"userInfo": {"username": "u", "extra": {
        "authentication.kubernetes.io/node-name": ["n1"]}}}
    assert run(expression, POLICY, object={"spec": {"nodeName": "n1"}}, request=request)
    assert not run(expression, POLICY, object={"spec": {"nodeName": "n2"}},
                   request={"userInfo": {"extra": {}}})


def test_format_library_reports_apimachinery_messages() -> None:
    result = run("format.dns1123Label().validate(self)", self="Bad_Name")
    assert result.present
    assert result.value[0].startswith("a lowercase RFC 1123 label must consist of lower case "
                                      "alphanumeric characters or '-'")
    assert not run("format.named('unknown').hasValue()")


def test_undeclared_names_do_not_compile() -> None:
    with pytest.raises(CELCompileError, match="undeclared reference to 'device'"):
        compile_kubernetes("device.driver == 'x'", POLICY)
    with pytest.raises(CELCompileError, match="undeclared reference to 'authorizer'"):
        compile_kubernetes("authorizer.path == '/healthz'", POLICY)


def test_missing_fields_fail_at_run_time() -> None:
    with pytest.raises(CELRuntimeError, match="no such key: replicas"):
        run("self.replicas > 1", self={})


def test_crd_rules_name_escaped_properties() -> None:
    """A property named as a CEL keyword, or with '-', '.', '/' or '__' in it, is a field
    of its escaped name (`__namespace__`, `a__dash__b`), as upstream's escaping rules."""
    from draemu.cel.decltypes import schema_decl_type
    from draemu.cel.kubernetes import RuleTypes

    root = schema_decl_type({"type": "object", "properties": {
        "namespace": {"type": "string"}, "a-b": {"type": "integer"},
        "x.y/z": {"type": "integer"}, "p__q": {"type": "integer"}}}, is_root=False)
    assert root is not None
    program = compile_kubernetes(
        "has(self.__namespace__) && self.__namespace__ == 'ns' && self.a__dash__b == 1 && "
        "self.x__dot__y__slash__z == 2 && self.p__underscores__q == 3",
        ("self", "oldSelf"), types=RuleTypes(root))
    assert program.evaluate({"self": {"namespace": "ns", "a-b": 1, "x.y/z": 2, "p__q": 3}})
