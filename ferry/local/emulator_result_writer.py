"""The AWS emulator's Step Functions writes a Distributed Map's results as AWS writes them.

moto 5.2's ``ResultWriter`` writes an empty manifest, takes the last Map Run of the execution
(a nested Map's, when Maps are nested), and evaluates its ``Parameters`` against the
children's outputs. Here the ``Parameters`` are paths into the Map state's input, as on AWS,
and each child's input, status, output, or error and cause (recorded as it ends,
``ferry.local.emulator_map_children``) are written as AWS writes them:
``<prefix>/<map run id>/manifest.json`` and ``SUCCEEDED_0.json`` / ``FAILED_0.json``, arrays
of the child executions' descriptions.

When the execution is stopped or times out, its Map Run ends ``ABORTED`` (moto's ended
``SUCCEEDED`` or ``FAILED``).
"""

from __future__ import annotations

import json
from typing import Any

from ferry.local.emulator_map_children import child_execution_name

#: Where a Map state's frame keeps its own Map Run, for its ResultWriter.
_MAP_RUN = "__ferry_map_run__"


def install() -> None:
    _map_runs_found_and_aborted()
    _parameters_read_from_the_map_input()
    _results_written()


def _map_runs_found_and_aborted() -> None:
    from moto.stepfunctions.parser.api import MapRunStatus
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.distributed_iteration_component import (  # noqa: E501
        DistributedIterationComponent,
    )
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped, ProgramTimedOut

    run_map = DistributedIterationComponent._eval_body

    def _eval_body(self: Any, env: Any) -> None:
        # Each frame has its own heap: the Map's ResultWriter finds its own map run here (moto
        # takes the last map run of the execution, a nested Map's when Maps are nested).
        record = env.heap[_MAP_RUN] = env.stack[-1].map_run_record
        try:
            run_map(self, env)
        finally:
            if isinstance(env.program_state(), ProgramStopped | ProgramTimedOut):
                # The execution was stopped or timed out: its Map Run is aborted, as on AWS
                # (moto's ended SUCCEEDED, or FAILED).
                record.set_stop(status=MapRunStatus.ABORTED)

    DistributedIterationComponent._eval_body = _eval_body


def _parameters_read_from_the_map_input() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.result_writer.result_writer_decl import (  # noqa: E501
        ResultWriter,
    )

    def write(self: Any, env: Any) -> None:
        # ResultWriter's Parameters are paths into the Map state's input, as on AWS; moto
        # evaluates them against the children's outputs.
        outputs = env.stack.pop()
        env.stack.append(env.states.get_input())
        self.parargs.eval(env=env)
        parameters = env.stack.pop()
        env.stack.pop()
        env.stack.extend([outputs, parameters])
        self.resource_eval.eval_resource(env=env)

    ResultWriter._eval_body = write


def _results_written() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.result_writer.resource_eval import (  # noqa: E501
        resource_eval_s3,
    )

    ResourceEvalS3 = resource_eval_s3.ResourceEvalS3

    @staticmethod  # type: ignore[misc]
    def _handle_put_object(env: Any, resource_runtime_part: Any, state_credentials: Any) -> None:
        parameters = env.stack.pop()
        env.stack.pop()  # the children's outputs: written below, from the record
        s3 = ResourceEvalS3._get_s3_client(
            resource_runtime_part=resource_runtime_part, state_credentials=state_credentials
        )
        record = env.heap.get(_MAP_RUN) or env.map_run_record_pool_manager.get_all().pop()
        machine_arn = env.states.context_object.context_object_data["StateMachine"]["Id"]
        key = _write(s3, parameters, record, machine_arn)
        env.stack.append(
            {
                "MapRunArn": record.map_run_arn,
                "ResultWriterDetails": {"Bucket": parameters["Bucket"], "Key": key},
            }
        )

    ResourceEvalS3._handle_put_object = _handle_put_object


def _write(s3: Any, parameters: dict[str, Any], record: Any, machine_arn: str) -> str:
    """Write the Map Run's result files and its manifest under the ResultWriter's bucket and
    prefix; the manifest's key."""
    map_run_arn = record.map_run_arn
    map_run_id = map_run_arn.split(":")[-1]
    prefix = parameters.get("Prefix", "")
    if prefix and not prefix.endswith("/"):
        prefix += "/"
    children = sorted(record.__dict__.get("ferry_children", []), key=lambda c: c["index"])
    files: dict[str, list[dict[str, Any]]] = {"FAILED": [], "PENDING": [], "SUCCEEDED": []}
    for status in ("SUCCEEDED", "FAILED"):
        entries = [
            _execution(child, machine_arn, map_run_arn)
            for child in children
            if child["status"] == status
        ]
        if not entries:
            continue
        key = f"{prefix}{map_run_id}/{status}_0.json"
        body = json.dumps(entries).encode()
        s3.put_object(Bucket=parameters["Bucket"], Key=key, Body=body)
        files[status].append({"Key": key, "Size": len(body)})
    manifest = {
        "DestinationBucket": parameters["Bucket"],
        "MapRunArn": map_run_arn,
        "ResultFiles": files,
    }
    key = f"{prefix}{map_run_id}/manifest.json"
    s3.put_object(
        Bucket=parameters["Bucket"], Key=key, Body=json.dumps(manifest, indent=2).encode()
    )
    return key


def _execution(child: dict[str, Any], machine_arn: str, map_run_arn: str) -> dict[str, Any]:
    """A child execution as AWS describes it in a ResultWriter file."""
    name = child_execution_name(child["index"])
    entry: dict[str, Any] = {
        "ExecutionArn": child["arn"],
        "Input": json.dumps(child["input"]),
        "InputDetails": {"Included": True},
        "Name": name,
        "StartDate": child["start"],
        "StateMachineArn": machine_arn,
        "Status": child["status"],
        "StopDate": child["stop"],
        "RedriveCount": child.get("redriveCount", 0),
        # A child is redriven with its parent (its Map Run), never alone.
        "RedriveStatus": (
            "NOT_REDRIVABLE" if child["status"] == "SUCCEEDED" else "REDRIVABLE_BY_MAP_RUN"
        ),
    }
    if "redriveDate" in child:
        entry["RedriveDate"] = child["redriveDate"]
    if child["status"] == "SUCCEEDED":
        entry.update(Output=json.dumps(child["output"]), OutputDetails={"Included": True})
    else:
        entry.update(Error=child.get("error"), Cause=child.get("cause"))
    return entry
