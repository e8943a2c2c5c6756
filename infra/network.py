"""The environment's VPC for the functions that talk to Hive metastores: its subnets and
security groups by id, and what Lambda does with a function's role to attach it."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.settings import EnvironmentSettings

#: What Lambda does with a function's role to attach it to its VPC: the network interfaces
#: in its subnets (AWS's managed AWSLambdaVPCAccessExecutionRole, without its log rights:
#: each function writes only its own log group). The CDK adds that managed policy only to
#: roles it creates itself; these roles are Ferry's, so they say it. EC2 authorizes the
#: Describe calls on "*" only.
NETWORK_INTERFACE_ACTIONS = (
    "ec2:CreateNetworkInterface",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSubnets",
    "ec2:DeleteNetworkInterface",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
)


def allow_network_interfaces(role: iam.IRole) -> None:
    role.add_to_principal_policy(
        iam.PolicyStatement(actions=list(NETWORK_INTERFACE_ACTIONS), resources=["*"])
    )


@dataclass(frozen=True)
class Network:
    vpc: ec2.IVpc
    subnets: list[ec2.ISubnet]
    security_groups: list[ec2.ISecurityGroup]

    def options(self) -> dict:
        return {
            "vpc": self.vpc,
            "vpc_subnets": ec2.SubnetSelection(subnets=self.subnets),
            "security_groups": self.security_groups,
        }


def network(scope: Construct, settings: EnvironmentSettings) -> Network | None:
    """The settings' VPC, subnets and groups, by id (no lookup: synth needs no account)."""
    if settings.network is None:
        return None
    network = settings.network
    vpc = ec2.Vpc.from_vpc_attributes(
        scope,
        "Vpc",
        vpc_id=network.vpc_id,
        availability_zones=network.availability_zones,
        private_subnet_ids=network.subnet_ids,
    )
    subnets = [
        ec2.Subnet.from_subnet_attributes(
            scope, f"Subnet{index}", subnet_id=subnet, availability_zone=zone
        )
        for index, (subnet, zone) in enumerate(
            zip(network.subnet_ids, network.availability_zones, strict=True)
        )
    ]
    groups = [
        ec2.SecurityGroup.from_security_group_id(scope, f"Group{index}", group, mutable=False)
        for index, group in enumerate(network.security_group_ids)
    ]
    return Network(vpc, subnets, groups)
