"""pods/proxy and services/proxy requests as kube-apiserver reads them: the subresource
is `proxy` whatever path follows it, and the name carries an optional scheme and port."""

import pytest

from draemu.api.errors import StatusError
from draemu.apiserver.endpoints.proxy import split_name
from draemu.apiserver.endpoints.requestinfo import parse

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("path", [
    "/api/v1/namespaces/ns/pods/web:8080/proxy",
    "/api/v1/namespaces/ns/pods/web:8080/proxy/",
    "/api/v1/namespaces/ns/pods/web:8080/proxy/a/b/c"])
def test_a_proxy_path_is_the_proxy_subresource(path):
    info = parse("GET", path, False)
    assert (info.resource, info.name, info.subresource, info.verb) == (
        "pods", "web:8080", "proxy", "get")


def test_other_deeper_paths_stay_unmatchable():
    assert parse("GET", "/api/v1/namespaces/ns/pods/web/log/more", False).subresource == \
        "log/more"


@pytest.mark.parametrize(("text", "parts"), [
    ("web", ("", "web", "")), ("web:8080", ("", "web", "8080")),
    ("https:web:metrics", ("https", "web", "metrics")), ("web:", ("", "web", ""))])
def test_names_carry_a_scheme_and_a_port(text, parts):
    assert split_name(text) == parts


def test_a_name_with_too_many_parts_is_a_bad_request():
    with pytest.raises(StatusError):
        split_name("a:b:c:d")
