"""What every handler shares: Powertools, and the settings parsed once from the environment.

Handlers never read the environment themselves and domain code never does: the settings
model is built here, once per cold start, and handed to ``ferry.pipeline.Pipeline``.
"""

from __future__ import annotations

import os
from functools import cache

from aws_lambda_powertools import Logger, Metrics, Tracer
from pydantic import BaseModel, Field

from ferry.pipeline import Pipeline

SERVICE = "ferry"
NAMESPACE = "Ferry"


class Settings(BaseModel):
    """The Lambda functions' environment (set by the CDK stack, or the local runtime)."""

    work_uri: str = Field(description="s3://bucket/prefix for plans, manifests and reports")
    max_concurrency: int = Field(default=4, ge=1, description="tables replicated at once")

    @classmethod
    def from_environment(cls, environ: dict[str, str] | None = None) -> Settings:
        environ = dict(os.environ if environ is None else environ)
        values = {"work_uri": environ.get("FERRY_WORK_URI")}
        if "FERRY_MAX_CONCURRENCY" in environ:
            values["max_concurrency"] = environ["FERRY_MAX_CONCURRENCY"]
        return cls.model_validate(values)


logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)


@cache
def settings() -> Settings:
    return Settings.from_environment()


@cache
def pipeline() -> Pipeline:
    return Pipeline(settings().work_uri)
