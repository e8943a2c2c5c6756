"""``ferry doctor``'s decisions on what AWS describes: the VPC, and the metastores' ports."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from ferry.commands.doctor_checks import (
    FAILED,
    OK,
    POLLER_SERVICES,
    VPC_SERVICES,
    check_routes,
    check_security_groups,
    check_subnets,
    metastore_ports,
)
from ferry.commands.doctor_spark import spark_code_of
from infra.settings import Network

REGION = "eu-west-1"


def test_metastore_ports_come_from_the_uris():
    assert metastore_ports("thrift://a:9083,thrift://b:10000") == [9083, 10000]
    assert metastore_ports("thrift://a") == [9083]
    assert metastore_ports(None) == []


@pytest.fixture
def vpc():
    with mock_aws():
        ec2 = boto3.client("ec2", region_name=REGION)
        vpc_id = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        subnet = ec2.create_subnet(
            VpcId=vpc_id, CidrBlock="10.0.1.0/24", AvailabilityZone=f"{REGION}a"
        )["Subnet"]["SubnetId"]
        table = ec2.create_route_table(VpcId=vpc_id)["RouteTable"]["RouteTableId"]
        ec2.associate_route_table(RouteTableId=table, SubnetId=subnet)
        group = ec2.create_security_group(GroupName="ferry", Description="f", VpcId=vpc_id)[
            "GroupId"
        ]
        network = Network(
            vpc_id=vpc_id,
            availability_zones=[f"{REGION}a"],
            subnet_ids=[subnet],
            security_group_ids=[group],
        )
        yield ec2, network, table, group


def test_services_unreachable_without_endpoints_or_a_nat_are_named(vpc):
    ec2, network, _, _ = vpc
    finding = check_routes(ec2, network, REGION)
    assert finding.status == FAILED
    assert "no VPC endpoint and no NAT route for" in finding.detail
    for service in ("dynamodb", "emr-serverless", "glue", "s3", "secretsmanager", "sns", "sts"):
        assert service in finding.detail


def test_endpoints_for_every_service_make_them_reachable(vpc):
    ec2, network, table, _ = vpc
    for service in ("s3", "dynamodb"):
        ec2.create_vpc_endpoint(
            VpcId=network.vpc_id,
            ServiceName=f"com.amazonaws.{REGION}.{service}",
            VpcEndpointType="Gateway",
            RouteTableIds=[table],
        )
    for service in ("glue", "sns", "secretsmanager", "sts", "emr-serverless"):
        ec2.create_vpc_endpoint(
            VpcId=network.vpc_id,
            ServiceName=f"com.amazonaws.{REGION}.{service}",
            VpcEndpointType="Interface",
            SubnetIds=network.subnet_ids,
        )
    finding = check_routes(ec2, network, REGION)
    assert finding.status == FAILED and finding.detail.endswith("for logs")
    ec2.create_vpc_endpoint(
        VpcId=network.vpc_id,
        ServiceName=f"com.amazonaws.{REGION}.logs",
        VpcEndpointType="Interface",
        SubnetIds=network.subnet_ids,
    )
    assert check_routes(ec2, network, REGION).status == OK
    # A Hive notification log's poller starts change windows from the VPC: Step Functions too.
    with_poller = check_routes(ec2, network, REGION, (*VPC_SERVICES, *POLLER_SERVICES))
    assert with_poller.status == FAILED and with_poller.detail.endswith("for states")


def test_a_default_route_to_a_nat_reaches_every_service(vpc):
    ec2, network, table, _ = vpc
    public = ec2.create_subnet(VpcId=network.vpc_id, CidrBlock="10.0.2.0/24")["Subnet"]["SubnetId"]
    allocation = ec2.allocate_address(Domain="vpc")["AllocationId"]
    nat = ec2.create_nat_gateway(SubnetId=public, AllocationId=allocation)["NatGateway"][
        "NatGatewayId"
    ]
    ec2.create_route(RouteTableId=table, DestinationCidrBlock="0.0.0.0/0", NatGatewayId=nat)
    assert check_routes(ec2, network, REGION).status == OK


def test_security_groups_must_let_https_and_the_metastores_out(vpc):
    ec2, network, _, group = vpc
    ec2.revoke_security_group_egress(
        GroupId=group,
        IpPermissions=[{"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}],
    )
    closed = check_security_groups(ec2, network, [9083])
    assert closed.status == FAILED and closed.detail == "no outbound rule for TCP 443, 9083"
    ec2.authorize_security_group_egress(
        GroupId=group,
        IpPermissions=[
            {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443,
             "IpRanges": [{"CidrIp": "0.0.0.0/0"}]},
        ],
    )  # fmt: skip
    assert check_security_groups(ec2, network, [9083]).detail == "no outbound rule for TCP 9083"
    assert check_security_groups(ec2, network, []).status == OK


def test_subnets_outside_the_vpc_are_named(vpc):
    ec2, network, _, _ = vpc
    assert check_subnets(ec2, network).status == OK
    other = ec2.create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]
    elsewhere = ec2.create_subnet(VpcId=other, CidrBlock="10.1.1.0/24")["Subnet"]["SubnetId"]
    wrong = network.model_copy(update={"subnet_ids": [*network.subnet_ids, elsewhere]})
    finding = check_subnets(ec2, wrong)
    assert finding.status == FAILED and elsewhere in finding.detail


def test_the_spark_code_is_read_from_the_definition():
    definition = (
        '{"Parameters": {"EntryPoint": "s3://assets/abc.py", "SparkSubmitParameters": '
        '"--conf spark.archives=s3://assets/def.tgz#environment --conf x=y"}}'
    )
    assert spark_code_of(definition) == ("s3://assets/abc.py", "s3://assets/def.tgz")


def _endpoints_for_every_service(ec2, network, table):
    for service in VPC_SERVICES:
        gateway = service in ("s3", "dynamodb")
        ec2.create_vpc_endpoint(
            VpcId=network.vpc_id,
            ServiceName=f"com.amazonaws.{REGION}.{service}",
            VpcEndpointType="Gateway" if gateway else "Interface",
            **({"RouteTableIds": [table]} if gateway else {"SubnetIds": network.subnet_ids}),
        )


def _settings(tmp_path, network, **config):
    from pathlib import Path
    from types import SimpleNamespace

    import yaml

    from ferry.config import load_config

    path = Path(tmp_path) / "landing-dr.yml"
    path.write_text(yaml.safe_dump(config))
    return SimpleNamespace(
        name="prod", region=REGION, network=network, configs={path: load_config(path)},
        replications=[], account="123456789012",
    )  # fmt: skip


def _document(replica_region: str, bucket: str) -> dict:
    return {
        "source-catalog": {"name": "landing", "glue": {"region": REGION}},
        "replica-catalog": {"name": "west", "glue": {"region": replica_region}},
        "table-replications": [
            {
                "source-table": {"database-name": "landing", "table-name": "orders"},
                "replica-table": {
                    "database-name": "landing_dr",
                    "table-location": f"s3://{bucket}/orders",
                },
            }
        ],
    }


def test_catalogs_and_buckets_of_another_region_need_a_nat_whatever_the_endpoints(vpc, tmp_path):
    """Endpoints serve their own region: a Glue catalog or a bucket in another region is
    reached from the VPC only through a NAT, and each is named with its config and region."""
    from ferry.commands.doctor_checks import Doctor
    from ferry.storage.aws import AwsClients

    ec2, network, table, _ = vpc
    _endpoints_for_every_service(ec2, network, table)
    boto3.client("s3", region_name="us-west-2").create_bucket(
        Bucket="dr-west", CreateBucketConfiguration={"LocationConstraint": "us-west-2"}
    )
    settings = _settings(tmp_path, network, **_document("us-west-2", "dr-west"))
    doctor = Doctor(settings, AwsClients())
    found = {f.check: f for f in doctor.network()}
    assert found["services from the subnets"].status == OK  # this region's are served
    [subnet] = network.subnet_ids
    failed = [f for f in doctor.network() if f.check == "landing-dr.yml from the VPC"]
    assert [f.detail for f in failed] == [
        f"replica-catalog west (Glue) is in us-west-2; VPC endpoints serve {REGION} only and "
        f"{subnet} has no NAT route",
        f"bucket dr-west (a replica table location) is in us-west-2; VPC endpoints serve "
        f"{REGION} only and {subnet} has no NAT route",
    ]
    assert all(f.status == FAILED and len(f.line().splitlines()) == 1 for f in failed)
    assert failed[0].fix == "add a NAT gateway route (0.0.0.0/0) to the subnets' route tables"

    public = ec2.create_subnet(VpcId=network.vpc_id, CidrBlock="10.0.2.0/24")["Subnet"]["SubnetId"]
    allocation = ec2.allocate_address(Domain="vpc")["AllocationId"]
    nat = ec2.create_nat_gateway(SubnetId=public, AllocationId=allocation)["NatGateway"][
        "NatGatewayId"
    ]
    ec2.create_route(RouteTableId=table, DestinationCidrBlock="0.0.0.0/0", NatGatewayId=nat)
    found = {f.check: f for f in doctor.network()}
    assert "landing-dr.yml from the VPC" not in found
    assert found["other regions"].status == OK
    assert found["other regions"].detail == "us-west-2 reached through the NAT route"


def test_a_config_within_the_region_needs_no_nat(vpc, tmp_path):
    from ferry.commands.doctor_checks import Doctor
    from ferry.storage.aws import AwsClients

    ec2, network, table, _ = vpc
    _endpoints_for_every_service(ec2, network, table)
    boto3.client("s3", region_name=REGION).create_bucket(
        Bucket="dr-here", CreateBucketConfiguration={"LocationConstraint": REGION}
    )
    settings = _settings(tmp_path, network, **_document(REGION, "dr-here"))
    findings = Doctor(settings, AwsClients()).network()
    assert [f.check for f in findings] == [
        "subnets",
        "services from the subnets",
        "security groups",
    ]
    assert all(f.status == OK for f in findings)


def test_what_a_config_reaches_in_other_regions_is_named_once_each(tmp_path):
    """Glue catalogs by their region, buckets by S3's answer (a trigger's declared region
    first), topics by their ARN; wildcard read locations cannot be looked up and are left out."""
    from pathlib import Path
    from types import SimpleNamespace

    from ferry.commands.doctor_regions import Elsewhere, reached_elsewhere

    document = _document("us-west-2", "dr-west")
    document["sns-event-listener"] = {"topic": "arn:aws:sns:us-east-1:123456789012:ferry"}
    document["triggers"] = {
        "s3": [{"bucket": "landing-east", "prefix": "warehouse/", "region": "us-east-1"}]
    }
    settings = _settings(tmp_path, None, **document)
    settings.replications = [
        SimpleNamespace(
            config=Path("infra/replications/landing-dr.yml"),
            read_locations=["s3://landing-east/warehouse/", "s3://raw-*/data/", "s3://here/x/"],
        )
    ]
    looked_up = []

    def bucket_region(bucket: str) -> str | None:
        looked_up.append(bucket)
        return {"dr-west": "us-west-2", "here": REGION}.get(bucket)

    assert reached_elsewhere(settings, bucket_region) == [
        Elsewhere("landing-dr.yml", "replica-catalog west (Glue)", "us-west-2"),
        Elsewhere("landing-dr.yml", "bucket dr-west (a replica table location)", "us-west-2"),
        Elsewhere("landing-dr.yml", "bucket landing-east (a trigger bucket)", "us-east-1"),
        Elsewhere(
            "landing-dr.yml", "SNS topic arn:aws:sns:us-east-1:123456789012:ferry", "us-east-1"
        ),
    ]
    assert sorted(looked_up) == ["dr-west", "here"]


def test_a_state_machine_without_the_spark_job_fails_its_check_instead_of_stopping_the_doctor():
    from types import SimpleNamespace

    from ferry.commands.doctor_checks import Doctor
    from ferry.commands.doctor_findings import Deployment
    from ferry.storage.aws import AwsClients

    definition = '{"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}'
    with mock_aws():
        machine = boto3.client("stepfunctions", region_name=REGION).create_state_machine(
            name="ferry-prod", definition=definition,
            roleArn="arn:aws:iam::123456789012:role/ferry-prod-states",
        )["stateMachineArn"]  # fmt: skip
        doctor = Doctor(SimpleNamespace(region=REGION), AwsClients())
        deployment = Deployment(
            {"ReplicationStateMachineArn": machine, "SparkApplicationId": "00spark"}, "stack"
        )
        findings = {finding.check: finding for finding in doctor.spark(deployment)}
    code = findings["spark job's code"]
    assert (code.status, code.detail) == (
        FAILED, "the state machine names no Spark entry point or archive",
    )  # fmt: skip
    assert code.fix == "deploy the stack again"
