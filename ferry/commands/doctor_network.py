"""``ferry doctor``'s decisions on the VPC, on EC2's descriptions: the subnets, the routes to
AWS's services (an endpoint or a NAT), the security groups' outbound rules."""

from __future__ import annotations

from typing import Any

from ferry.commands.doctor_findings import FAILED, OK, Finding

#: Services the functions call from their subnets (VPC endpoint service names).
VPC_SERVICES = ("s3", "dynamodb", "glue", "sns", "secretsmanager", "sts", "emr-serverless", "logs")
#: What the Hive notification log's poller calls besides: it starts change windows.
POLLER_SERVICES = ("states",)
#: Services S3 and DynamoDB offer Gateway endpoints for (reached through route tables).
GATEWAY_SERVICES = ("s3", "dynamodb")
HTTPS = 443


def check_subnets(ec2: Any, network: Any) -> Finding:
    subnets = ec2.describe_subnets(SubnetIds=network.subnet_ids)["Subnets"]
    elsewhere = [s["SubnetId"] for s in subnets if s["VpcId"] != network.vpc_id]
    if elsewhere:
        return Finding(
            "subnets",
            FAILED,
            f"{', '.join(elsewhere)} not in {network.vpc_id}",
            "name subnets of the settings' VPC",
        )
    return Finding("subnets", OK, f"{len(subnets)} in {network.vpc_id}")


def check_routes(
    ec2: Any, network: Any, region: str, services: tuple[str, ...] = VPC_SERVICES
) -> Finding:
    """Every service the functions call is reachable from every subnet: an endpoint in the
    VPC (a Gateway endpoint on the subnet's route table), or a default route to a NAT."""
    endpoints = ec2.describe_vpc_endpoints(
        Filters=[{"Name": "vpc-id", "Values": [network.vpc_id]}]
    )["VpcEndpoints"]
    by_service = {}
    for endpoint in endpoints:
        if endpoint.get("State", "available").lower() not in ("available", "pending"):
            continue
        service = endpoint["ServiceName"].removeprefix(f"com.amazonaws.{region}.")
        by_service.setdefault(service, []).append(endpoint)
    unreachable: dict[str, list[str]] = {}
    for subnet in network.subnet_ids:
        tables = _route_tables(ec2, network, subnet)
        table_ids = {t["RouteTableId"] for t in tables}
        nat = _has_nat_route(tables)
        for service in services:
            reachable = nat
            for endpoint in by_service.get(service, []):
                if endpoint.get("VpcEndpointType") == "Gateway" or service in GATEWAY_SERVICES:
                    reachable |= bool(table_ids & set(endpoint.get("RouteTableIds", [])))
                else:
                    reachable = True
            if not reachable:
                unreachable.setdefault(service, []).append(subnet)
    if unreachable:
        missing = ", ".join(sorted(unreachable))
        return Finding(
            "services from the subnets",
            FAILED,
            f"no VPC endpoint and no NAT route for {missing}",
            f"add VPC endpoints (com.amazonaws.{region}.<service>; Gateway endpoints for s3 "
            "and dynamodb on the subnets' route tables) or a NAT gateway route",
        )
    return Finding(
        "services from the subnets", OK, f"{', '.join(services)} reachable (endpoint or NAT)"
    )


def subnets_without_nat(ec2: Any, network: Any) -> list[str]:
    """The subnets whose route table has no default route to a NAT gateway."""
    return [
        subnet
        for subnet in network.subnet_ids
        if not _has_nat_route(_route_tables(ec2, network, subnet))
    ]


def _route_tables(ec2: Any, network: Any, subnet: str) -> list[dict[str, Any]]:
    """The route tables of ``subnet``: its own, else the VPC's main one."""
    tables = ec2.describe_route_tables(
        Filters=[{"Name": "association.subnet-id", "Values": [subnet]}]
    )["RouteTables"]
    if tables:
        return tables
    return ec2.describe_route_tables(
        Filters=[
            {"Name": "vpc-id", "Values": [network.vpc_id]},
            {"Name": "association.main", "Values": ["true"]},
        ]
    )["RouteTables"]


def _has_nat_route(tables: list[dict[str, Any]]) -> bool:
    return any(
        route.get("DestinationCidrBlock") == "0.0.0.0/0" and route.get("NatGatewayId")
        for table in tables
        for route in table.get("Routes", [])
    )


def check_security_groups(ec2: Any, network: Any, ports: list[int]) -> Finding:
    groups = ec2.describe_security_groups(GroupIds=network.security_group_ids)["SecurityGroups"]
    needed = [HTTPS, *ports]
    closed = [
        port
        for port in needed
        if not any(_egress_allows(rule, port) for g in groups for rule in g["IpPermissionsEgress"])
    ]
    if closed:
        return Finding(
            "security groups",
            FAILED,
            f"no outbound rule for TCP {', '.join(map(str, closed))}",
            "allow outbound TCP 443 (AWS's services) and each metastore's port",
        )
    return Finding("security groups", OK, f"outbound TCP {', '.join(map(str, needed))} allowed")


def _egress_allows(rule: dict[str, Any], port: int) -> bool:
    if rule.get("IpProtocol") == "-1":
        return True
    if rule.get("IpProtocol") not in ("tcp", "6"):
        return False
    return rule.get("FromPort", 0) <= port <= rule.get("ToPort", 65535)
