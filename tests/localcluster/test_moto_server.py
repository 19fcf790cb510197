"""moto's server answers the instance-type catalogue once from moto, then from memory; the rest as moto."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
import xmltodict
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.test import Client

from localcluster.moto_server import ConstantAnswers

HEADERS = {
    "Content-Type": "application/x-www-form-urlencoded; charset=utf-8",
    "Authorization": "AWS4-HMAC-SHA256 Credential=testing/20261207/us-west-2/ec2/aws4_request, "
    "SignedHeaders=host, Signature=0",
}
TYPES = "Action=DescribeInstanceTypes&Version=2016-11-15&InstanceType.1=g5g.xlarge&InstanceType.2=g5g.2xlarge"


class _Counted:
    """moto's own application, counting the requests that reach it."""

    def __init__(self) -> None:
        self.app, self.calls = DomainDispatcherApplication(create_backend_app), 0

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        self.calls += 1
        return self.app(environ, start_response)


@pytest.fixture(scope="module")
def moto() -> _Counted:
    return _Counted()


def _post(app: Any, body: str) -> tuple[int, dict[str, Any]]:
    response = Client(app).post("/", data=body, headers=HEADERS)
    return response.status_code, xmltodict.parse(response.data)


def _types(answer: dict[str, Any]) -> list[str]:
    items = answer["DescribeInstanceTypesResponse"]["instanceTypeSet"]["item"]
    return sorted(item["instanceType"] for item in items)


def test_the_catalogue_is_moto_s_answer_asked_of_moto_once(moto: _Counted) -> None:
    direct = _post(moto, TYPES)
    app, before = ConstantAnswers(moto), moto.calls
    first, again = _post(app, TYPES), _post(app, TYPES)
    assert moto.calls == before + 1
    assert first == again
    assert first[0] == direct[0] == 200
    assert _types(first[1]) == _types(direct[1]) == ["g5g.2xlarge", "g5g.xlarge"]


def test_an_error_is_not_kept(moto: _Counted) -> None:
    app, before = ConstantAnswers(moto), moto.calls
    bogus = "Action=DescribeInstanceTypes&Version=2016-11-15&InstanceType.1=g9z.huge"
    assert _post(app, bogus)[0] == _post(app, bogus)[0] == 400
    assert moto.calls == before + 2


def test_every_other_request_reaches_moto(moto: _Counted) -> None:
    app = ConstantAnswers(moto)
    run = "Action=RunInstances&Version=2016-11-15&ImageId=ami-12c6146b&MinCount=1&MaxCount=1"
    first, second = _post(app, run), _post(app, run)
    ids = [
        answer[1]["RunInstancesResponse"]["instancesSet"]["item"]["instanceId"] for answer in (first, second)
    ]
    assert ids[0] != ids[1]


def test_each_request_and_region_has_its_own_answer(moto: _Counted) -> None:
    app, before = ConstantAnswers(moto), moto.calls
    other = TYPES.replace("g5g.2xlarge", "g4dn.xlarge")
    assert _types(_post(app, TYPES)[1]) == ["g5g.2xlarge", "g5g.xlarge"]
    assert _types(_post(app, other)[1]) == ["g4dn.xlarge", "g5g.xlarge"]
    elsewhere = {**HEADERS, "Authorization": HEADERS["Authorization"].replace("us-west-2", "eu-west-1")}
    assert Client(app).post("/", data=TYPES, headers=elsewhere).status_code == 200
    assert moto.calls == before + 3
